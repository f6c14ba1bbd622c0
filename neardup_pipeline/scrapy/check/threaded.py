"""Checks with the index in this process: its I/O on the worker thread, so the reactor never
blocks and index operations stay in page order. Pages are fingerprinted on that thread
(InThreadChecker) or in child processes while the thread decides (OffloadedChecker). A shared
index (Elasticsearch) gets degraded mode wrapped around the check.

Pages wait in arrival order; the thread takes those waiting (with their fingerprints ready) and
checks them as one batch: one lookup round trip for all of them instead of one a page, which is
what an Elasticsearch crawl waits on. The verdicts are those of one page at a time.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass

from neardup_pipeline.config import NearDupConfig, redact_backend
from neardup_pipeline.errors import IndexUnavailable
from neardup_pipeline.fingerprint import Document, Fingerprint
from neardup_pipeline.methods.anchors.warmup import report_warmup
from neardup_pipeline.parallel.offload import FingerprintWorkers
from neardup_pipeline.scrapy.check.base import Checked, IndexCheck
from neardup_pipeline.scrapy.check.degraded import degradable, degraded_mode
from neardup_pipeline.scrapy.check.session import IndexSession
from neardup_pipeline.scrapy.check.worker import WorkerThread
from neardup_pipeline.scrapy.stats import CrawlStats

logger = logging.getLogger(__name__)
MAX_BATCH = 200  # pages checked together at most (one msearch request: lookup.MSEARCH_CHUNK)


@dataclass(eq=False)
class _Waiting:
    """A page waiting for the worker thread; `outcome` is set there, read on the reactor."""

    doc: Document
    pending: Future[Fingerprint] | None
    outcome: Checked | BaseException | None = None


class InThreadChecker:
    """Fingerprints and checks the pages on the worker thread, those waiting together as one
    batch."""

    def __init__(self, config: NearDupConfig, worker: WorkerThread, stats: CrawlStats) -> None:
        self.config = config
        self._worker = worker
        self._stats = stats
        self._session: IndexSession | None = None
        self._check: IndexCheck | None = None
        self._waiting: deque[_Waiting] = deque()  # appended on the reactor, taken on the thread

    @property
    def unavailable(self) -> bool:
        return self._check is not None and self._check.unavailable

    def counts(self) -> Mapping[str, int]:
        return {} if self._session is None else self._session.counts_view

    async def open(self) -> None:
        await self._start_fingerprinting()
        self._session = session = IndexSession(self.config, self._fingerprinters())
        self._check = degraded_mode(session, self.config) if degradable(self.config) \
            else session
        try:
            stored = await self._worker.run(self._check.open)
        except IndexUnavailable:
            await self.close()
            raise
        except BaseException:
            self._stop_fingerprinting()
            raise
        logger.info(
            "neardup: methods=%s action=%s backend=%s (%s)",
            ",".join(self.config.method_names), self.config.scrapy.action,
            redact_backend(self.config.backend),
            "unavailable: started degraded" if stored is None else f"{stored} fingerprints stored",
        )

    async def check(self, doc: Document) -> Checked:
        # fingerprinting starts now, while the worker decides the pages before it
        page = _Waiting(doc, self._submit(doc))
        self._waiting.append(page)
        await self._worker.run(self._check_waiting, page)
        self._report_warmup()
        if isinstance(page.outcome, BaseException):
            raise page.outcome
        assert page.outcome is not None
        return page.outcome

    async def close(self) -> None:
        try:
            if self._session is not None and self._session.warming_up:
                try:  # a crawl shorter than the warm-up: fit on what it saw
                    await self._worker.run(self._session.finish_warmup)
                except Exception:
                    self._stats.inc("errors")
                    logger.exception("neardup: anchors fit at the end of the crawl failed")
                self._report_warmup()
            await self._worker.run(self._close_and_count)
        finally:
            self._stop_fingerprinting()

    def _check_waiting(self, page: _Waiting) -> None:
        """Worker thread: check the waiting pages, a batch at a time, until `page` is done (an
        earlier call may have done it already, in its batch)."""
        assert self._check is not None and self._session is not None
        while page.outcome is None:
            batch = self._take()
            outcomes: Sequence[Checked | BaseException]
            try:
                outcomes = self._check.check_many([(p.doc, p.pending) for p in batch])
            except BaseException as exc:  # each page raises it on the reactor
                outcomes = [exc] * len(batch)
            finally:
                self._session.snapshot()
            for taken, outcome in zip(batch, outcomes, strict=True):
                taken.outcome = outcome

    def _take(self) -> list[_Waiting]:
        """Worker thread: the first waiting page and, once its fingerprint is made, those after
        it whose fingerprints are ready too (the next ones are fingerprinted while this batch
        is checked), in order."""
        batch = [self._waiting.popleft()]
        if batch[0].pending is not None:
            wait([batch[0].pending])  # a child's error is the page's, raised when checked
        while self._waiting and len(batch) < MAX_BATCH:
            pending = self._waiting[0].pending
            if pending is not None and not pending.done():
                break
            batch.append(self._waiting.popleft())
        return batch

    def _close_and_count(self) -> None:
        """Worker thread."""
        try:
            if self._check is not None:
                self._check.close()
        finally:
            if self._session is not None:
                self._session.snapshot()

    def _report_warmup(self) -> None:
        report = self._session.take_warmup_report() if self._session is not None else None
        if report is not None:
            report_warmup(report, self._stats.collector, logger)

    async def _start_fingerprinting(self) -> None:
        """Nothing to start: the worker thread fingerprints."""

    def _fingerprinters(self) -> FingerprintWorkers | None:
        return None

    def _submit(self, doc: Document) -> Future[Fingerprint] | None:
        return None

    def _stop_fingerprinting(self) -> None:
        """Nothing to stop."""


class OffloadedChecker(InThreadChecker):
    """Fingerprints each page in a child process while the worker thread checks the ones
    before it (self-contained methods only)."""

    def __init__(self, config: NearDupConfig, worker: WorkerThread, stats: CrawlStats) -> None:
        super().__init__(config, worker, stats)
        self._workers: FingerprintWorkers | None = None

    async def _start_fingerprinting(self) -> None:
        await self._worker.run(self._start_workers)

    def _start_workers(self) -> None:
        """Worker thread: start the fingerprint processes now, not on the first page."""
        self._workers = FingerprintWorkers(self.config, self.config.scrapy.fingerprint_processes)
        self._workers.warm_up()

    def _fingerprinters(self) -> FingerprintWorkers | None:
        return self._workers

    def _submit(self, doc: Document) -> Future[Fingerprint] | None:
        return self._workers.submit(doc) if self._workers is not None else None

    def _stop_fingerprinting(self) -> None:
        if self._workers is not None:
            self._workers.close()
            self._workers = None
