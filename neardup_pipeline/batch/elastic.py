"""Elasticsearch at both ends of a job, through hygiene's own parts: an index read in slices of
one point in time, each slice by an executor (hygiene/reader.py, hygiene/fields.py), and the
marks written as partial updates of the four fields at once (hygiene/marks.py,
hygiene/writer.py), so no document is ever half-marked and a write done twice sets the same
values."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from neardup_pipeline.batch.documents import FIELDS, position, problem_row, row_of
from neardup_pipeline.batch.fingerprint import REPEATED, UNREADABLE
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.hygiene.connect import connect
from neardup_pipeline.hygiene.fields import BAD_FIELD, FieldSpec, item_of
from neardup_pipeline.hygiene.judge import REPEATED_ID
from neardup_pipeline.hygiene.marks import CHECKED, Mark, tagged
from neardup_pipeline.hygiene.reader import PointInTime, read_pages
from neardup_pipeline.hygiene.writer import InPlaceWriter

NAMES = tuple(name for name, _ in FIELDS)
SHARD_DOC_BITS = (1 << 40) - 1


def split_index_url(source: str) -> tuple[str, str]:
    """`http(s)://host:port/INDEX` -> (server URL, index name)."""
    parts = urlsplit(source)
    index = parts.path.strip("/")
    if not index or "/" in index:
        raise ConfigError(f"{source}: name the index as the URL's path, "
                          "http(s)://host:9200/INDEX")
    return f"{parts.scheme}://{parts.netloc}", index


def slice_rows(config: NearDupConfig, server: str, pit_id: str, spec: FieldSpec, slices: int,
               source: int, name: str) -> Any:
    """The mapPartitions function reading slice i of `slices` for each i it is given."""
    def rows(numbers: Iterable[int]) -> Iterator[tuple[Any, ...]]:
        connection = connect(server, config)
        try:
            for number in numbers:
                for hits in read_pages(connection, pit_id, spec, slice_=(number, slices)):
                    for hit in hits:
                        item = item_of(hit, spec)
                        pos = position(source, int(hit["sort"][-1]) & SHARD_DOC_BITS)
                        where = f"{name} _id {item.es_id}"
                        row = (row_of(item.doc, where, pos, item.es_id) if item.doc is not None
                               else problem_row(where, pos, str(item.problem), item.doc_id,
                                                item.es_id))
                        yield tuple(row[field] for field in NAMES)
        finally:
            connection.client.close()
    return rows


class IndexReader:
    """Reads Elasticsearch inputs for read.read_inputs; keeps each point in time open until
    `close` (the job's end)."""

    def __init__(self, config: NearDupConfig, spec: FieldSpec) -> None:
        self.config, self.spec = config, spec
        self._open: list[tuple[Any, PointInTime]] = []

    def __call__(self, spark: Any, source: int, url: str, slices: int) -> Any:
        server, index = split_index_url(url)
        connection = connect(server, self.config)
        pit = PointInTime(connection, index).__enter__()
        self._open.append((connection, pit))
        read = slice_rows(self.config, server, pit.id, self.spec, slices, source, url)
        return spark.sparkContext.parallelize(range(slices), slices).mapPartitions(read)

    def close(self) -> None:
        for connection, pit in self._open:
            pit.__exit__(None, None, None)
            connection.client.close()
        self._open.clear()


def mark_of(record: Any) -> Mark:
    """The marks of one output record, as hygiene writes them."""
    doc_id, es_id, status = record["id"], record["es_id"] or record["id"], record["status"]
    if status is None:
        canonical = record["cluster"] == doc_id
        return Mark(doc_id, es_id, record["cluster"], canonical,
                    None if canonical else record["cluster"], CHECKED)
    named = {REPEATED: REPEATED_ID, UNREADABLE: BAD_FIELD}
    return tagged(doc_id, es_id, named.get(status, status))


def write_marks(config: NearDupConfig, url: str, records: Any, batch: int = 500) -> None:
    """Every record's marks on the index at `url`, partial updates in bulk from the executors."""
    server, index = split_index_url(url)
    connection = connect(server, config)
    try:
        InPlaceWriter(connection, index).prepare()
    finally:
        connection.client.close()

    def write(rows: Iterable[Any]) -> None:
        here = connect(server, config)
        writer = InPlaceWriter(here, index)
        try:
            marks: list[Mark] = []
            for row in rows:
                marks.append(mark_of(row))
                if len(marks) >= batch:
                    writer.write(marks)
                    marks = []
            if marks:
                writer.write(marks)
        finally:
            here.client.close()

    records.foreachPartition(write)
    connection = connect(server, config)
    try:
        InPlaceWriter(connection, index).refresh()
    finally:
        connection.client.close()
