"""The fingerprint index as the run's judge sees it: every entry recorded is stamped with its
content document's `_id` and source hash, and remembered, so the run knows whose cluster was
set or moved (a declared canonical taking a cluster over re-records its older members too).

A dry run records into memory over the stored index: lookups see both, nothing is written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from neardup_pipeline.hygiene.known import CONTENT_ID, SOURCE_HASH
from neardup_pipeline.index.base import (
    FingerprintIndex,
    ForwardingIndex,
    IndexEntry,
    Membership,
    candidates_many,
    memberships,
)
from neardup_pipeline.index.memory import MemoryIndex


class RecordingIndex(ForwardingIndex):
    """Forwards the contract to the fingerprint index (or, `dry_run`, to an overlay in memory)
    and keeps the entries recorded since `take_recorded`."""

    def __init__(self, index: FingerprintIndex, dry_run: bool = False) -> None:
        super().__init__(index)
        self._stamps: dict[str, dict[str, str]] = {}
        self._recorded: dict[str, IndexEntry] = {}
        self._overlay = MemoryIndex() if dry_run else None
        self._overlay_ids: set[str] = set()

    def stamp(self, doc_id: str, content_id: str, source_hash: str) -> None:
        """What the next entry recorded for `doc_id` carries in its metadata."""
        self._stamps[doc_id] = {CONTENT_ID: content_id, SOURCE_HASH: source_hash}

    def take_recorded(self) -> dict[str, IndexEntry]:
        """The entries recorded since the last call, by doc id (the latest of each)."""
        recorded, self._recorded = self._recorded, {}
        self._stamps.clear()
        return recorded

    def add(self, entry: IndexEntry) -> None:
        stamp = self._stamps.get(entry.doc_id)
        if stamp is not None:
            entry = IndexEntry(entry.doc_id, entry.signatures, entry.keys, {**entry.meta, **stamp})
        if self._overlay is not None:
            self._overlay.add(entry)
            self._overlay_ids.add(entry.doc_id)
        else:
            self.index.add(entry)
        self._recorded[entry.doc_id] = entry

    # ---------------------------------------------------------------- dry run: overlay reads

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        if self._overlay is None:
            return self.index.candidates(keys)
        return self.candidates_many([keys])[0]

    def candidates_many(self, keys: Sequence[Mapping[str, Sequence[str]]]) -> list[set[str]]:
        """One round trip (msearch) to the stored index; the overlay's answer wins for its ids."""
        found = candidates_many(self.index, keys)
        if self._overlay is None:
            return found
        mine, overlay = self._overlay_ids, self._overlay
        return [(stored - mine) | overlay.candidates(k)
                for stored, k in zip(found, keys, strict=True)]

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        wanted = list(ids)
        if self._overlay is None:
            return self.index.get(wanted)
        found = self._overlay.get(wanted)
        found.update(self.index.get(i for i in wanted if i not in found))
        return found

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        wanted = list(ids)
        if self._overlay is None:
            return memberships(self.index, wanted)
        found = self._overlay.memberships(wanted)
        found.update(memberships(self.index, [i for i in wanted if i not in found]))
        return found

    def count(self) -> int:
        return self.index.count() + (self._overlay.count() if self._overlay else 0)

    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        (self._overlay or self.index).add_document_frequencies(doc_id, word_hashes)

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        wanted = list(word_hashes)
        counts = self.index.document_frequencies(wanted, exclude)
        if self._overlay is not None:
            for word, n in self._overlay.document_frequencies(wanted, exclude).items():
                counts[word] = counts.get(word, 0) + n
        return counts

    def document_count(self, exclude: str | None = None) -> int:
        extra = self._overlay.document_count(exclude) if self._overlay is not None else 0
        return self.index.document_count(exclude) + extra

    def flush(self) -> None:
        if self._overlay is None:
            self.index.flush()

