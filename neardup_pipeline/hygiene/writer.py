"""Where marks go: partial bulk updates of the content documents themselves, or a side index
keyed by document id when the content index may not be written (`--into`).

Both writes are idempotent (the same marks set the same values), which is what lets a killed
run write a window again (checkpoint.py). A document deleted since it was read is counted, not
an error; any other refusal stops the run (it resumes where it stopped)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, Protocol

from elasticsearch import ApiError, BadRequestError, helpers

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.hygiene.judge import REPEATED_ID
from neardup_pipeline.hygiene.marks import MARK_MAPPING, Mark
from neardup_pipeline.index.elastic.blocks import WritesRefused, block_fix
from neardup_pipeline.index.elastic.connection import Connection, describe, error_type
from neardup_pipeline.index.elastic.documents import es_id

GONE = "document_missing_exception"


class MarkWriter(Protocol):
    """Writes marks; returns how many documents were gone (deleted since read)."""

    target: str

    def prepare(self) -> None:
        """Put the fields' types in the target's mapping (before the first write)."""
        ...

    def write(self, marks: Sequence[Mark]) -> int: ...

    def refresh(self) -> None: ...


class _BulkWriter:
    def __init__(self, connection: Connection, target: str) -> None:
        self.connection, self.target = connection, target

    def _actions(self, marks: Sequence[Mark]) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def write(self, marks: Sequence[Mark]) -> int:
        actions = list(self._actions(marks))
        if not actions:
            return 0
        client = self.connection.client
        try:
            _, errors = self.connection.call(partial(
                helpers.bulk, client, actions, chunk_size=len(actions), raise_on_error=False,
                max_retries=3, initial_backoff=1, stats_only=False))
        except ApiError as exc:
            raise IndexFailure(f"writing marks to {self.target!r} failed: {describe(exc)}") \
                from exc
        assert isinstance(errors, list)
        failed = [op for item in errors for op in item.values()]
        gone = [op for op in failed if (op.get("error") or {}).get("type") == GONE]
        others = [op for op in failed if op not in gone]
        if others:
            first = others[0]
            error = first.get("error")
            reason = str(error.get("reason", error)) if isinstance(error, dict) else str(error)
            fix = block_fix(reason, self.target)
            refused = WritesRefused if fix is not None else IndexFailure
            raise refused(
                f"Elasticsearch refused {len(others)} of {len(actions)} marks in "
                f"{self.target!r}: {first.get('_id')}: {reason}" + (f": {fix}" if fix else ""))
        return len(gone)

    def refresh(self) -> None:
        client = self.connection.client
        try:
            self.connection.call(lambda: client.indices.refresh(index=self.target))
        except ApiError as exc:
            raise IndexFailure(f"refreshing {self.target!r} failed: {describe(exc)}") from exc

    def _put_mapping(self, properties: dict[str, Any]) -> None:
        client = self.connection.client
        try:
            self.connection.call(
                lambda: client.indices.put_mapping(index=self.target, properties=properties))
        except BadRequestError as exc:
            raise IndexFailure(
                f"index {self.target!r} cannot take the neardup fields ({describe(exc)}): an "
                "existing field of that name has another type; use --into SIDE_INDEX") from exc
        except ApiError as exc:
            raise IndexFailure(f"cannot map the neardup fields in {self.target!r}: "
                               f"{describe(exc)}") from exc


class InPlaceWriter(_BulkWriter):
    """Partial updates of the content documents: the four fields, nothing else touched."""

    def prepare(self) -> None:
        self._put_mapping(MARK_MAPPING)

    def _actions(self, marks: Sequence[Mark]) -> Iterator[dict[str, Any]]:
        for mark in marks:
            yield {"_op_type": "update", "_index": self.target, "_id": mark.es_id,
                   "doc": mark.fields()}


class SideIndexWriter(_BulkWriter):
    """One document per content document in a side index, `_id` its doc id: `doc_id`, the
    content document's `content_id` and the four fields. A repeated doc id has no place of its
    own there: it is counted in the summary only."""

    def prepare(self) -> None:
        client = self.connection.client
        properties = {"doc_id": {"type": "keyword"}, "content_id": {"type": "keyword"},
                      **MARK_MAPPING}
        try:
            self.connection.call(lambda: client.indices.create(
                index=self.target, mappings={"properties": properties}))
        except BadRequestError as exc:
            if error_type(exc) != "resource_already_exists_exception":
                raise IndexFailure(f"cannot create side index {self.target!r}: "
                                   f"{describe(exc)}") from exc
            self._put_mapping(properties)
        except ApiError as exc:
            raise IndexFailure(f"cannot create side index {self.target!r}: {describe(exc)}") \
                from exc

    def _actions(self, marks: Sequence[Mark]) -> Iterator[dict[str, Any]]:
        for mark in marks:
            if mark.status != REPEATED_ID:
                yield {"_index": self.target, "_id": es_id(mark.doc_id),
                       "_source": {"doc_id": mark.doc_id, "content_id": mark.es_id,
                                   **mark.fields()}}
