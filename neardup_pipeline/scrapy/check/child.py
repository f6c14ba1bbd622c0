"""The whole check in one child process, for self-contained methods: an embedded index (memory,
SQLite), or Elasticsearch; degraded mode and its spool (remote.py) on Elasticsearch and SQLite.
The child takes pages in order; the crawler's process only hands them over and waits."""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Mapping
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from neardup_pipeline.config import NearDupConfig, redact_backend
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.parallel.offload import CheckProcess, is_shared
from neardup_pipeline.scrapy.check.base import Checked
from neardup_pipeline.scrapy.check.degraded import degradable
from neardup_pipeline.scrapy.check.remote import (
    ELASTIC_CALLS,
    Closed,
    Opened,
    Reply,
    emit_records,
    forwarded_levels,
)
from neardup_pipeline.scrapy.check.worker import WorkerThread, on_reactor
from neardup_pipeline.scrapy.stats import CrawlStats

logger = logging.getLogger(__name__)


class ChildProcessChecker:
    """Queues each page in the check process; the verdict comes back to the reactor directly.

    On Elasticsearch the child runs the session and degraded mode (remote.py); its replies
    carry the server's state, the check's counts and the child's log records, applied here on
    the reactor."""

    def __init__(self, config: NearDupConfig, worker: WorkerThread, stats: CrawlStats) -> None:
        self.config = config
        self._worker = worker
        self._stats = stats
        self._process: CheckProcess | None = None
        self._shared = is_shared(config)
        self._remote = degradable(config)  # the session and degraded mode in the child
        self._unavailable = False
        self._counts: dict[str, int] = {}  # the running child's, as last reported
        self._dead: Counter[str] = Counter()  # what children that died had counted
        self._worker_note: Opened | None = None  # a restarted child's open, for the reactor
        self._died: int | None = None  # the process id of the last child seen dead

    @property
    def unavailable(self) -> bool:
        return self._unavailable  # (an embedded index does not go away)

    def counts(self) -> Mapping[str, int]:
        if not self._dead:
            return self._counts
        return dict(self._dead + Counter(self._counts))

    async def open(self) -> None:
        if self._remote:
            self._process = CheckProcess(
                self.config, ELASTIC_CALLS, (forwarded_levels(),), self._reopened,
                reopen_config=self.config.replace(es_start="degraded"),  # mid-crawl: no stop
            )
        else:
            self._process = CheckProcess(self.config)
        try:
            opened = await self._worker.run(self._process.open)
            stored = self._opened(opened) if self._remote else opened
        except BaseException:
            await self.close()
            raise
        logger.info(
            "neardup: methods=%s action=%s backend=%s (%s; checked in a child process)",
            ",".join(self.config.method_names), self.config.scrapy.action,
            redact_backend(self.config.backend),
            "unavailable: started degraded" if stored is None else f"{stored} fingerprints stored",
        )

    def _opened(self, opened: Opened) -> int | None:
        emit_records(opened.records)
        if opened.error is not None:
            raise opened.error
        self._unavailable = opened.unavailable
        self._counts = opened.counts
        return opened.stored

    def _reopened(self, opened: Any) -> None:
        """Worker thread: a restarted child opened the index again (and replayed the spool);
        the dead child's counts are kept, its log records lost with it."""
        assert isinstance(opened, Opened)
        dead = self._dead + Counter(self._counts)
        dead["child/restarts"] += 1
        self._counts = {}  # (the reactor may read meanwhile: at worst a count low for a page)
        self._dead = dead
        self._worker_note = opened

    async def check(self, doc: Document) -> Checked:
        """Queued now, checked in order in the child. A child that died is restarted and the
        page tried once more, on the worker thread."""
        assert self._process is not None
        pid = self._process.pid
        queued = self._process.submit(doc)
        reply: Any = None
        if queued is not None:
            with contextlib.suppress(BrokenProcessPool):  # restarted below
                reply = await on_reactor(queued)
        if reply is None:
            if self._shared and self._died != pid:  # once for the pages it failed together
                self._died = pid
                logger.error(
                    "neardup: the check process died; restarting it (the fingerprints it had "
                    "not yet sent to Elasticsearch are in the write log, see "
                    "docs/reliability.md), and %s is checked again", doc.doc_id,
                )
            reply = await self._worker.run(self._process.result, doc, queued)
            note, self._worker_note = self._worker_note, None
            if note is not None:
                self._opened(note)
        if not self._remote:
            return Checked(reply)
        assert isinstance(reply, Reply)
        emit_records(reply.records)
        self._unavailable = reply.unavailable
        if reply.counts is not None:
            self._counts = reply.counts
        if isinstance(reply.outcome, Exception):
            raise reply.outcome
        return reply.outcome

    async def close(self) -> None:
        if self._process is None:
            return
        process, self._process = self._process, None
        try:
            closed = await self._worker.run(process.close)
        except Exception:
            self._stats.inc("errors")
            logger.exception("neardup: closing the check process failed")
            return
        if isinstance(closed, Closed):
            emit_records(closed.records)
            if closed.counts:
                self._counts = closed.counts
            if closed.error is not None:
                self._stats.inc("errors")
                logger.error("neardup: closing the index failed: %s", closed.error)
