"""Anchors without a model file: fit one from the first pages a pipeline sees.

The first `anchors_warmup` pages pass with the verdicts of the other configured methods (against
the index and against each other; none: "unchecked"), and their words are kept. At that count
(or at the end of a shorter crawl) a model is fitted, the index records the full parameters, and
the warm-up pages are checked again, in order, by every method including anchors, and indexed.
No Scrapy here: the pipeline calls this on its worker thread and reports what it returns.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.index.base import (
    FingerprintIndex,
    ForwardingIndex,
    IndexEntry,
    Membership,
    memberships,
)
from neardup_pipeline.index.memory import MemoryIndex
from neardup_pipeline.methods.anchors.fit import fit
from neardup_pipeline.methods.anchors.model import AnchorModel, FitSettings, normalizer_for
from neardup_pipeline.verdict.deduplicator import Deduplicator, Verdict


class _WarmupView(ForwardingIndex):
    """The real index for lookups plus the warm-up pages so far; warm-up writes stay in memory
    (the real index records its parameters, and the pages, once the model exists). Document
    frequency is the real index's: the other methods count and read it there."""

    def __init__(self, index: FingerprintIndex) -> None:
        super().__init__(index)
        self.memory = MemoryIndex()

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        self.memory.ensure_params(params)

    def add(self, entry: IndexEntry) -> None:
        self.memory.add(entry)

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        return self.index.candidates(keys) | self.memory.candidates(keys)

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        wanted = list(ids)
        return {**self.index.get(wanted), **self.memory.get(wanted)}

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        wanted = list(ids)
        return {**memberships(self.index, wanted), **self.memory.memberships(wanted)}

    def count(self) -> int:
        return self.index.count() + self.memory.count()

    def flush(self) -> None:
        """Nothing of the warm-up is written to the real index."""


@dataclass(frozen=True)
class WarmupReport:
    """What the fit at the end of the warm-up found."""

    pages: int
    model: AnchorModel
    seconds: float
    duplicates: tuple[Verdict, ...] = ()
    by_method: dict[str, int] = field(default_factory=dict)


class AnchorsWarmup:
    """Stands in for the Deduplicator until the anchors model exists (see the module doc)."""

    def __init__(self, index: FingerprintIndex, config: NearDupConfig) -> None:
        self.index = index
        self.config = config
        others = tuple(m for m in config.method_names if m != "anchors")
        self.pre = (
            Deduplicator(
                _WarmupView(index), config.replace(methods=others)
            ) if others else None
        )
        self.fingerprinter = (
            self.pre.fingerprinter if self.pre else
            # text extraction only
            Fingerprinter(config.replace(methods=("simhash",)))
        )
        self.normalizer = normalizer_for(config.text)
        self.pages: list[tuple[Document, list[str]]] = []
        self.failed = False

    @property
    def ready(self) -> bool:
        return not self.failed and len(self.pages) >= self.config.anchors.warmup

    def process(self, doc: Document) -> Verdict:
        """Remember the page's words; the verdict is the other methods' (or "unchecked")."""
        return self.process_and_fingerprint(doc)[0]

    def process_and_fingerprint(self, doc: Document) -> tuple[Verdict, Fingerprint | None]:
        """`process`, also returning the other methods' fingerprint (None without them)."""
        text, title, _ = self.fingerprinter.text_of(doc)
        kept = Document(doc.doc_id, text=text, url=doc.url)  # extracted once, re-checked later
        self.pages.append((kept, self.normalizer.words(text).words))
        if self.pre is None:
            unchecked = Verdict(doc.doc_id, "unchecked", reason="anchors warm-up: no model yet")
            return unchecked, None
        verdict, fp = self.pre.process_and_fingerprint(kept)
        return verdict, None if fp is None else dataclasses.replace(fp, title=title)

    def finish(self) -> tuple[Deduplicator, WarmupReport]:
        """Fit, record the full parameters, re-check and index the warm-up pages in order."""
        self.failed = True  # a failure below must not refit at every later page
        started = time.perf_counter()
        # the fit command's defaults; covered pages have the bits the method asks for
        settings = FitSettings(min_bits=self.config.anchors.min_bits)
        model = fit((words for _, words in self.pages), settings, self.normalizer.params())
        if self.config.anchors.model_out:
            model.save(self.config.anchors.model_out)
        full = Deduplicator(self.index, self.config, Fingerprinter(self.config, model))
        duplicates = [v for v in (full.process(doc) for doc, _ in self.pages) if v.is_duplicate]
        report = WarmupReport(
            len(self.pages), model, time.perf_counter() - started, tuple(duplicates),
            dict(Counter(str(v.method) for v in duplicates)),
        )
        self.pages = []
        return full, report


def open_deduplicator(
    index: FingerprintIndex, config: NearDupConfig
) -> Deduplicator | AnchorsWarmup:
    """A Deduplicator, or the warm-up stand-in when anchors is configured without a model."""
    if "anchors" in config.method_names and not config.anchors.model:
        return AnchorsWarmup(index, config)
    return Deduplicator(index, config)


class _Stats(Protocol):
    def set_value(self, key: str, value: Any) -> None: ...


def report_warmup(report: WarmupReport, stats: _Stats | None, logger: logging.Logger) -> None:
    """Stats under neardup/anchors/ and an INFO log of the model and the duplicates found."""
    model = report.model
    values: dict[str, Any] = {
        "warmup_pages": report.pages,
        "warmup_duplicates": len(report.duplicates),
        "model_words": len(model.words),
        "model_coverage": model.stats.get("coverage"),
        "model_digest": model.digest,
        **{f"warmup_duplicates/{m}": n for m, n in report.by_method.items()},
    }
    if stats is not None:
        for key, value in values.items():
            stats.set_value(f"neardup/anchors/{key}", value)
    logger.info(
        "neardup: anchors model %s fitted on %d warm-up pages in %.2fs: %d words, coverage %s; "
        "warm-up pages checked again with anchors: %d near-duplicates %s",
        model.digest, report.pages, report.seconds, len(model.words),
        model.stats.get("coverage"), len(report.duplicates), report.by_method or "",
    )
    for verdict in report.duplicates[:50]:
        logger.info("neardup: warm-up page %s is a near-duplicate of %s (%s)",
                    verdict.doc_id, verdict.duplicate_of, verdict.method)
