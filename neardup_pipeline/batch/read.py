"""The job's inputs -> one table of documents (documents.FIELDS): JSONL (the `dedup` input),
Parquet (the same fields as columns), WARC files, or an Elasticsearch index read in slices by
the executors. A record that cannot be read is a row with its `problem`, never dropped."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from neardup_pipeline.batch.documents import FIELDS, SCHEMA, position, problem_row, row_of
from neardup_pipeline.errors import ConfigError, InputError
from neardup_pipeline.feed import document_of_record, parse_document

KINDS = ("jsonl", "parquet", "warc", "es")
NAMES = tuple(name for name, _ in FIELDS)


def kind_of(source: str) -> str:
    """An input's kind by its name: a URL is an Elasticsearch index, `.parquet` (or a folder of
    them) Parquet, `.warc[.gz]` WARC, anything else JSONL."""
    lowered = source.lower().rstrip("/")
    if lowered.startswith(("http://", "https://")):
        return "es"
    if lowered.endswith((".warc", ".warc.gz")):
        return "warc"
    path = Path(source)
    if lowered.endswith(".parquet") or (path.is_dir() and any(path.glob("*.parquet"))):
        return "parquet"
    return "jsonl"


def _jsonl_rows(source: int, name: str) -> Callable[[Iterable[tuple[str, int]]],
                                                     Iterator[tuple[Any, ...]]]:
    def rows(lines: Iterable[tuple[str, int]]) -> Iterator[tuple[Any, ...]]:
        for line, number in lines:
            if not line.strip():
                continue
            where = f"{name}:{number + 1}"
            try:
                row = row_of(parse_document(line), where, position(source, number + 1))
            except InputError as exc:
                row = problem_row(where, position(source, number + 1), str(exc))
            yield tuple(row[field] for field in NAMES)
    return rows


def _record_rows(source: int, name: str) -> Callable[[Iterable[tuple[Any, int]]],
                                                      Iterator[tuple[Any, ...]]]:
    def rows(records: Iterable[tuple[Any, int]]) -> Iterator[tuple[Any, ...]]:
        for record, number in records:
            where = f"{name}: row {number + 1}"
            try:
                row = row_of(document_of_record(record.asDict()), where,
                             position(source, number + 1))
            except InputError as exc:
                row = problem_row(where, position(source, number + 1), str(exc))
            yield tuple(row[field] for field in NAMES)
    return rows


def _warc_rows(items: Iterable[tuple[int, str]]) -> Iterator[tuple[Any, ...]]:
    from neardup_pipeline.batch.warc import warc_rows

    for source, path in items:
        for row in warc_rows(source, path):
            yield tuple(row[field] for field in NAMES)


def read_inputs(spark: Any, sources: Sequence[str], slices: int,
                es_reader: Callable[[Any, int, str, int], Any] | None = None) -> Any:
    """One DataFrame of every input's documents (documents.SCHEMA)."""
    context = spark.sparkContext
    parts: list[Any] = []
    warcs: list[tuple[int, str]] = []
    for number, source in enumerate(sources):
        kind = kind_of(source)
        local = "://" not in source  # else a Hadoop file system's URI (hdfs://, s3a://)
        if kind != "es" and local and not Path(source).exists():
            raise ConfigError(f"input {source!r} does not exist")
        where = str(Path(source).resolve()) if local else source
        if kind == "jsonl":
            lines = context.textFile(where).zipWithIndex()
            parts.append(lines.mapPartitions(_jsonl_rows(number, source)))
        elif kind == "parquet":
            table = spark.read.parquet(where)
            columns = set(table.columns)
            if not {"id", "url"} & columns or not {"html", "text"} & columns:
                raise ConfigError(
                    f"{source}: a Parquet input needs an `id` (or `url`) column and an `html` "
                    f"or `text` column (string); it has {sorted(columns)}")
            wanted = [c for c in ("id", "url", "html", "text") if c in columns]
            table = table.select(*[table[c].cast("string") for c in wanted])
            parts.append(table.rdd.zipWithIndex().mapPartitions(_record_rows(number, source)))
        elif kind == "warc":
            if not local:
                raise ConfigError(f"{source}: WARC files are read from a path every executor "
                                  "mounts, not a URI")
            warcs.append((number, where))
        else:
            if es_reader is None:
                raise ConfigError(f"{source}: Elasticsearch inputs need the es reader")
            parts.append(es_reader(spark, number, source, slices))
    if warcs:
        parts.append(context.parallelize(warcs, len(warcs)).mapPartitions(_warc_rows))
    rdd = parts[0] if len(parts) == 1 else context.union(parts)
    return spark.createDataFrame(rdd, SCHEMA)
