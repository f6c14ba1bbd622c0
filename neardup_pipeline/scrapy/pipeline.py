"""Scrapy item pipeline: fingerprint each scraped page, look it up, then drop or tag it.

The pipeline turns an item into a Document, hands it to the PageChecker chosen at open (see
`neardup_pipeline.scrapy.check`) and acts on the verdict; the checker keeps the reactor free.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any, Self

from itemadapter import ItemAdapter
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from scrapy.utils.defer import deferred_from_coro

from neardup_pipeline.config import NearDupConfig, unknown_scrapy_settings
from neardup_pipeline.errors import (
    AccessRefused,
    CaFileError,
    CertificateUntrusted,
    ConfigError,
    ConnectionSetupError,
    IndexDamaged,
    IndexDiskFull,
    IndexLocked,
    IndexParamsError,
    IndexUnavailable,
    NearDupError,
    NotElasticsearch,
    TemplatesMissing,
    TlsMismatch,
    UnsupportedServer,
)
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.scrapy.check import PageChecker, choose_checker
from neardup_pipeline.scrapy.check.worker import WorkerThread
from neardup_pipeline.scrapy.late import LateDuplicates
from neardup_pipeline.scrapy.refused import RefusedSettings
from neardup_pipeline.scrapy.stats import STATS_PREFIX, CrawlStats, FinishReason
from neardup_pipeline.text.decode import decode_html
from neardup_pipeline.text.extract import walk_in_use
from neardup_pipeline.text.sniff import binary_kind
from neardup_pipeline.verdict.deduplicator import Verdict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["STATS_PREFIX", "NearDupPipeline", "NearDuplicate"]

logger = logging.getLogger(__name__)


class NearDuplicate(DropItem):
    """A page dropped as a near-duplicate of an earlier one (Scrapy counts drops by reason).

    Its message is one line naming both pages, never the page itself: the add-on's log
    formatter logs it without the item (scrapy/logformatter.py).
    """

    def __init__(self, verdict: Verdict, page: str | None = None) -> None:
        super().__init__(
            f"{page or verdict.doc_id} is a near-duplicate of {verdict.duplicate_of} "
            f"({verdict.method}, similarity {verdict.similarity})",
            log_level="INFO",
        )
        self.verdict = verdict


class NearDupPipeline:
    """Checks every item against the fingerprint index (see DESIGN.md, "Scrapy")."""

    def __init__(self, config: NearDupConfig, crawler: Crawler) -> None:
        self.config = config
        self.crawler = crawler
        self.stats = CrawlStats(crawler.stats)
        self._finish = FinishReason(crawler.stats, crawler.signals)  # neardup_incomplete
        self._worker = WorkerThread()
        self._checker: PageChecker | None = None
        self._warned_fields: set[str] = set()
        self._warned: set[str] = set()  # item problems already reported (once each)
        self._promoted: set[str] = set()  # better copies to keep, not drop
        self._close_requested = False
        self._closing: Any = None  # the engine's close, when NEARDUP_ON_ERROR = 'fail' asked it
        self._late = LateDuplicates(crawler, self.stats, config.scrapy.late_duplicates_file)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | RefusedSettings:
        names = (name for name in crawler.settings if isinstance(name, str))
        for name, closest in unknown_scrapy_settings(names).items():
            hint = f"; did you mean {closest}?" if closest else ""
            logger.warning("neardup: unknown setting %s is ignored%s (docs/settings.md lists "
                           "the NEARDUP_* settings)", name, hint)
        if not crawler.settings.getbool("NEARDUP_ENABLED", True):
            raise NotConfigured("NEARDUP_ENABLED is False")
        try:
            config = NearDupConfig.from_settings(crawler.settings)
        except ConfigError as exc:  # named in the log at open_spider, which closes the crawl
            return RefusedSettings(exc)
        return cls(config, crawler)

    async def open_spider(self) -> None:
        self._late.open()
        self._worker.start()
        checker = choose_checker(self.config, self._worker, self.stats)
        try:
            await checker.open()
        except NearDupError as exc:
            # Scrapy's way for a component that cannot start: CloseSpider from open_spider
            # closes the crawl cleanly with this reason, before a page is fetched.
            self._worker.stop()
            reason, hint = _start_failure(exc)
            logger.error("neardup: %s%s; the spider closes (%s)", exc, hint, reason)
            raise CloseSpider(reason) from exc
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
                self._finish.note(checker.counts())
        finally:
            self._worker.stop()
            self._late.close()

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        self.stats.inc("items")  # every item; `checked`: those compared with the index
        unchecked = self._unchecked_status(adapter)
        if unchecked is not None:  # kept, tagged, counted; never compared nor indexed
            self.stats.inc(unchecked)
            self._set(adapter, self.config.scrapy.tag_fields.status, unchecked)
            return self._leaving(adapter, item)
        doc = self._document(adapter)
        checker = self._checker
        assert checker is not None, "the spider is not open"
        try:
            checked = await checker.check(doc)
        except ConnectionSetupError as exc:  # refused or TLS: no later page can do better
            self._close_refused(exc)
            self._set(adapter, self.config.scrapy.tag_fields.status, "error")
            return self._leaving(adapter, item)
        except Exception as exc:
            self.stats.inc("errors")
            if self.config.scrapy.on_error == "fail":
                logger.error("neardup: check of %s failed, closing spider: %r", doc.doc_id, exc)
                raise CloseSpider(f"neardup_error: {exc}") from exc
            logger.exception("neardup: check of %s failed; item kept unchecked", doc.doc_id)
            self._set(adapter, self.config.scrapy.tag_fields.status, "error")
            return self._leaving(adapter, item)
        self.stats.publish(checker.counts())
        if (checked.verdict.status == "unchecked" and self.config.scrapy.on_error == "fail"
                and checker.unavailable):
            self._close_unavailable()
        if checked.promoted:
            self._promoted.add(doc.doc_id)
        self._late.report(checked.verdict)
        return self._leaving(adapter, self._act(item, adapter, checked.verdict, doc))

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

    def _close_refused(self, exc: ConnectionSetupError) -> None:
        """Elasticsearch refuses (credentials, a privilege) or TLS does not match: say why
        once and close the spider, whatever NEARDUP_ON_ERROR says (every page would fail)."""
        self.stats.inc("errors")
        if not self._close_requested and self.crawler.engine is not None:
            self._close_requested = True
            reason, _ = _start_failure(exc)
            logger.error("neardup: %s; closing the spider (%s): this item and any in flight "
                         "are kept unchecked, tagged 'error'", exc, reason)
            self._closing = deferred_from_coro(self.crawler.engine.close_spider_async(
                reason=reason))

    def _act(self, item: Any, adapter: ItemAdapter, verdict: Verdict, doc: Document) -> Any:
        fields = self.config.scrapy.tag_fields
        if verdict.status != "ok":
            self.stats.inc(verdict.status)
            self._set(adapter, fields.status, verdict.status)
            return item
        self.stats.inc("checked")
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
            self._leaving(adapter, item)
            raise NearDuplicate(verdict, doc.url)
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

    def _unchecked_status(self, adapter: ItemAdapter) -> str | None:
        """Why an item cannot be checked ("no_content", "bad_field", "not_html"), or None.

        A field of the wrong type is never turned into text with str(): every Response or
        number would read alike, and all but the first page would be dropped as copies.
        """
        settings = self.config.scrapy
        html = adapter.get(settings.html_field)
        text = adapter.get(settings.text_field)
        if html is None and text is None:
            self._warn_once("no_content", "neardup: item has neither %r nor %r; such items "
                            "are kept unchecked, counted under neardup/no_content",
                            settings.html_field, settings.text_field)
            return "no_content"
        for name, value, types, setting in (
            (settings.html_field, html, (str, bytes), "NEARDUP_HTML_FIELD"),
            (settings.text_field, text, (str,), "NEARDUP_TEXT_FIELD"),
        ):
            if value is not None and not isinstance(value, types):
                self._warn_once(
                    f"bad:{name}",
                    "neardup: item field %r holds a %s, not %s (%s names the field); such "
                    "items are kept unchecked, tagged %s = 'bad_field', counted under "
                    "neardup/bad_field", name, type(value).__name__,
                    " or ".join(t.__name__ for t in types), setting, settings.tag_fields.status,
                )
                return "bad_field"
        body = html if html is not None and (text is None or not str(text).strip()) else text
        kind = None if body is None else binary_kind(body)
        if kind is not None:
            url = adapter.get(settings.url_field)
            self._warn_once(
                "not_html", "neardup: %s is not text (%s); such items are kept unchecked, "
                "tagged %s = 'not_html', counted under neardup/not_html", url, kind,
                settings.tag_fields.status,
            )
            logger.debug("neardup: %s is not text (%s)", url, kind)
            return "not_html"
        return None

    def _document(self, adapter: ItemAdapter) -> Document:
        settings = self.config.scrapy
        html = adapter.get(settings.html_field)
        text = adapter.get(settings.text_field)
        url = adapter.get(settings.url_field)
        doc_id = adapter.get(settings.id_field) or url
        if not doc_id:
            doc_id = f"item-{uuid.uuid4().hex}"
            self.stats.inc("no_id")
            missing = [f for f in dict.fromkeys((settings.id_field, settings.url_field))
                       if not adapter.get(f)]
            self._warn_once(
                "no_id", "neardup: item has no %s (NEARDUP_ID_FIELD names the field that "
                "identifies a page, NEARDUP_URL_FIELD its URL): it is checked under a random id "
                "that neardup_of cannot lead back to; counted under neardup/no_id",
                " or ".join(repr(f) for f in missing),
            )
        return Document(str(doc_id), html=html, text=text, url=str(url) if url else None)

    def _leaving(self, adapter: ItemAdapter, item: Any) -> Any:
        """The item as it leaves the pipeline: without its HTML when NEARDUP_KEEP_HTML = False;
        else with HTML given as bytes as text, so that a JSON or CSV feed can write it (bytes
        end a JSON feed's item): decoded as neardup read it, or for bytes that are not text (an
        image) one character per byte (latin-1: `html.encode("latin-1")` gives them back)."""
        field = self.config.scrapy.html_field
        if self.config.scrapy.keep_html:
            html = adapter.get(field)
            if isinstance(html, bytes):
                text = html.decode("latin-1") if binary_kind(html) else decode_html(html)[0]
                with contextlib.suppress(KeyError, TypeError, AttributeError):  # a frozen item
                    adapter[field] = text
            return item
        if field in adapter:
            try:
                del adapter[field]  # a dataclass or attrs item keeps the field, set to None
            except (KeyError, TypeError, NotImplementedError):  # an item that cannot lose it
                adapter[field] = None
        return item

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, *args)

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


# Why a crawl neardup could not start, by the error's class, the first that matches: one finish
# reason per cause, so a monitor of finish reasons can tell them apart.
START_FAILURES: tuple[tuple[type[NearDupError] | tuple[type[NearDupError], ...], str], ...] = (
    (IndexLocked, "neardup_index_locked"),  # an SQLite file another process holds
    (IndexDiskFull, "neardup_index_disk_full"),
    (IndexDamaged, "neardup_index_damaged"),
    (IndexUnavailable, "neardup_index_unavailable"),
    (IndexParamsError, "neardup_index_params"),
    (AccessRefused, "neardup_es_access_refused"),
    ((CertificateUntrusted, TlsMismatch, CaFileError), "neardup_es_tls"),
    (TemplatesMissing, "neardup_es_templates"),
    (NotElasticsearch, "neardup_es_not_elasticsearch"),
    (UnsupportedServer, "neardup_es_unsupported"),
    (ConnectionSetupError, "neardup_es_setup"),
    (ConfigError, "neardup_bad_setting"),  # a setting the index cannot start with (a path)
)


def _start_failure(exc: NearDupError) -> tuple[str, str]:
    """The finish reason of a crawl neardup could not start, and what the operator can do."""
    reason = next((r for kinds, r in START_FAILURES if isinstance(exc, kinds)),
                  "neardup_not_started")
    hint = (" (NEARDUP_ES_START = 'degraded' starts without it)"
            if reason == "neardup_index_unavailable" else "")
    return reason, hint
