"""The verdict step: the crawl's Deduplicator, in the run's order, over the persistent
fingerprint index; a window of documents in, their marks out (and those of every document whose
cluster the window moved)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from neardup_pipeline.hygiene.fields import Item
from neardup_pipeline.hygiene.marks import Mark, mark_of_entry, tagged
from neardup_pipeline.hygiene.recording import RecordingIndex
from neardup_pipeline.verdict.deduplicator import Deduplicator

NO_TEXT, BAD_FIELD, REPEATED_ID = "no_text", "bad_field", "repeated_id"


class Judge:
    """Checks documents in order, `batch` lookups per round trip, as `neardup dedup` does."""

    def __init__(self, dedup: Deduplicator, recording: RecordingIndex, batch: int = 100) -> None:
        self.dedup, self.recording, self.batch = dedup, recording, max(1, batch)
        self.counts: Counter[str] = Counter()
        self.problems: Counter[str] = Counter()  # bad fields by what is wrong
        self._ids: set[str] = set()  # doc ids checked by this process: a repeat is tagged

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
        for doc_id, entry in self.recording.take_recorded().items():
            marks[doc_id] = mark_of_entry(entry)
        return list(marks.values())

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
            if verdict.status != "ok":
                self.counts[NO_TEXT] += 1
                marks[item.doc_id] = tagged(item.doc_id, item.es_id, NO_TEXT)
                continue
            self.counts["checked"] += 1
            if verdict.is_duplicate:
                self.counts["duplicates"] += 1
