"""Buffered writes: bulk actions queued by (index, _id), sent with the bulk helper, refreshed.

Policy: one `indices.refresh` per bulk batch (every `es_bulk_size` writes and at flush/close),
never one per item, which would cost a segment per page. Per-document refusals are surfaced as
IndexFailure after the rest is stored, never swallowed. Writes Elasticsearch holds back rather
than refuses (429: overloaded, or the flood-stage read-only block; 403 from a write block) stay
queued and raise WritesRefused, an outage: the crawl spools them and replays them later.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from elasticsearch import ApiError, helpers

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.elastic.blocks import WritesRefused, block_fix
from neardup_pipeline.index.elastic.connection import (
    BACKOFF_SECONDS,
    MAX_BACKOFF_SECONDS,
    Connection,
    describe,
)

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (index, _id)

class BulkQueue:
    """Pending bulk actions by (index, _id): a newer write of the same document replaces the
    pending one and goes to the end of the queue."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._actions: dict[Key, dict[str, Any]] = {}
        # The last bulk was held back: the next one tries once, without the backoff, so a
        # crawl degraded by a block never waits the whole retry budget at each probe.
        self.held_back = False

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

    def keep(self, keys: set[Key]) -> None:
        """Forget every action but those of `keys` (held back by the server)."""
        for key in [k for k in self._actions if k not in keys]:
            del self._actions[key]


def send(
    connection: Connection, queue: BulkQueue
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Send the queue and refresh the indices written: (actions sent, per-document errors,
    documents held back). Documents answered 429 are sent again with backoff within
    `retry_seconds`; held back for good (a block, or 429 past the wait), they stay queued.

    The rest of the queue is done once the bulk request went through; on a transport failure
    or a rejected request all of it stays for the next flush."""
    actions = queue.actions()
    if not actions:
        return [], [], []
    deadline = time.monotonic() + (0.0 if queue.held_back else connection.retry_seconds)
    delay = BACKOFF_SECONDS
    batch, errors = actions, []
    while True:
        try:
            _, answered = connection.call(functools.partial(_bulk, connection, batch))
        except ApiError as exc:
            connection.counters["bulk_refused"] += len(actions)
            log.error("neardup: bulk write of %d documents rejected: %s", len(actions),
                      describe(exc))
            raise IndexFailure(f"bulk write rejected: {describe(exc)}") from exc
        held = [e for e in answered if _held_back(e)]
        errors += [e for e in answered if not _held_back(e)]
        remaining = deadline - time.monotonic()
        if not held or remaining <= 0 or any(e.get("status") != 429 for e in held):
            break  # a write block (403) does not lift by waiting
        connection.counters["retries"] += 1
        log.info("neardup: Elasticsearch held back %d of %d documents (%s), retry in %.2fs",
                 len(held), len(batch), _reason(held[0]), min(delay, remaining))
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, MAX_BACKOFF_SECONDS)
        keys = {(e["_index"], e["_id"]) for e in held}
        batch = [a for a in batch if (a["_index"], a["_id"]) in keys]
    held_keys = {(str(e["_index"]), str(e["_id"])) for e in held}
    queue.keep(held_keys)  # sent, or refused for good: done; held back: kept for later
    queue.held_back = bool(held)
    failed = {(e["_index"], e["_id"]) for e in errors} | held_keys
    refresh = sorted({a["_index"] for a in actions if (a["_index"], a["_id"]) not in failed})
    if refresh:
        try:
            connection.call(lambda: connection.client.indices.refresh(index=",".join(refresh)))
        except ApiError as exc:
            raise IndexFailure(f"refresh after bulk failed: {describe(exc)}") from exc
    return actions, errors, held


def raise_refused(
    connection: Connection, errors: list[dict[str, Any]], total: int,
    held: list[dict[str, Any]] | None = None,
) -> None:
    """Count, log and raise the documents Elasticsearch refused (nothing when none); then
    WritesRefused for those it held back, naming the block and how to lift it."""
    if errors:
        connection.counters["bulk_refused"] += len(errors)
        summary = _summary(errors, total)
        log.error("neardup: %s", summary)
        if not held:
            raise IndexFailure(summary)
    if held:
        connection.counters["bulk_held"] += len(held)
        raise WritesRefused(_held_summary(connection, held, total))


def _held_back(op: Mapping[str, Any]) -> bool:
    """Whether Elasticsearch held the document back (it may take it later) rather than refused
    it: 429 (overloaded, or the flood-stage read-only block), or an index block (403)."""
    error = op.get("error")
    kind = error.get("type") if isinstance(error, dict) else None
    return op.get("status") == 429 or kind == "cluster_block_exception"


def _reason(op: Mapping[str, Any]) -> str:
    error = op.get("error")
    if isinstance(error, dict):
        return f"status {op.get('status')}: {error.get('type')}: {error.get('reason')}"
    return f"status {op.get('status')}: {error}"


def _held_summary(connection: Connection, held: list[dict[str, Any]], total: int) -> str:
    """What was held back and the fix: the block's own API call, or waiting out a 429."""
    indices = ",".join(sorted({str(op.get("_index")) for op in held}))
    reason = _reason(held[0])
    lead = (f"Elasticsearch at {connection.location} refuses writes to {indices} "
            f"({len(held)} of {total} documents held back; {reason})")
    fix = block_fix(reason, indices)
    if fix is not None:
        return f"{lead}: {fix}"
    return f"{lead}: the cluster is overloaded; the writes are sent again once it takes them"


def _bulk(
    connection: Connection, actions: list[dict[str, Any]]
) -> tuple[int, list[dict[str, Any]]]:
    """One bulk helper run; per-document errors returned (429s too: `send` retries them)."""
    success, raw_errors = helpers.bulk(
        connection.client,
        actions,
        chunk_size=max(len(actions), 1),
        raise_on_error=False,
        raise_on_exception=True,
        max_retries=0,
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
