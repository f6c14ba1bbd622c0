"""Candidates -> verification -> Verdict: the one place that decides what is a near-duplicate."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .config import NearDupConfig
from .fingerprint import Document, Fingerprint, Fingerprinter
from .index.base import FingerprintIndex, IndexEntry
from .rarewords import RarewordsMethod, WarmupReplay

VerdictStatus = Literal["ok", "no_text", "error", "unchecked"]


@dataclass(frozen=True)
class Verdict:
    """What neardup decided about one document, and why."""

    doc_id: str
    status: VerdictStatus
    duplicate_of: str | None = None
    similarity: float | None = None
    method: str | None = None
    cluster: str | None = None  # id of the group's original (the document itself when new)
    scores: dict[str, float] = field(default_factory=dict)  # best similarity per method
    candidates: int = 0
    reason: str = ""

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate_of is not None


@dataclass(frozen=True)
class _Match:
    doc_id: str
    cluster: str
    method: str
    similarity: float


class Deduplicator:
    """Checks documents against an index and records them, with one fingerprinter's rules."""

    def __init__(
        self,
        index: FingerprintIndex,
        config: NearDupConfig | None = None,
        fingerprinter: Fingerprinter | None = None,
    ) -> None:
        self.config = config or NearDupConfig()
        self.fingerprinter = fingerprinter or Fingerprinter(self.config)
        self.index = index
        # An index made with other text rules, hashes or method parameters is refused here.
        index.ensure_params(self.fingerprinter.params())
        self._replays = [  # rarewords stream warm-up: young profiles are redone once, at its end
            WarmupReplay(name, m) for name, m in self.fingerprinter.methods.items()
            if isinstance(m, RarewordsMethod)
        ]

    def check(self, doc: Document) -> tuple[Verdict, Fingerprint]:
        """Verdict for `doc` against what the index holds (the index is not changed)."""
        fp = self.fingerprinter.fingerprint(doc, self.index)  # the index keeps DF (rarewords)
        if fp.status != "ok":
            return Verdict(doc.doc_id, "no_text", reason="no words to compare"), fp
        return self.verdict_for(fp), fp

    def verdict_for(self, fp: Fingerprint) -> Verdict:
        """Verify every candidate sharing a lookup key; the most similar duplicate wins."""
        ids = self.index.candidates(fp.keys)
        ids.discard(fp.doc_id)  # a page is never its own duplicate
        stored = self.index.get(ids)
        scores: dict[str, float] = {}
        best: _Match | None = None
        for cand_id in sorted(stored):
            entry = stored[cand_id]
            if str(entry.meta.get("cluster") or cand_id) == fp.doc_id:
                continue  # this page's own copies, recorded when it was first seen
            cand_sigs = self.fingerprinter.decode(entry.signatures)
            for name, method in self.fingerprinter.methods.items():
                if name not in cand_sigs or name not in fp.signatures:
                    continue
                sim = method.similarity(fp.signatures[name], cand_sigs[name])
                scores[name] = max(scores.get(name, 0.0), sim)
                warming_up = getattr(method, "warming_up", None)  # DF too young to decide on
                if warming_up is not None and warming_up(fp.signatures[name]):
                    continue
                if method.is_duplicate(fp.signatures[name], cand_sigs[name]) and (
                    best is None or sim > best.similarity
                ):
                    cluster = str(entry.meta.get("cluster") or cand_id)
                    best = _Match(cand_id, cluster, name, sim)
        if best is None:
            return Verdict(fp.doc_id, "ok", cluster=fp.doc_id, scores=scores, candidates=len(ids))
        return Verdict(
            fp.doc_id,
            "ok",
            duplicate_of=best.doc_id,
            similarity=round(best.similarity, 6),
            method=best.method,
            cluster=best.cluster,
            scores=scores,
            candidates=len(ids),
            reason=f"{best.method} similarity {best.similarity:.3f} to {best.doc_id}",
        )

    def record(self, fp: Fingerprint, verdict: Verdict, url: str | None = None) -> None:
        """Store a checked document so later pages are compared with it."""
        if fp.status != "ok":
            return
        meta: dict[str, Any] = {
            "cluster": verdict.cluster or fp.doc_id,
            "duplicate_of": verdict.duplicate_of,
            "similarity": verdict.similarity,
            "method": verdict.method,
            "url": url,
            "added": time.time(),
        }
        entry = IndexEntry(fp.doc_id, self.fingerprinter.encode(fp), fp.keys, meta)
        self.index.add(entry)
        for replay in self._replays:
            replay.remember(entry, fp.signatures[replay.name])

    def count_words(self, fp: Fingerprint) -> None:
        """Add a checked document's distinct words to the index's DF (a re-add replaces them)."""
        for name, method in self.fingerprinter.methods.items():
            corpus_words = getattr(method, "corpus_words", None)
            words = corpus_words(fp.signatures[name]) if corpus_words is not None else None
            if words is not None:
                self.index.add_document_frequencies(fp.doc_id, words.tolist())
                return

    def learn(self, doc: Document) -> None:
        """Batch mode's first pass: count `doc`'s words in DF only (no lookup, no verdict)."""
        if not any(hasattr(m, "corpus_words") for m in self.fingerprinter.methods.values()):
            return
        words = self.fingerprinter.normalizer.words(self.fingerprinter.text_of(doc)[0]).words
        if len(words) >= self.config.min_tokens:
            hashes = np.unique(self.fingerprinter.hasher.word_hashes(words))
            self.index.add_document_frequencies(doc.doc_id, hashes.tolist())

    def process(self, doc: Document) -> Verdict:
        """Check and, by policy, record: originals always, duplicates when index_duplicates."""
        return self.process_and_fingerprint(doc)[0]

    def process_and_fingerprint(self, doc: Document) -> tuple[Verdict, Fingerprint | None]:
        """`process`, also returning the fingerprint (its text and title, extracted once)."""
        verdict, fp = self.check(doc)
        self.apply(fp, verdict, doc.url)
        return verdict, fp

    def process_fingerprint(self, fp: Fingerprint, url: str | None = None) -> Verdict:
        """`process` for a fingerprint computed earlier (threshold sweeps reuse signatures)."""
        if fp.status != "ok":
            return Verdict(fp.doc_id, "no_text", reason="no words to compare")
        verdict = self.verdict_for(fp)
        self.apply(fp, verdict, url)
        return verdict

    def apply(self, fp: Fingerprint, verdict: Verdict, url: str | None) -> None:
        """The record policy, in one place: count words, store by policy, replay warm-ups."""
        if verdict.status == "ok":
            self.count_words(fp)
        if verdict.status == "ok" and (not verdict.is_duplicate or self.config.index_duplicates):
            self.record(fp, verdict, url)
        for replay in self._replays:
            replay.replay(self.index)
