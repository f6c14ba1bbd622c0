"""Scrapy item pipeline: fingerprint each scraped page, look it up, then drop or tag it.

All fingerprinting and index I/O runs on one dedicated worker thread, so the reactor never blocks
and index operations stay in page order (read-after-write holds without extra locking).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Self

from itemadapter import ItemAdapter
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads
from twisted.python.threadpool import ThreadPool

from .anchors_warmup import AnchorsWarmup, WarmupReport, open_deduplicator, report_warmup
from .config import NearDupConfig
from .fingerprint import Document
from .index import open_index
from .verdict import Deduplicator, Verdict

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from .index.base import FingerprintIndex

logger = logging.getLogger(__name__)
STATS_PREFIX = "neardup/"


class NearDuplicate(DropItem):
    """A page dropped as a near-duplicate of an earlier one (Scrapy counts drops by reason)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(
            f"near-duplicate of {verdict.duplicate_of} ({verdict.method}, "
            f"similarity {verdict.similarity})",
            log_level="INFO",
        )
        self.verdict = verdict


class NearDupPipeline:
    """Checks every item against the fingerprint index (see DESIGN.md, "Scrapy")."""

    def __init__(self, config: NearDupConfig, crawler: Crawler) -> None:
        self.config = config
        self.crawler = crawler
        self.stats = crawler.stats
        self._pool: ThreadPool | None = None
        self._index: FingerprintIndex | None = None
        self._dedup: Deduplicator | AnchorsWarmup | None = None
        self._warmup_report: WarmupReport | None = None  # handed from the worker to the reactor
        self._warned_fields: set[str] = set()
        self._shutdown_trigger: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("NEARDUP_ENABLED", True):
            raise NotConfigured("NEARDUP_ENABLED is False")
        # A bad setting fails here, at start, with the setting's name in the message.
        return cls(NearDupConfig.from_settings(crawler.settings), crawler)

    async def open_spider(self) -> None:
        from twisted.internet import reactor

        self._pool = ThreadPool(minthreads=1, maxthreads=1, name="neardup")
        self._pool.start()
        # Stops the pool if the reactor shuts down before close_spider; removed there, since
        # stopping a pool twice raises AlreadyQuit at shutdown.
        core: Any = reactor  # IReactorCore's zope-style stubs confuse mypy
        self._shutdown_trigger = core.addSystemEventTrigger("during", "shutdown", self._pool.stop)
        self._index = await self._in_worker(open_index, self.config.backend, self.config)
        self._dedup = await self._in_worker(open_deduplicator, self._index, self.config)
        logger.info(
            "neardup: methods=%s action=%s backend=%s (%d fingerprints stored)",
            ",".join(self.config.methods), self.config.action,
            _redact(self.config.backend), await self._in_worker(self._index.count),
        )

    async def close_spider(self) -> None:
        try:
            if isinstance(self._dedup, AnchorsWarmup) and self._dedup.pages:
                try:  # a crawl shorter than the warm-up: fit on what it saw
                    await self._in_worker(self._finish_warmup)
                except Exception:
                    self._inc("errors")
                    logger.exception("neardup: anchors fit at the end of the crawl failed")
                self._report_warmup()
            if self._index is not None:
                await self._in_worker(self._index.close)
        finally:
            if self._shutdown_trigger is not None:
                from twisted.internet import reactor

                core: Any = reactor
                core.removeSystemEventTrigger(self._shutdown_trigger)
                self._shutdown_trigger = None
            if self._pool is not None:
                self._pool.stop()
                self._pool = None

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        self._inc("checked")
        doc = self._document(adapter)
        if doc is None:
            self._inc("no_content")
            self._set(adapter, self.config.tag_fields.status, "no_content")
            logger.warning("neardup: item has neither %r nor %r; kept unchecked",
                           self.config.html_field, self.config.text_field)
            return item
        try:
            verdict = await self._in_worker(self._check, doc)
        except Exception as exc:
            self._inc("errors")
            if self.config.on_error == "fail":
                logger.error("neardup: check of %s failed, closing spider: %r", doc.doc_id, exc)
                raise CloseSpider(f"neardup_error: {exc}") from exc
            logger.exception("neardup: check of %s failed; item kept unchecked", doc.doc_id)
            self._set(adapter, self.config.tag_fields.status, "error")
            return item
        return self._act(item, adapter, verdict)

    def _check(self, doc: Document) -> Verdict:
        assert self._dedup is not None
        verdict = self._dedup.process(doc)
        if isinstance(self._dedup, AnchorsWarmup) and self._dedup.ready:
            self._finish_warmup()
        add_page = getattr(self._index, "add_page", None)
        if add_page is not None and self.config.pages_index and verdict.status == "ok":
            fp_text, title, _ = self._dedup.fingerprinter.text_of(doc)
            add_page({
                "url": doc.url, "title": title, "text": fp_text,
                "cluster_id": verdict.cluster, "is_canonical": not verdict.is_duplicate,
                "duplicate_of": verdict.duplicate_of, "similarity": verdict.similarity,
                "method": verdict.method,
            })
        return verdict

    def _finish_warmup(self) -> None:
        """Worker thread: fit the anchors model and check the warm-up pages with it."""
        assert isinstance(self._dedup, AnchorsWarmup)
        self._dedup, self._warmup_report = self._dedup.finish()

    def _report_warmup(self) -> None:
        report, self._warmup_report = self._warmup_report, None
        if report is not None:
            report_warmup(report, self.stats, logger)

    def _act(self, item: Any, adapter: ItemAdapter, verdict: Verdict) -> Any:
        self._report_warmup()
        fields = self.config.tag_fields
        if verdict.status != "ok":
            self._inc(verdict.status)
            self._set(adapter, fields.status, verdict.status)
            return item
        if not verdict.is_duplicate:
            self._inc("unique")
            if self.config.action == "tag":
                self._tag(adapter, verdict)
            return item
        self._inc("duplicates")
        self._inc(f"duplicates/{verdict.method}")
        if self.config.action == "drop":
            self._inc("dropped")
            raise NearDuplicate(verdict)
        self._inc("tagged")
        self._tag(adapter, verdict)
        return item

    def _tag(self, adapter: ItemAdapter, verdict: Verdict) -> None:
        fields = self.config.tag_fields
        self._set(adapter, fields.of, verdict.duplicate_of)
        self._set(adapter, fields.similarity, verdict.similarity)
        self._set(adapter, fields.method, verdict.method)
        self._set(adapter, fields.cluster, verdict.cluster)
        self._set(adapter, fields.status, "checked")

    def _document(self, adapter: ItemAdapter) -> Document | None:
        html = adapter.get(self.config.html_field)
        text = adapter.get(self.config.text_field)
        if html is None and text is None:
            return None
        url = adapter.get(self.config.url_field)
        doc_id = adapter.get(self.config.id_field) or url
        if not doc_id:
            doc_id = f"item-{uuid.uuid4().hex}"
            self._inc("no_id")
        return Document(
            str(doc_id),
            html=html if isinstance(html, (str, bytes)) else None if html is None else str(html),
            text=text if isinstance(text, str) or text is None else str(text),
            url=str(url) if url else None,
        )

    def _set(self, adapter: ItemAdapter, field: str, value: Any) -> None:
        """Set a tag field; an Item class that does not declare it is warned about once."""
        try:
            adapter[field] = value
        except KeyError:
            self._inc("missing_fields")
            if field not in self._warned_fields:
                self._warned_fields.add(field)
                logger.warning(
                    "neardup: item class %s has no field %r; declare it or set "
                    "NEARDUP_TAG_FIELDS", type(adapter.item).__name__, field,
                )

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(STATS_PREFIX + key)

    async def _in_worker(self, func: Callable[..., Any], *args: Any) -> Any:
        from twisted.internet import reactor

        assert self._pool is not None
        deferred = threads.deferToThreadPool(reactor, self._pool, func, *args)
        return await maybe_deferred_to_future(deferred)


def _redact(backend: str) -> str:
    """A backend spec fit for logs: no user:password in URLs."""
    if "@" in backend and "://" in backend:
        scheme, rest = backend.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return backend
