"""The run's checkpoint, kept in the cluster beside the fingerprint index: a killed run resumes.

Each window of documents is committed in three steps, and the checkpoint says which was reached:
1. `writing`: the window's documents (their `_id`s, in order) and an undo record of its
   fingerprint writes (the entries they replace, the ids they add) are saved first, in one
   document, so whole or not at all;
2. the fingerprint writes and the marks are sent;
3. `running` at the window's last position.
A run that finds `writing` undoes the fingerprint writes (the index is as before the window),
checks the window's documents again, in their order, and continues after the window; one that
finds `running` continues after its position. A window killed before step 1 left nothing
behind (the fingerprint index holds its writes back until then). So no document is skipped,
the fingerprint index never holds half a window, and no document is half-marked (its four
fields are one partial update; marks written twice are the same marks).

A slice that stages fingerprints (staged.py) keeps `running` and its position only: what it
writes is the same when written twice. Each checkpoint names its run (`key`) and slice, which
is how the run that judges finds whether every slice has ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import Any

from elasticsearch import ApiError, BadRequestError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.elastic.connection import Connection, describe, error_type
from neardup_pipeline.index.elastic.documents import es_id

RUNNING, WRITING, FINISHED = "running", "writing", "finished"
# Only `state` and `updated` are searchable; the record itself is kept, never indexed.
MAPPING: dict[str, Any] = {
    "dynamic": False,
    "properties": {"state": {"type": "keyword"}, "updated": {"type": "date"}},
}


@dataclass
class Checkpoint:
    """Where a run stands: its state, the last position committed, the counts so far, and (in
    `writing`) the window being sent."""

    state: str = RUNNING
    position: list[int] | None = None  # committed up to here (`writing`: before the window)
    counts: dict[str, int] = field(default_factory=dict)
    window: list[str] = field(default_factory=list)  # `writing`: the window's `_id`s, in order
    window_end: list[int] | None = None  # `writing`: the window's last position
    undo: list[dict[str, Any]] = field(default_factory=list)  # bulk actions restoring before
    slice_: tuple[int, int] | None = None  # a slice staging fingerprints: (I, N)

    def as_source(self) -> dict[str, Any]:
        return {"state": self.state, "position": self.position, "counts": self.counts,
                "window": self.window, "window_end": self.window_end, "undo": self.undo,
                "slice": list(self.slice_) if self.slice_ else None,
                "updated": datetime.now(timezone.utc).isoformat()}

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> Checkpoint:
        def position(value: object) -> list[int] | None:
            return [int(v) for v in value] if isinstance(value, list) else None

        part = position(source.get("slice"))
        return cls(
            str(source.get("state") or RUNNING),
            position(source.get("position")),
            {str(k): int(v) for k, v in (source.get("counts") or {}).items()},
            [str(i) for i in source.get("window") or []],
            position(source.get("window_end")),
            list(source.get("undo") or []),
            (part[0], part[1]) if part and len(part) == 2 else None,
        )


class CheckpointStore:
    """One checkpoint document per (content index, target, slice) in the checkpoint index."""

    def __init__(self, connection: Connection, index: str, key: str) -> None:
        self.connection, self.index, self.name, self.key = connection, index, key, es_id(key)

    def prepare(self) -> None:
        client = self.connection.client
        try:
            self.connection.call(lambda: client.indices.create(index=self.index, mappings=MAPPING))
        except BadRequestError as exc:
            if error_type(exc) != "resource_already_exists_exception":
                raise IndexFailure(f"cannot create checkpoint index {self.index!r}: "
                                   f"{describe(exc)}") from exc
        except ApiError as exc:
            raise IndexFailure(f"cannot create checkpoint index {self.index!r}: "
                               f"{describe(exc)}") from exc

    def load(self) -> Checkpoint | None:
        """The checkpoint of the last run (realtime get: no refresh needed), or None."""
        client = self.connection.client
        try:
            response = self.connection.call(partial(
                client.options(ignore_status=404).get, index=self.index, id=self.key))
        except ApiError as exc:
            raise IndexFailure(f"reading the checkpoint failed: {describe(exc)}") from exc
        if not response.body.get("found"):
            return None
        return Checkpoint.from_source(response.body["_source"])

    def save(self, checkpoint: Checkpoint) -> None:
        """Durable when this returns (the server's translog), whatever happens to this process."""
        client = self.connection.client
        source = {**checkpoint.as_source(), "key": self.name}
        try:
            self.connection.call(partial(client.index, index=self.index, id=self.key,
                                         document=source))
        except ApiError as exc:
            raise IndexFailure(f"saving the checkpoint failed: {describe(exc)}") from exc


    def runs(self) -> dict[str, Checkpoint]:
        """Every run's checkpoint in this index (a few: one per content index, target and
        slice), by its key (refreshed first: a slice that just ended is seen)."""
        client = self.connection.client
        try:
            self.connection.call(lambda: client.options(ignore_status=404).indices.refresh(
                index=self.index))
            response = self.connection.call(partial(
                client.options(ignore_status=404).search, index=self.index, size=10_000,
                query={"match_all": {}}, source_includes=["key", "state", "slice"]))
        except ApiError as exc:
            raise IndexFailure(f"reading the checkpoints failed: {describe(exc)}") from exc
        hits = (response.body.get("hits") or {}).get("hits") or []
        return {str(h["_source"]["key"]): Checkpoint.from_source(h["_source"])
                for h in hits if h["_source"].get("key")}

    def delete(self, keys: Sequence[str]) -> None:
        """Remove the checkpoints of these runs (slices whose work the judging run took up)."""
        client = self.connection.client
        for key in keys:
            try:
                self.connection.call(partial(client.options(ignore_status=404).delete,
                                             index=self.index, id=es_id(key)))
            except ApiError as exc:
                raise IndexFailure(f"removing checkpoint {key!r} failed: {describe(exc)}") \
                    from exc


def undo_record(
    connection: Connection, writes: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Bulk actions that put back what `writes` (whole-document bulk actions) will replace:
    the stored document where there is one (a moved cluster's member, an edited page), a
    delete where there is none (a new page: most of a window)."""
    by_index: dict[str, list[str]] = {}
    for action in writes:
        by_index.setdefault(str(action["_index"]), []).append(str(action["_id"]))
    client = connection.client
    undo: list[dict[str, Any]] = []
    for index, ids in by_index.items():
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            try:
                response = connection.call(partial(
                    client.options(ignore_status=404).mget, index=index, ids=chunk))
            except ApiError as exc:
                raise IndexFailure(f"reading {index!r} for the checkpoint failed: "
                                   f"{describe(exc)}") from exc
            stored = {d["_id"]: d["_source"] for d in response.body.get("docs", [])
                      if d.get("found")}
            for doc_id in chunk:
                if doc_id in stored:
                    undo.append({"_index": index, "_id": doc_id, "_source": stored[doc_id]})
                else:
                    undo.append({"_op_type": "delete", "_index": index, "_id": doc_id})
    return undo


def apply_undo(connection: Connection, undo: Sequence[Mapping[str, Any]]) -> None:
    """Put the fingerprint index back as it was before a window a killed run was sending (a
    delete of what is not there is no error), then refresh it."""
    from elasticsearch import helpers

    if not undo:
        return
    client = connection.client
    try:
        _, errors = connection.call(partial(
            helpers.bulk, client, [dict(a) for a in undo], chunk_size=500,
            raise_on_error=False, stats_only=False))
        indices = sorted({str(a["_index"]) for a in undo})
        connection.call(lambda: client.options(ignore_status=404).indices.refresh(
            index=",".join(indices)))
    except ApiError as exc:
        raise IndexFailure(f"undoing the interrupted window failed: {describe(exc)}") from exc
    assert isinstance(errors, list)
    refused = [op for item in errors for op in item.values() if op.get("status") != 404]
    if refused:
        raise IndexFailure(f"undoing the interrupted window: {len(refused)} writes refused "
                           f"({refused[0].get('error')})")
