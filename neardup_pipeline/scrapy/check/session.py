"""The check against an index this process opened, run on the worker thread in page order.

Holds the index, the deduplicator (or the anchors warm-up standing in for it) and the pages
index keeper. Backend capabilities are chosen here once, when the index opens. Pages that wait
together are checked as one batch (one lookup round trip on Elasticsearch, `check_batch`) with
the verdicts of checking them one by one.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.index import open_index
from neardup_pipeline.index.base import (
    FingerprintIndex,
    SupportsCounters,
    SupportsPendingWrites,
    SupportsPing,
)
from neardup_pipeline.methods.anchors.warmup import AnchorsWarmup, WarmupReport, open_deduplicator
from neardup_pipeline.scrapy.check.base import Checked, Outcome, Page, outcome_of
from neardup_pipeline.verdict.canonical import page_date
from neardup_pipeline.verdict.deduplicator import Decided, Deduplicator, Verdict

if TYPE_CHECKING:
    from neardup_pipeline.index.elastic.pages import PagesKeeper
    from neardup_pipeline.index.elastic.store import ElasticIndex
    from neardup_pipeline.parallel.offload import FingerprintWorkers

logger = logging.getLogger(__name__)


class IndexSession:
    """Fingerprint, look up, decide and record pages in their order (worker thread only)."""

    def __init__(self, config: NearDupConfig, workers: FingerprintWorkers | None) -> None:
        self.config = config
        self.workers = workers  # child processes that fingerprint, when the methods allow it
        self.index: FingerprintIndex | None = None
        self.dedup: Deduplicator | AnchorsWarmup | None = None
        self.pending_writes: SupportsPendingWrites | None = None
        self.ping: SupportsPing | None = None
        self._counters: SupportsCounters | None = None
        self._pages_store: ElasticIndex | None = None
        self._pages: PagesKeeper | None = None  # made on the first page it records
        self._warned_canonical = False
        self._warmup_report: WarmupReport | None = None  # handed from the worker to the reactor
        self.counts: Counter[str] = Counter()
        self._counts_view: dict[str, int] = {}
        # Pages recorded since the last commit degraded mode made (SQLite only, else None): a
        # failed write may roll them back with its transaction, so they are spooled again.
        self.unconfirmed: list[tuple[str | None, Fingerprint]] | None = None

    @property
    def unavailable(self) -> bool:
        return False

    def open(self) -> int | None:
        self.open_index()
        return self.count()

    def open_index(self) -> None:
        """Open the index and the deduplicator; note what the backend can do."""
        index = open_index(self.config.backend, self.config)
        try:
            dedup = open_deduplicator(index, self.config)
        except BaseException:
            index.close()
            raise
        self.index, self.dedup = index, dedup
        self.pending_writes = index if isinstance(index, SupportsPendingWrites) else None
        self.ping = index if isinstance(index, SupportsPing) else None
        self._counters = index if isinstance(index, SupportsCounters) else None
        self._pages_store = _pages_store(index, self.config)

    def count(self) -> int:
        assert self.index is not None
        return self.index.count()

    @property
    def fingerprinter(self) -> Fingerprinter:
        assert self.dedup is not None
        return self.dedup.fingerprinter

    @property
    def replayer(self) -> Deduplicator | None:
        """What checks spooled pages: the deduplicator, or during the anchors warm-up the
        other methods' (None: anchors alone cannot check anything yet)."""
        if isinstance(self.dedup, Deduplicator):
            return self.dedup
        return None if self.dedup is None else self.dedup.pre

    def fingerprint(
        self, doc: Document, pending: Future[Fingerprint] | None, fingerprinter: Fingerprinter
    ) -> Fingerprint:
        """The page's fingerprint, from a child process when there is one."""
        if self.workers is not None:
            return self.workers.result(doc, pending)
        return fingerprinter.fingerprint(doc, None)

    def check(self, doc: Document, pending: Future[Fingerprint] | None) -> Checked:
        dedup = self.dedup
        assert dedup is not None
        fp: Fingerprint | None
        if self.workers is not None and isinstance(dedup, Deduplicator):
            fp = self.fingerprint(doc, pending, dedup.fingerprinter)
            verdict = dedup.process_fingerprint(fp, doc.url)
        else:
            verdict, fp = dedup.process_and_fingerprint(doc)
        if isinstance(dedup, AnchorsWarmup) and dedup.ready:
            self.finish_warmup()
        return Checked(verdict, self._record_page(doc, verdict, fp))

    def check_many(self, pages: Sequence[Page]) -> list[Outcome]:
        """Each page's outcome, in order, checked in batches (`check_batch`)."""
        outcomes: list[Outcome] = []
        while len(outcomes) < len(pages):
            outcomes += self.check_batch(pages[len(outcomes):])
        return outcomes

    def check_batch(self, pages: Sequence[Page]) -> list[Outcome]:
        """The outcomes of the first page and of as many after it as one batch takes: one
        lookup of all their candidates (Deduplicator.prefetched), then each decided in order,
        so the verdicts are those of `check` one page at a time. An error stops the batch at
        its page: the pages before it keep their verdicts, it gets the error, and the caller
        checks the rest again from the index itself. Methods whose signatures depend on the
        index (rarewords, the anchors warm-up) go one page at a time."""
        dedup = self.dedup
        if len(pages) < 2 or not isinstance(dedup, Deduplicator) or not dedup.batchable:
            return [outcome_of(self.check, *pages[0])]
        fps: list[Fingerprint] = []
        stopped: Exception | None = None  # the error of the page after the last in `fps`
        for doc, pending in pages:
            try:
                fps.append(self.fingerprint(doc, pending, dedup.fingerprinter)
                           if self.workers is not None
                           else dedup.fingerprinter.fingerprint(doc, dedup.index))
            except Exception as exc:
                stopped = exc
                break
        if stopped is not None and not fps:
            return [stopped]
        decided: list[Decided] = []
        try:
            view = dedup.prefetched(fps, [doc.url for doc, _ in pages[:len(fps)]])
            for (doc, _), fp in zip(pages, fps, strict=False):
                decided.append((fp, view.decide(fp, doc.url), doc.url))
        except Exception as exc:  # this page's error; the rest are checked again
            stopped = exc
        if len(decided) > 1:
            self.counts["batch/lookups"] += 1
            self.counts["batch/pages"] += len(decided)
        outcomes: list[Outcome] = []
        try:
            verdicts = dedup.settle(decided)
        except Exception as exc:  # the batch's one write-log claim: every page's error
            outcomes = [exc] * len(decided)
        else:
            for (doc, _), (fp, _, _), verdict in zip(pages, decided, verdicts, strict=False):
                outcomes.append(outcome_of(self._recorded, doc, verdict, fp))
        return outcomes + ([stopped] if stopped is not None else [])

    def _recorded(self, doc: Document, verdict: Verdict, fp: Fingerprint) -> Checked:
        return Checked(verdict, self._record_page(doc, verdict, fp))

    def _record_page(self, doc: Document, verdict: Verdict, fp: Fingerprint | None) -> bool:
        """Record a checked page in the pages index; True when it became its cluster's
        canonical copy."""
        if self.unconfirmed is not None and verdict.status == "ok" and fp is not None:
            self.unconfirmed.append((doc.url, fp))
        store = self._pages_store
        if store is not None and verdict.status == "ok" and fp is not None and doc.url:
            if self._pages is None:
                from neardup_pipeline.index.elastic.pages import PagesKeeper

                self._pages = PagesKeeper(store, self.config.scrapy.canonical)
            best = self.config.scrapy.canonical == "best"
            placement = self._pages.record(  # the text the fingerprint was made from
                verdict=verdict, url=doc.url, title=fp.title, text=fp.text,
                date=page_date(doc.html, doc.url) if best else None,
            )
            if placement.promoted:  # a better copy: kept, its cluster's old canonical demoted
                self.counts["canonical/promoted"] += 1
                return True
        elif self.config.scrapy.canonical == "best" and not self._warned_canonical:
            self._warned_canonical = True
            logger.warning("neardup: NEARDUP_CANONICAL = 'best' needs the pages index "
                           "(NEARDUP_PAGES_INDEX, Elasticsearch backend); copies are checked "
                           "as with 'first'")
        return False

    @property
    def warming_up(self) -> bool:
        """Whether the anchors warm-up holds pages that wait for the model."""
        return isinstance(self.dedup, AnchorsWarmup) and bool(self.dedup.pages)

    def finish_warmup(self) -> None:
        """Fit the anchors model and check the warm-up pages with it."""
        assert isinstance(self.dedup, AnchorsWarmup)
        self.dedup, self._warmup_report = self.dedup.finish()

    def take_warmup_report(self) -> WarmupReport | None:
        """The report of a finished warm-up, once (called on the reactor)."""
        report, self._warmup_report = self._warmup_report, None
        return report

    def close(self) -> None:
        if self.index is not None:
            self.index.close()

    def snapshot(self) -> None:
        """Copy the counts for the reactor (the backend's under `es/`)."""
        view = {f"es/{k}": int(v) for k, v in (self._counters.counters if self._counters
                                              else {}).items()}
        view.update(self.counts)
        self._counts_view = view  # one reference swap: the reactor reads a consistent dict

    @property
    def counts_view(self) -> dict[str, int]:
        return self._counts_view


def _pages_store(index: FingerprintIndex, config: NearDupConfig) -> ElasticIndex | None:
    """The index that keeps the pages index (NEARDUP_PAGES_INDEX): Elasticsearch only."""
    if not config.elastic.pages_index:
        return None
    from neardup_pipeline.index.elastic.store import ElasticIndex

    return index if isinstance(index, ElasticIndex) else None
