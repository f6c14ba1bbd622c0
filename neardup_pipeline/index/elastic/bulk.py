"""Buffered writes: bulk actions queued by (index, _id), sent with the bulk helper, refreshed.

Policy: one `indices.refresh` per bulk batch (every `es_bulk_size` writes and at flush/close),
never one per item, which would cost a segment per page. Per-document refusals are surfaced as
IndexFailure after the rest is stored, never swallowed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from elasticsearch import ApiError, helpers

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.elastic.connection import Connection, describe

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (index, _id)


class BulkQueue:
    """Pending bulk actions by (index, _id): a newer write of the same document replaces the
    pending one and goes to the end of the queue."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._actions: dict[Key, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._actions)

    def full(self) -> bool:
        return len(self._actions) >= self.size

    def put(self, index: str, doc_id: str, source: dict[str, Any]) -> None:
        """Queue a whole document (`index` action)."""
        self._actions.pop((index, doc_id), None)
        self._actions[(index, doc_id)] = {"_index": index, "_id": doc_id, "_source": source}

    def update(self, key: Key, changes: dict[str, Any]) -> None:
        """Queue a partial update; a pending write of the same document takes the fields
        instead, so neither write loses the other's."""
        pending = self._actions.pop(key, None)
        if pending is None:
            action = {"_op_type": "update", "_index": key[0], "_id": key[1], "doc": changes}
        elif "_source" in pending:
            action = {**pending, "_source": {**pending["_source"], **changes}}
        else:
            action = {**pending, "doc": {**pending["doc"], **changes}}
        self._actions[key] = action

    def get(self, key: Key) -> dict[str, Any] | None:
        return self._actions.get(key)

    def sources(self, index: str) -> list[dict[str, Any]]:
        """Copies of the whole documents queued for `index`."""
        return [
            dict(a["_source"]) for (name, _), a in self._actions.items()
            if name == index and "_source" in a
        ]

    def actions(self) -> list[dict[str, Any]]:
        return list(self._actions.values())

    def take(self) -> list[dict[str, Any]]:
        """Hand over every pending action and forget them."""
        actions = list(self._actions.values())
        self._actions.clear()
        return actions

    def requeue(self, actions: Iterable[Mapping[str, Any]]) -> None:
        """Queue actions taken earlier, each as the newest write of its document."""
        for action in actions:
            key = (str(action["_index"]), str(action["_id"]))
            self._actions.pop(key, None)
            self._actions[key] = dict(action)

    def clear(self) -> None:
        self._actions.clear()


def send(
    connection: Connection, queue: BulkQueue
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Send the queue and refresh the indices written: (actions sent, per-document errors).

    The queue is emptied once the bulk request went through; on a transport failure or a
    rejected request it stays for the next flush."""
    actions = queue.actions()
    if not actions:
        return [], []
    try:
        _, errors = connection.call(lambda: _bulk(connection, actions))
    except ApiError as exc:
        connection.counters["bulk_refused"] += len(actions)
        log.error("neardup: bulk write of %d documents rejected: %s", len(actions), describe(exc))
        raise IndexFailure(f"bulk write rejected: {describe(exc)}") from exc
    # Sent (or refused for good): the queue is done either way.
    queue.clear()
    failed = {(e["_index"], e["_id"]) for e in errors}
    refresh = sorted({a["_index"] for a in actions if (a["_index"], a["_id"]) not in failed})
    if refresh:
        try:
            connection.call(lambda: connection.client.indices.refresh(index=",".join(refresh)))
        except ApiError as exc:
            raise IndexFailure(f"refresh after bulk failed: {describe(exc)}") from exc
    return actions, errors


def raise_refused(connection: Connection, errors: list[dict[str, Any]], total: int) -> None:
    """Count, log and raise the documents Elasticsearch refused (nothing when none)."""
    if not errors:
        return
    connection.counters["bulk_refused"] += len(errors)
    summary = _summary(errors, total)
    log.error("neardup: %s", summary)
    raise IndexFailure(summary)


def _bulk(
    connection: Connection, actions: list[dict[str, Any]]
) -> tuple[int, list[dict[str, Any]]]:
    """One bulk helper run; per-document errors returned, 429s retried by the helper."""
    success, raw_errors = helpers.bulk(
        connection.client,
        actions,
        chunk_size=max(len(actions), 1),
        raise_on_error=False,
        raise_on_exception=True,
        max_retries=3,
        initial_backoff=1,
        stats_only=False,
    )
    errors: list[dict[str, Any]] = []
    assert isinstance(raw_errors, list)
    for item in raw_errors:
        for op in item.values():  # {"index": {"_index", "_id", "status", "error"}}
            errors.append(op)
    return success, errors


def _summary(errors: list[dict[str, Any]], total: int) -> str:
    """`N of M documents refused: reasons` with the first few documents named."""
    shown = []
    for op in errors[:3]:
        error = op.get("error")
        if isinstance(error, dict):
            reason = f"{error.get('type')}: {error.get('reason')}"
        else:
            reason = str(error)
        shown.append(f"{op.get('_index')}/{op.get('_id')} (status {op.get('status')}): {reason}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"Elasticsearch refused {len(errors)} of {total} documents: " + "; ".join(shown) + more
