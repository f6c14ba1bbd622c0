"""Batched checking: fingerprint a batch, look all of it up in one round trip (Elasticsearch's
msearch), then decide each document in order exactly as `Deduplicator.process` would.

A read-through view lets the one-document path reuse the batch's work, so there is one place
that decides (deduplicator.py) and the verdicts cannot drift apart. `PrefetchedIndex` answers
`candidates(keys)` from the batch lookup, corrected by the documents recorded since: those are
authoritative for their ids (like the Elasticsearch write cache), so a document earlier in the
batch is a candidate for a later one. The stored entries of every candidate (and of the batch's
own ids, for re-crawls) are fetched in the same breath, one `mget` for the batch instead of two
round trips a document. Everything else goes to the real index. The fingerprints are made
before the lookup: `batchable` says when that cannot change a signature.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index.base import (
    FingerprintIndex,
    ForwardingIndex,
    IndexEntry,
    Membership,
    membership_of,
)
from neardup_pipeline.index.memory import MemoryIndex

FrozenKeys = tuple[tuple[str, tuple[str, ...]], ...]


def freeze(keys: Mapping[str, Sequence[str]]) -> FrozenKeys:
    """Lookup keys as a dict key."""
    return tuple((method, tuple(values)) for method, values in sorted(keys.items()))


class PrefetchedIndex(ForwardingIndex):
    """The real index, with candidate lookups answered from a batch lookup made beforehand."""

    def __init__(
        self,
        index: FingerprintIndex,
        lookups: Mapping[FrozenKeys, set[str]],
        stored: Mapping[str, IndexEntry | None] | None = None,
    ) -> None:
        super().__init__(index)
        self._lookups = lookups
        self._added = MemoryIndex()  # recorded during the batch: their keys are the current ones
        self._added_ids: set[str] = set()
        self._stored = dict(stored or {})  # fetched with the lookup; None: known to be absent

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        wanted = list(ids)
        found = self._added.get(wanted)
        ask = []
        for doc_id in wanted:
            if doc_id in found:
                continue
            if doc_id in self._stored:
                entry = self._stored[doc_id]
                if entry is not None:
                    found[doc_id] = entry
            else:
                ask.append(doc_id)
        if ask:
            found.update(self.index.get(ask))
        return found

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        wanted = list(ids)
        if all(i in self._stored or i in self._added_ids for i in wanted):
            return {i: membership_of(e) for i, e in self.get(wanted).items()}
        return super().memberships(wanted)

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        known = self._lookups.get(freeze(keys))
        if known is None:
            return self.index.candidates(keys)
        return (known - self._added_ids) | self._added.candidates(keys)

    def add(self, entry: IndexEntry) -> None:
        self.index.add(entry)
        self._added.add(entry)
        self._added_ids.add(entry.doc_id)


def batchable(fingerprinter: Fingerprinter) -> bool:
    """False when a signature depends on the index (rarewords' DF changes as pages are
    recorded): fingerprinting a whole batch up front would then change the verdicts."""
    return not any(c.completes is not None for c in fingerprinter.capabilities.values())
