"""Stream mode of a method that warms up (rarewords): the pages recorded while the corpus's DF
was young are completed again, once, from the DF of the first `warmup` documents."""

from __future__ import annotations

from typing import Any

from neardup_pipeline.index.base import FingerprintIndex, IndexEntry
from neardup_pipeline.methods.contract import WarmsUp


class WarmupReplay:
    """The young pages of one method, re-profiled and re-keyed when its warm-up ends (then
    never again)."""

    def __init__(self, name: str, method: WarmsUp) -> None:
        self.name = name
        self.method = method
        self.pending: dict[str, tuple[Any, IndexEntry]] = {}
        self.done = method.warmup <= 0

    def remember(self, entry: IndexEntry, signature: Any) -> None:
        if not self.done and self.method.warming_up(signature):
            self.pending[entry.doc_id] = (signature, entry)

    def replay(self, index: FingerprintIndex) -> int:
        """Re-profile the remembered pages when warm-up ends; the number re-added."""
        if self.done or index.document_count() < self.method.warmup:
            return 0
        for doc_id, (draft, entry) in self.pending.items():
            sig = self.method.complete(draft, index, doc_id)
            index.add(IndexEntry(
                doc_id,
                {**entry.signatures, self.name: self.method.encode(sig)},
                {**entry.keys, self.name: self.method.keys(sig)},
                entry.meta,
            ))
        replayed, self.done = len(self.pending), True
        self.pending.clear()
        return replayed
