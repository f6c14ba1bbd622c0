"""Scrapy item pipeline: fingerprint each scraped page, look it up, then drop or tag it.

On an embedded index (memory, SQLite) with self-contained methods, one child process owns the whole
check and takes pages in order (NEARDUP_FINGERPRINT_PROCESSES); the crawler's process only waits.
Otherwise index I/O runs on one dedicated worker thread, so the reactor never blocks and index
operations stay in page order (read-after-write holds without extra locking), and pages are
fingerprinted in a child process, else on that thread.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, Self, cast

from itemadapter import ItemAdapter
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import threads
from twisted.internet.defer import Deferred
from twisted.python.threadpool import ThreadPool

from neardup_pipeline.config import NearDupConfig, redact_backend
from neardup_pipeline.errors import IndexUnavailable
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.index import open_index
from neardup_pipeline.methods.anchors.warmup import (
    AnchorsWarmup,
    WarmupReport,
    open_deduplicator,
    report_warmup,
)
from neardup_pipeline.parallel.offload import (
    CheckProcess,
    FingerprintWorkers,
    can_check_in_child,
    can_offload,
)
from neardup_pipeline.scrapy.spool import Spool
from neardup_pipeline.verdict.canonical import page_date
from neardup_pipeline.verdict.deduplicator import Deduplicator, Verdict

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from neardup_pipeline.index.base import FingerprintIndex
    from neardup_pipeline.index.elastic.pages import PagesKeeper
    from neardup_pipeline.index.elastic.store import ElasticIndex

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
        # Reliability (Elasticsearch only): degraded while the server is away; pages pass
        # "unchecked" and their fingerprints wait in the spool. Worker-thread state, except the
        # counts snapshot, which the reactor copies into the stats.
        self._spool: Spool | None = None
        self._degraded_since: float | None = None
        self._last_probe = 0.0
        self._fingerprinter: Fingerprinter | None = None  # degraded start: no index yet
        self._counts: Counter[str] = Counter()
        self._counts_view: dict[str, int] = {}
        self._close_requested = False
        self._closing: Any = None  # the engine's close, when NEARDUP_ON_ERROR = 'fail' asked it
        self._pages: PagesKeeper | None = None  # the content index (NEARDUP_PAGES_INDEX)
        self._promoted: set[str] = set()  # worker -> reactor: better copies to keep, not drop
        self._workers: FingerprintWorkers | None = None  # child processes that fingerprint
        self._checker: CheckProcess | None = None  # a child that owns the whole check (embedded)
        self._warned_canonical = False

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
        if self.config.backend.startswith(("http://", "https://")):
            self._spool = Spool(self.config.spool_path)
        if self.config.fingerprint_processes and can_check_in_child(self.config):
            await self._open_checker()
            return
        if self.config.fingerprint_processes and can_offload(self.config):
            await self._in_worker(self._start_workers)
        try:
            await self._in_worker(self._open_index)
        except IndexUnavailable as exc:
            if self.config.es_start != "degraded":
                logger.error("neardup: %s (NEARDUP_ES_START = 'degraded' starts without it)", exc)
                if self._spool is not None:
                    self._spool.close()
                    self._spool = None
                await self.close_spider()  # no worker thread left behind
                raise
            await self._in_worker(self._start_degraded, exc)
        else:
            logger.info(
                "neardup: methods=%s action=%s backend=%s (%d fingerprints stored)",
                ",".join(self.config.method_names), self.config.action,
                redact_backend(self.config.backend), await self._in_worker(self._count),
            )
        self._publish_counts()

    async def _open_checker(self) -> None:
        """An embedded index and self-contained methods: one child owns the whole check."""
        self._checker = CheckProcess(self.config)
        try:
            stored = await self._in_worker(self._checker.open)
        except BaseException:
            await self.close_spider()
            raise
        logger.info(
            "neardup: methods=%s action=%s backend=%s (%d fingerprints stored; checked in a "
            "child process)", ",".join(self.config.method_names), self.config.action,
            redact_backend(self.config.backend), stored,
        )
        self._publish_counts()

    async def close_spider(self) -> None:
        try:
            if self._checker is not None:
                checker, self._checker = self._checker, None
                try:
                    await self._in_worker(checker.close)
                except Exception:
                    self._inc("errors")
                    logger.exception("neardup: closing the check process failed")
            if isinstance(self._dedup, AnchorsWarmup) and self._dedup.pages:
                try:  # a crawl shorter than the warm-up: fit on what it saw
                    await self._in_worker(self._finish_warmup)
                except Exception:
                    self._inc("errors")
                    logger.exception("neardup: anchors fit at the end of the crawl failed")
                self._report_warmup()
            await self._in_worker(self._close_index)
            self._publish_counts()
        finally:
            if self._workers is not None:
                self._workers.close()
                self._workers = None
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
            if self._checker is not None:  # queued now, checked in order in the child
                verdict = await self._checked(doc, self._checker.submit(doc))
            else:  # fingerprinting starts now, in a child, while the worker decides
                pending = self._workers.submit(doc) if self._workers is not None else None
                verdict = await self._in_worker(self._check, doc, pending)
        except Exception as exc:
            self._inc("errors")
            if self.config.on_error == "fail":
                logger.error("neardup: check of %s failed, closing spider: %r", doc.doc_id, exc)
                raise CloseSpider(f"neardup_error: {exc}") from exc
            logger.exception("neardup: check of %s failed; item kept unchecked", doc.doc_id)
            self._set(adapter, self.config.tag_fields.status, "error")
            return item
        self._publish_counts()
        if verdict.status == "unchecked" and self.config.on_error == "fail" and (
            self._spool is not None and self._degraded_since is not None
        ):
            self._inc("errors")
            if not self._close_requested and self.crawler.engine is not None:
                self._close_requested = True
                logger.error("neardup: Elasticsearch unavailable and NEARDUP_ON_ERROR = 'fail': "
                             "closing the spider (this item and any in flight pass unchecked, "
                             "their fingerprints spooled)")
                self._closing = deferred_from_coro(self.crawler.engine.close_spider_async(
                    reason="neardup_es_unavailable"))
        return self._act(item, adapter, verdict)

    def _start_workers(self) -> None:
        """Worker: start the fingerprint processes now, not on the first page."""
        self._workers = FingerprintWorkers(self.config, self.config.fingerprint_processes)
        self._workers.warm_up()

    def _fingerprint(
        self, doc: Document, pending: Future[Fingerprint] | None, fingerprinter: Fingerprinter
    ) -> Fingerprint:
        """Worker: the page's fingerprint, from a child process when there is one."""
        if self._workers is not None:
            return self._workers.result(doc, pending)
        return fingerprinter.fingerprint(doc, None)

    def _open_index(self) -> None:
        """Worker: open the index and the deduplicator; replay what an earlier crawl spooled."""
        index = open_index(self.config.backend, self.config)
        try:
            dedup = open_deduplicator(index, self.config)
        except BaseException:
            index.close()
            raise
        self._index, self._dedup = index, dedup
        if self._spool is not None:
            self._spool.bind(dedup.fingerprinter.params())
            if self._spool.pending():
                self._replay()

    def _count(self) -> int:
        assert self._index is not None
        return self._index.count()

    def _start_degraded(self, exc: Exception) -> None:
        """Worker: no server at start; fingerprint alone and spool until it answers."""
        self._fingerprinter = Fingerprinter(self.config)  # anchors without a model: ConfigError
        if self._spool is not None:
            self._spool.bind(self._fingerprinter.params())
        self._enter_degraded(exc)

    def _close_index(self) -> None:
        """Worker: last replay, flush, close; what the server cannot take stays spooled."""
        if self._degraded_since is not None:
            self._last_probe = 0.0  # probe now, whatever the interval
            self._recover()
        try:
            if self._index is not None:
                self._index.close()
        except IndexUnavailable as exc:
            take = getattr(self._index, "take_pending", None)
            actions = take() if take is not None else []
            if self._spool is not None and actions:
                self._spool.add_actions(actions)
                self._counts["spool/actions"] += len(actions)
            logger.warning("neardup: closing without the server (%s): %d buffered writes "
                           "spooled", exc, len(actions))
        finally:
            if self._spool is not None:
                pending = self._spool.pending()
                if pending:
                    self._counts["spool/pending"] = pending
                    logger.warning(
                        "neardup: %d fingerprints and writes remain spooled in %s; the next "
                        "crawl with this NEARDUP_SPOOL_PATH replays them when the server answers",
                        pending, self._spool.path,
                    )
                self._spool.close()
            self._snapshot()

    def _check(self, doc: Document, pending: Future[Fingerprint] | None = None) -> Verdict:
        """Worker: the verdict, or while the server is away, "unchecked" and the spool."""
        try:
            if self._degraded_since is not None and not self._recover():
                return self._spool_page(doc, pending)
            try:
                return self._check_online(doc, pending)
            except IndexUnavailable as exc:
                if self._spool is None:
                    raise
                self._enter_degraded(exc)
                return self._spool_page(doc, pending)
        finally:
            self._snapshot()

    def _enter_degraded(self, exc: Exception) -> None:
        self._degraded_since = self._last_probe = time.monotonic()
        self._counts["es/outages"] += 1
        logger.error(
            "neardup: Elasticsearch unavailable (%s); items pass with %s = 'unchecked' and their "
            "fingerprints are spooled to %s (checked every %g s)", exc,
            self.config.tag_fields.status, self.config.spool_path, self.config.es_reprobe_seconds,
        )

    def _recover(self) -> bool:
        """Worker, degraded: at most every es_reprobe_seconds, probe; when back, replay."""
        now = time.monotonic()
        if now - self._last_probe < self.config.es_reprobe_seconds:
            return False
        self._last_probe = now
        try:
            if self._index is None:
                self._open_index()  # replays the spool
            else:
                ping = getattr(self._index, "ping", None)
                if ping is not None and not ping(min(self.config.es_request_timeout, 2.0)):
                    return False
                self._replay()
        except IndexUnavailable as exc:
            logger.warning("neardup: Elasticsearch still unavailable: %s", exc)
            return False
        assert self._degraded_since is not None
        self._counts["es/degraded_ms"] += int((time.monotonic() - self._degraded_since) * 1000)
        self._degraded_since = None
        logger.warning("neardup: Elasticsearch answers again; spool replayed")
        return True

    def _spool_page(self, doc: Document, pending: Future[Fingerprint] | None = None) -> Verdict:
        """Worker: fingerprint without the index (DF-based methods see no corpus) and spool."""
        fingerprinter = self._fingerprinter or getattr(self._dedup, "fingerprinter", None)
        assert fingerprinter is not None and self._spool is not None
        fp = self._fingerprint(doc, pending, fingerprinter)
        if fp.status != "ok":
            return Verdict(doc.doc_id, "no_text", reason="no words to compare")
        self._spool.add_page(
            doc.doc_id, doc.url, fingerprinter.encode(fp), fp.keys, language=fp.language,
            word_count=fp.word_count, content_hash=fp.content_hash,
        )
        self._counts["spooled"] += 1
        return Verdict(doc.doc_id, "unchecked", reason="Elasticsearch unavailable: spooled")

    def _replay(self) -> None:
        """Worker: send spooled writes, then check and record spooled pages in their order."""
        assert self._spool is not None and self._index is not None
        actions = self._spool.actions()
        requeue = getattr(self._index, "requeue", None)
        if actions and requeue is not None:
            requeue([a for _, a in actions])
            self._index.flush()
            self._spool.remove_actions([seq for seq, _ in actions])
            self._counts["replayed/actions"] += len(actions)
        dedup = self._dedup if isinstance(self._dedup, Deduplicator) else getattr(
            self._dedup, "pre", None)
        if dedup is None:
            return  # anchors warm-up without other methods: nothing can check them yet
        done: list[int] = []
        try:
            for page in self._spool.pages():
                fp = Fingerprint(
                    page.doc_id, "ok", dedup.fingerprinter.decode(page.signatures), page.keys,
                    page.language, page.word_count, content_hash=page.content_hash,
                )
                verdict = dedup.verdict_for(fp)
                dedup.count_words(fp)
                if not verdict.is_duplicate or self.config.index_duplicates:
                    dedup.record(fp, verdict, page.url)
                done.append(page.seq)
                self._counts["replayed"] += 1
                if verdict.is_duplicate:
                    self._counts["replayed/duplicates"] += 1
                    logger.info("neardup: replayed %s is a near-duplicate of %s (%s, %s); its "
                                "item passed unchecked", page.doc_id, verdict.duplicate_of,
                                verdict.method, verdict.similarity)
                if len(done) >= 100:
                    self._index.flush()
                    self._spool.remove_pages(done)
                    done = []
            self._index.flush()
        finally:
            # Recorded but unflushed pages sit in the index buffer, spooled at close if need be.
            self._spool.remove_pages(done)

    def _snapshot(self) -> None:
        counters = getattr(self._index, "counters", None)
        view = {f"es/{k}": int(v) for k, v in (counters or {}).items()}
        view.update(self._counts)
        self._counts_view = view  # one reference swap: the reactor reads a consistent dict

    def _publish_counts(self) -> None:
        if self.stats is not None:
            for key, value in self._counts_view.items():
                self.stats.set_value(STATS_PREFIX + key, value)

    def _check_online(self, doc: Document, pending: Future[Fingerprint] | None = None) -> Verdict:
        assert self._dedup is not None
        if self._workers is not None and isinstance(self._dedup, Deduplicator):
            fp: Fingerprint | None = self._fingerprint(doc, pending, self._dedup.fingerprinter)
            assert fp is not None
            verdict = self._dedup.process_fingerprint(fp, doc.url)
        else:
            verdict, fp = self._dedup.process_and_fingerprint(doc)
        if isinstance(self._dedup, AnchorsWarmup) and self._dedup.ready:
            self._finish_warmup()
        if (
            self.config.pages_index and hasattr(self._index, "add_page")
            and verdict.status == "ok" and fp is not None and doc.url
        ):
            if self._pages is None:
                from neardup_pipeline.index.elastic.pages import PagesKeeper  # Elasticsearch only

                self._pages = PagesKeeper(cast("ElasticIndex", self._index), self.config.canonical)
            placement = self._pages.record(  # the text the fingerprint was made from
                verdict=verdict, url=doc.url, title=fp.title, text=fp.text,
                date=page_date(doc.html, doc.url) if self.config.canonical == "best" else None,
                move=getattr(self._dedup, "last_move", None),
            )
            if placement.promoted:  # a better copy: kept, its cluster's old canonical demoted
                self._promoted.add(doc.doc_id)
                self._counts["canonical/promoted"] += 1
        elif self.config.canonical == "best" and not self._warned_canonical:
            self._warned_canonical = True
            logger.warning("neardup: NEARDUP_CANONICAL = 'best' needs the pages index "
                           "(NEARDUP_PAGES_INDEX, Elasticsearch backend); copies are checked "
                           "as with 'first'")
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
        if verdict.doc_id in self._promoted:  # NEARDUP_CANONICAL = "best": the better copy
            self._promoted.discard(verdict.doc_id)  # kept in either mode, and says so
            self._inc("kept_canonical")
            self._tag(adapter, verdict)
            self._set(adapter, fields.status, "canonical")
            return item
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

    async def _checked(self, doc: Document, queued: Future[Verdict] | None) -> Verdict:
        """The check process's verdict, handed to the reactor by the thread that receives it
        (no worker-thread hop per page); a child that died is restarted and the page tried once
        more, on the worker thread."""
        assert self._checker is not None
        if queued is not None:
            try:
                return cast(Verdict, await _on_reactor(queued))
            except BrokenProcessPool:
                pass
        return cast(Verdict, await self._in_worker(self._checker.result, doc, queued))

    async def _in_worker(self, func: Callable[..., Any], *args: Any) -> Any:
        from twisted.internet import reactor

        assert self._pool is not None
        deferred = threads.deferToThreadPool(reactor, self._pool, func, *args)
        return await maybe_deferred_to_future(deferred)


async def _on_reactor(future: Future[Any]) -> Any:
    """Await a concurrent future from the reactor: its result is delivered by callFromThread."""
    from twisted.internet import reactor

    core: Any = reactor
    deferred: Deferred[Any] = Deferred()

    def deliver(done: Future[Any]) -> None:
        error = done.exception()
        if error is None:
            core.callFromThread(deferred.callback, done.result())
        else:
            core.callFromThread(deferred.errback, error)

    future.add_done_callback(deliver)
    return await maybe_deferred_to_future(deferred)
