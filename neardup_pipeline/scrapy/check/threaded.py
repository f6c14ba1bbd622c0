"""Checks with the index in this process: its I/O on the worker thread, so the reactor never
blocks and index operations stay in page order. Pages are fingerprinted on that thread
(InThreadChecker) or in child processes while the thread decides (OffloadedChecker). A shared
index (Elasticsearch) gets degraded mode wrapped around the check.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future

from neardup_pipeline.config import NearDupConfig, redact_backend
from neardup_pipeline.errors import IndexUnavailable
from neardup_pipeline.fingerprint import Document, Fingerprint
from neardup_pipeline.methods.anchors.warmup import report_warmup
from neardup_pipeline.parallel.offload import FingerprintWorkers
from neardup_pipeline.scrapy.check.base import Checked, IndexCheck
from neardup_pipeline.scrapy.check.degraded import DegradedMode
from neardup_pipeline.scrapy.check.session import IndexSession
from neardup_pipeline.scrapy.check.worker import WorkerThread
from neardup_pipeline.scrapy.spool import Spool, spool_location
from neardup_pipeline.scrapy.stats import CrawlStats

logger = logging.getLogger(__name__)


class InThreadChecker:
    """Fingerprints and checks each page on the worker thread."""

    def __init__(self, config: NearDupConfig, worker: WorkerThread, stats: CrawlStats) -> None:
        self.config = config
        self._worker = worker
        self._stats = stats
        self._session: IndexSession | None = None
        self._check: IndexCheck | None = None

    @property
    def unavailable(self) -> bool:
        return self._check is not None and self._check.unavailable

    def counts(self) -> Mapping[str, int]:
        return {} if self._session is None else self._session.counts_view

    async def open(self) -> None:
        spool = (Spool(spool_location(self.config.scrapy.spool_path)) if self._shared()
                 else None)
        await self._start_fingerprinting()
        self._session = session = IndexSession(self.config, self._fingerprinters())
        self._check = session if spool is None else DegradedMode(session, spool, self.config)
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
        pending = self._submit(doc)  # fingerprinting starts now, while the worker decides
        checked = await self._worker.run(self._check_and_count, doc, pending)
        self._report_warmup()
        return checked

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

    def _check_and_count(self, doc: Document, pending: Future[Fingerprint] | None) -> Checked:
        """Worker thread."""
        assert self._check is not None and self._session is not None
        try:
            return self._check.check(doc, pending)
        finally:
            self._session.snapshot()

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

    def _shared(self) -> bool:
        """Elasticsearch: an index that can go away while the crawl goes on."""
        return self.config.backend.startswith(("http://", "https://"))

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
