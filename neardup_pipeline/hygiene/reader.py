"""Every document of the content index, in one fixed order: a point in time read page by page
with search_after, optionally one slice of it.

The order is each shard's write order (`_seq_no`), ties between shards broken by `_shard_doc`:
on a one-shard index, the order the documents were indexed, so the first copy indexed is a
cluster's original, as in a crawl. The order survives a new point in time (a resumed run opens
one): a document keeps its `_seq_no` until it is written again, and a document written again
(edited, or marked in place) comes after the point reached, where the run skips it when it was
already checked with this content (known.py). Slices split on `_seq_no` too, so a document is
in the same slice of every point in time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from elasticsearch import ApiError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.hygiene.fields import FieldSpec
from neardup_pipeline.index.elastic.connection import Connection, describe

ORDER: list[dict[str, Any]] = [{"_seq_no": "asc"}, {"_shard_doc": "asc"}]
KEEP_ALIVE = "10m"  # between two pages of one reader; a killed run's point in time expires


class PointInTime:
    """A point in time on the content index, closed when the block ends."""

    def __init__(self, connection: Connection, index: str) -> None:
        self.connection, self.index = connection, index
        self.id = ""

    def __enter__(self) -> PointInTime:
        client = self.connection.client
        try:
            response = self.connection.call(
                lambda: client.open_point_in_time(index=self.index, keep_alive=KEEP_ALIVE))
        except ApiError as exc:
            raise IndexFailure(f"cannot read index {self.index!r}: {describe(exc)}") from exc
        self.id = str(response.body["id"])
        return self

    def __exit__(self, *exc: object) -> None:
        client = self.connection.client
        # an expired point in time, a server gone: it expires on its own
        with contextlib.suppress(Exception):
            client.options(ignore_status=404).close_point_in_time(id=self.id)


def read_pages(
    connection: Connection,
    pit_id: str,
    spec: FieldSpec,
    *,
    page: int = 500,
    after: Sequence[int] | None = None,
    slice_: tuple[int, int] | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """Hits (`_id`, `_source` of the spec's fields, `sort`) page by page, in ORDER, after
    `after`; `slice_` = (i, n): only slice i of n."""
    client = connection.client
    search_after = list(after) if after else None
    while True:
        body: dict[str, Any] = {
            "pit": {"id": pit_id, "keep_alive": KEEP_ALIVE},
            "sort": ORDER,
            "size": page,
            "track_total_hits": False,
            "source_includes": spec.source_fields(),
        }
        if search_after is not None:
            body["search_after"] = search_after
        if slice_ is not None and slice_[1] > 1:
            body["slice"] = {"field": "_seq_no", "id": slice_[0], "max": slice_[1]}
        try:
            response = connection.call(partial(client.search, **body))
        except ApiError as exc:
            raise IndexFailure(f"reading the content index failed: {describe(exc)}") from exc
        hits = response.body["hits"]["hits"]
        if not hits:
            return
        pit_id = str(response.body.get("pit_id") or pit_id)
        yield hits
        search_after = hits[-1]["sort"]


def count_documents(connection: Connection, index: str) -> int:
    """How many documents the content index holds (the progress bar's total)."""
    client = connection.client
    try:
        return int(connection.call(lambda: client.count(index=index)).body["count"])
    except ApiError as exc:
        raise IndexFailure(f"cannot read index {index!r}: {describe(exc)}") from exc
