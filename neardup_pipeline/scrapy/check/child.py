"""The whole check in one child process: an embedded index (memory, SQLite) with self-contained
methods. The child takes pages in order; the crawler's process only hands them over and waits."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures.process import BrokenProcessPool

from neardup_pipeline.config import NearDupConfig, redact_backend
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.parallel.offload import CheckProcess
from neardup_pipeline.scrapy.check.base import Checked
from neardup_pipeline.scrapy.check.worker import WorkerThread, on_reactor
from neardup_pipeline.scrapy.stats import CrawlStats

logger = logging.getLogger(__name__)


class ChildProcessChecker:
    """Queues each page in the check process; the verdict comes back to the reactor directly."""

    def __init__(self, config: NearDupConfig, worker: WorkerThread, stats: CrawlStats) -> None:
        self.config = config
        self._worker = worker
        self._stats = stats
        self._process: CheckProcess | None = None

    @property
    def unavailable(self) -> bool:
        return False  # an embedded index does not go away

    def counts(self) -> Mapping[str, int]:
        return {}

    async def open(self) -> None:
        self._process = CheckProcess(self.config)
        try:
            stored = await self._worker.run(self._process.open)
        except BaseException:
            await self.close()
            raise
        logger.info(
            "neardup: methods=%s action=%s backend=%s (%d fingerprints stored; checked in a "
            "child process)", ",".join(self.config.method_names), self.config.scrapy.action,
            redact_backend(self.config.backend), stored,
        )

    async def check(self, doc: Document) -> Checked:
        """Queued now, checked in order in the child. A child that died is restarted and the
        page tried once more, on the worker thread."""
        assert self._process is not None
        queued = self._process.submit(doc)
        if queued is not None:
            try:
                return Checked(await on_reactor(queued))
            except BrokenProcessPool:
                pass
        return Checked(await self._worker.run(self._process.result, doc, queued))

    async def close(self) -> None:
        if self._process is None:
            return
        process, self._process = self._process, None
        try:
            await self._worker.run(process.close)
        except Exception:
            self._stats.inc("errors")
            logger.exception("neardup: closing the check process failed")
