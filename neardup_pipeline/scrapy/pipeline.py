"""Scrapy item pipeline: fingerprint each scraped page, look it up, then drop or tag it.

The pipeline turns an item into a Document, hands it to the PageChecker chosen at open (see
`neardup_pipeline.scrapy.check`) and acts on the verdict; the checker keeps the reactor free.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Self

from itemadapter import ItemAdapter
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from scrapy.utils.defer import deferred_from_coro

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.scrapy.check import PageChecker, choose_checker
from neardup_pipeline.scrapy.check.worker import WorkerThread
from neardup_pipeline.scrapy.stats import STATS_PREFIX, CrawlStats
from neardup_pipeline.text.extract import walk_in_use
from neardup_pipeline.verdict.deduplicator import Verdict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["STATS_PREFIX", "NearDupPipeline", "NearDuplicate"]

logger = logging.getLogger(__name__)


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
        self.stats = CrawlStats(crawler.stats)
        self._worker = WorkerThread()
        self._checker: PageChecker | None = None
        self._warned_fields: set[str] = set()
        self._promoted: set[str] = set()  # better copies to keep, not drop
        self._close_requested = False
        self._closing: Any = None  # the engine's close, when NEARDUP_ON_ERROR = 'fail' asked it

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("NEARDUP_ENABLED", True):
            raise NotConfigured("NEARDUP_ENABLED is False")
        # A bad setting fails here, at start, with the setting's name in the message.
        return cls(NearDupConfig.from_settings(crawler.settings), crawler)

    async def open_spider(self) -> None:
        self._worker.start()
        checker = choose_checker(self.config, self._worker, self.stats)
        try:
            await checker.open()
        except BaseException:
            self._worker.stop()  # no worker thread left behind
            raise
        self._checker = checker
        self.stats.publish(checker.counts())
        logger.info("neardup: HTML walk: %s", walk_in_use())

    async def close_spider(self) -> None:
        checker, self._checker = self._checker, None
        try:
            if checker is not None:
                await checker.close()
                self.stats.publish(checker.counts())
        finally:
            self._worker.stop()

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        self.stats.inc("checked")
        doc = self._document(adapter)
        if doc is None:
            self.stats.inc("no_content")
            self._set(adapter, self.config.scrapy.tag_fields.status, "no_content")
            logger.warning("neardup: item has neither %r nor %r; kept unchecked",
                           self.config.scrapy.html_field, self.config.scrapy.text_field)
            return item
        checker = self._checker
        assert checker is not None, "the spider is not open"
        try:
            checked = await checker.check(doc)
        except Exception as exc:
            self.stats.inc("errors")
            if self.config.scrapy.on_error == "fail":
                logger.error("neardup: check of %s failed, closing spider: %r", doc.doc_id, exc)
                raise CloseSpider(f"neardup_error: {exc}") from exc
            logger.exception("neardup: check of %s failed; item kept unchecked", doc.doc_id)
            self._set(adapter, self.config.scrapy.tag_fields.status, "error")
            return item
        self.stats.publish(checker.counts())
        if (checked.verdict.status == "unchecked" and self.config.scrapy.on_error == "fail"
                and checker.unavailable):
            self._close_unavailable()
        if checked.promoted:
            self._promoted.add(doc.doc_id)
        return self._act(item, adapter, checked.verdict)

    def _close_unavailable(self) -> None:
        """NEARDUP_ON_ERROR = 'fail' and the index is away: close the spider, once."""
        self.stats.inc("errors")
        if not self._close_requested and self.crawler.engine is not None:
            self._close_requested = True
            logger.error("neardup: Elasticsearch unavailable and NEARDUP_ON_ERROR = 'fail': "
                         "closing the spider (this item and any in flight pass unchecked, "
                         "their fingerprints spooled)")
            self._closing = deferred_from_coro(self.crawler.engine.close_spider_async(
                reason="neardup_es_unavailable"))

    def _act(self, item: Any, adapter: ItemAdapter, verdict: Verdict) -> Any:
        fields = self.config.scrapy.tag_fields
        if verdict.status != "ok":
            self.stats.inc(verdict.status)
            self._set(adapter, fields.status, verdict.status)
            return item
        if not verdict.is_duplicate:
            self.stats.inc("unique")
            if self.config.scrapy.action == "tag":
                self._tag(adapter, verdict)
            return item
        self.stats.inc("duplicates")
        self.stats.inc(f"duplicates/{verdict.method}")
        if verdict.doc_id in self._promoted:  # NEARDUP_CANONICAL = "best": the better copy
            self._promoted.discard(verdict.doc_id)  # kept in either mode, and says so
            self.stats.inc("kept_canonical")
            self._tag(adapter, verdict)
            self._set(adapter, fields.status, "canonical")
            return item
        if self.config.scrapy.action == "drop":
            self.stats.inc("dropped")
            raise NearDuplicate(verdict)
        self.stats.inc("tagged")
        self._tag(adapter, verdict)
        return item

    def _tag(self, adapter: ItemAdapter, verdict: Verdict) -> None:
        fields = self.config.scrapy.tag_fields
        self._set(adapter, fields.of, verdict.duplicate_of)
        self._set(adapter, fields.similarity, verdict.similarity)
        self._set(adapter, fields.method, verdict.method)
        self._set(adapter, fields.cluster, verdict.cluster)
        self._set(adapter, fields.status, "checked")

    def _document(self, adapter: ItemAdapter) -> Document | None:
        html = adapter.get(self.config.scrapy.html_field)
        text = adapter.get(self.config.scrapy.text_field)
        if html is None and text is None:
            return None
        url = adapter.get(self.config.scrapy.url_field)
        doc_id = adapter.get(self.config.scrapy.id_field) or url
        if not doc_id:
            doc_id = f"item-{uuid.uuid4().hex}"
            self.stats.inc("no_id")
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
            self.stats.inc("missing_fields")
            if field not in self._warned_fields:
                self._warned_fields.add(field)
                logger.warning(
                    "neardup: item class %s has no field %r; declare it or set "
                    "NEARDUP_TAG_FIELDS", type(adapter.item).__name__, field,
                )

