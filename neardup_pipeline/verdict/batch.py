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
from neardup_pipeline.index.clusters import ClusterStore, Offer
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


class PrefetchedClusters:
    """The cluster store, with the declarers of a batch's URLs read beforehand in one round
    trip; declarations made during the batch are added to them. Everything else goes to the
    store."""

    def __init__(self, store: ClusterStore, declarers: Mapping[str, set[str]],
                 asked: Iterable[str]) -> None:
        self.store = store
        self._asked = set(asked)
        self._declarers = {url: set(ids) for url, ids in declarers.items()}

    def roots(self, names: Iterable[str]) -> dict[str, str]:
        return self.store.roots(names)

    def link(self, child: str, parent: str) -> bool:
        return self.store.link(child, parent)

    def canonicals(self, roots: Iterable[str]) -> dict[str, Offer]:
        return self.store.canonicals(roots)

    def offer(self, root: str, offer: Offer) -> None:
        self.store.offer(root, offer)

    def reset(self, root: str, offer: Offer | None) -> None:
        self.store.reset(root, offer)

    def declare(self, doc_id: str, url: str) -> None:
        self.store.declare(doc_id, url)
        self._declarers.setdefault(url, set()).add(doc_id)

    def declarers(self, urls: Iterable[str]) -> dict[str, set[str]]:
        wanted = list(urls)
        found = {url: set(self._declarers[url]) for url in wanted if url in self._declarers}
        rest = [url for url in wanted if url not in self._asked and url not in found]
        found.update(self.store.declarers(rest) if rest else {})
        return found


def batchable(fingerprinter: Fingerprinter) -> bool:
    """False when a signature depends on the index (rarewords' DF changes as pages are
    recorded): fingerprinting a whole batch up front would then change the verdicts."""
    return not any(c.completes is not None for c in fingerprinter.capabilities.values())
