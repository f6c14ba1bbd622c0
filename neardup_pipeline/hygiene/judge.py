"""The verdict step: the crawl's Deduplicator, in the run's order, over the persistent
fingerprint index; a window of documents in, their marks out (and those of every member of a
cluster whose canonical the window changed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from neardup_pipeline.hygiene.fields import BAD_FIELD, Item
from neardup_pipeline.hygiene.marks import Mark, mark_of_entry, tagged
from neardup_pipeline.hygiene.recording import RecordingIndex
from neardup_pipeline.index.base import IndexEntry, cluster_of
from neardup_pipeline.verdict.clusters import cluster_members, doc_id_of
from neardup_pipeline.verdict.deduplicator import Deduplicator

REPEATED_ID = "repeated_id"


class Judge:
    """Checks documents in order, `batch` lookups per round trip, as `neardup dedup` does."""

    def __init__(self, dedup: Deduplicator, recording: RecordingIndex, batch: int = 100) -> None:
        self.dedup, self.recording, self.batch = dedup, recording, max(1, batch)
        self.counts: Counter[str] = Counter()
        self.problems: Counter[str] = Counter()  # bad fields by what is wrong
        self._ids: set[str] = set()  # doc ids checked by this process: a repeat is tagged
        self._regrouped: set[str] = set()  # a member of each cluster whose canonical changed

    def window(self, items: Sequence[Item]) -> list[Mark]:
        """Marks of a window of documents, in order; later ones see earlier ones."""
        marks: dict[str, Mark] = {}
        fresh: list[Item] = []
        for item in items:
            if item.known:
                self.counts["unchanged"] += 1
            elif item.doc is None:
                self.counts[BAD_FIELD] += 1
                self.problems[str(item.problem)] += 1
                marks[item.doc_id] = tagged(item.doc_id, item.es_id, BAD_FIELD)
            elif item.doc_id in self._ids:
                self.counts[REPEATED_ID] += 1
                marks[f"{item.es_id}\0repeated"] = tagged(item.doc_id, item.es_id, REPEATED_ID)
            else:
                self._ids.add(item.doc_id)
                fresh.append(item)
        for start in range(0, len(fresh), self.batch):
            self._check(fresh[start : start + self.batch], marks)
        entries = self.recording.take_recorded()
        entries.update(self._regrouped_members(entries))
        marks.update(self._marks_of(entries))
        return list(marks.values())

    def _regrouped_members(self, recorded: dict[str, IndexEntry]) -> dict[str, IndexEntry]:
        """The members of every cluster whose canonical a page of the window changed (it
        displaced one, or left the cluster it was the canonical of): marked again."""
        clusters, found = self.dedup.clusters, {}
        starts = self.recording.get(self._regrouped - recorded.keys())
        starts.update({i: recorded[i] for i in self._regrouped if i in recorded})
        for entry in starts.values():
            root = clusters.roots([cluster_of(entry)])[cluster_of(entry)]
            found.update(cluster_members(self.recording, clusters, root, entry,
                                         self.dedup.keyed))
        self._regrouped.clear()
        return found

    def _marks_of(self, entries: dict[str, IndexEntry]) -> dict[str, Mark]:
        """Each entry's marks as its cluster stands: the cluster's canonical names it."""
        clusters = self.dedup.clusters
        roots = clusters.roots({cluster_of(e) for e in entries.values()})
        held = clusters.canonicals(set(roots.values()))
        marks = {}
        for doc_id, entry in entries.items():
            root = roots[cluster_of(entry)]
            canonical = held[root][1] if root in held else doc_id_of(root)
            marks[doc_id] = mark_of_entry(entry, canonical)
        return marks

    def _check(self, chunk: Sequence[Item], marks: dict[str, Mark]) -> None:
        docs = []
        for item in chunk:
            assert item.doc is not None
            docs.append(item.doc)
            self.recording.stamp(item.doc_id, item.es_id, item.source_hash)
        self.counts["from_slices"] += sum(item.staged for item in chunk)
        fingerprints = None
        if any(item.fingerprint is not None for item in chunk):
            # made elsewhere (a reader process, a slice); one a reader could not make, here
            fingerprint = self.dedup.fingerprinter.fingerprint
            fingerprints = [item.fingerprint or fingerprint(doc, self.recording)
                            for item, doc in zip(chunk, docs, strict=True)]
        verdicts = self.dedup.process_batch(docs, fingerprints)
        for item, verdict in zip(chunk, verdicts, strict=True):
            if verdict.status != "ok":  # no_text, not_html
                self.counts[verdict.status] += 1
                marks[item.doc_id] = tagged(item.doc_id, item.es_id, verdict.status)
                continue
            self.counts["checked"] += 1
            if verdict.is_duplicate:
                self.counts["duplicates"] += 1
            if verdict.superseded:
                self._regrouped.add(item.doc_id)
            if verdict.successor is not None:
                self._regrouped.add(verdict.successor)
