"""Degraded mode: the crawl goes on while Elasticsearch is away.

Wrapped around the worker-thread check of a shared index. While the server does not answer,
pages pass "unchecked" and their fingerprints wait in the spool; at most every
NEARDUP_ES_REPROBE_SECONDS the server is probed, and once it answers the spool is replayed in
order (writes first, then each page checked and recorded). What cannot be written at close stays
spooled for the next crawl with the same NEARDUP_SPOOL_PATH. Worker thread only.

Only absence is waited for: a server that answers with a refusal (401, 403: credentials, the
`monitor` privilege of the liveness check) or over TLS set up otherwise raises its
ConnectionSetupError, from the probe as from any call, and the pipeline stops the crawl. Writes
held back by an index block or by 429 (blocks.WritesRefused) count as absence: they wait in the
bulk buffer, spooled at close, until the block is lifted.

A SQLite index degrades the same way mid-crawl (a full disk, a file locked by another process:
any IndexFailure), with the spool beside it; it has no probe, so each re-probe tries the replay's
writes. At start a SQLite failure stops the crawl: there is nothing to degrade from yet.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Sequence
from concurrent.futures import Future

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import (
    ConnectionSetupError,
    IndexFailure,
    IndexParamsError,
    IndexUnavailable,
)
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.scrapy.check.base import Checked, Outcome, Page, outcome_of
from neardup_pipeline.scrapy.check.session import IndexSession
from neardup_pipeline.scrapy.settings import ScrapySettings
from neardup_pipeline.scrapy.spool import Spool, spool_location
from neardup_pipeline.verdict.deduplicator import Verdict
from neardup_pipeline.verdict.verdict import not_compared

logger = logging.getLogger(__name__)
REPLAY_FLUSH_PAGES = 100  # replayed pages between flushes (and spool deletions)
CONFIRM_SECONDS = 2.0  # SQLite: a commit at least this often confirms the pages recorded
# A SQLite crawl's spool when NEARDUP_SPOOL_PATH is left at its default: a project that moves
# between backends never replays one backend's spool into the other.
SQLITE_SPOOL = "neardup-sqlite-spool.sqlite"


def degradable(config: NearDupConfig) -> bool:
    """Whether the crawl goes on without its index: Elasticsearch, or a SQLite file."""
    return config.backend.startswith(("http://", "https://", "sqlite:"))


def degraded_mode(session: IndexSession, config: NearDupConfig) -> DegradedMode:
    """Degraded mode for the configured backend, with the spool NEARDUP_SPOOL_PATH names."""
    if not config.backend.startswith("sqlite:"):
        return DegradedMode(session, Spool(spool_location(config.scrapy.spool_path)), config)
    path = config.scrapy.spool_path
    if path == ScrapySettings().spool_path:  # the default: never an Elasticsearch crawl's spool
        path = SQLITE_SPOOL
    return DegradedMode(session, Spool(spool_location(path)), config, outages=(IndexFailure,),
                        start_degraded=False)


class DegradedMode:
    """An IndexSession that survives the server's absence, with the spool."""

    def __init__(
        self, session: IndexSession, spool: Spool, config: NearDupConfig, *,
        outages: tuple[type[IndexFailure], ...] = (IndexUnavailable,),
        start_degraded: bool | None = None,
    ) -> None:
        """`outages`: the errors that send the crawl on without the index (never a refusal
        or an index of other parameters); `start_degraded`: whether it may start so
        (NEARDUP_ES_START by default)."""
        self._session = session
        self._outages = outages
        self._prefix = "es/" if outages == (IndexUnavailable,) else "index/"  # stats' names
        self._start_degraded = (config.scrapy.es_start == "degraded" if start_degraded is None
                                else start_degraded)
        self._spool: Spool | None = spool  # None once closed
        self.config = config
        self._since: float | None = None  # degraded since (monotonic), None while online
        self._last_probe = 0.0
        self._fingerprinter: Fingerprinter | None = None  # a degraded start: no index yet
        self._confirmed = time.monotonic()  # SQLite: the last commit made here
        if self._prefix == "index/":  # no write buffer to spool: note what awaits a commit
            session.unconfirmed = []

    @property
    def unavailable(self) -> bool:
        return self._since is not None

    def open(self) -> int | None:
        """Open the index and replay what an earlier crawl spooled; without the server, start
        degraded if NEARDUP_ES_START = 'degraded', else raise IndexUnavailable."""
        try:
            self._open_index()
        except IndexUnavailable as exc:
            if not self._start_degraded:
                self._close_spool()
                raise
            self._fingerprinter = Fingerprinter(self.config)  # anchors without a model: ConfigError
            self._bound_spool().bind(self._fingerprinter.params())
            self._enter(exc)
            return None
        except BaseException:  # refused, TLS, settings: no crawl, no spool left open
            self._close_spool()
            raise
        return self._session.count()

    def _open_index(self) -> None:
        self._session.open_index()
        spool = self._bound_spool()
        spool.bind(self._session.fingerprinter.params())
        if spool.pending():
            self._replay()

    def check(self, doc: Document, pending: Future[Fingerprint] | None) -> Checked:
        """The verdict, or while the server is away, "unchecked" and the spool."""
        if self._since is not None and not self._recover():
            return Checked(self._spool_page(doc, pending))
        try:
            checked = self._session.check(doc, pending)
        except IndexFailure as exc:
            if not self._is_outage(exc):
                raise
            self._enter(exc)
            return Checked(self._spool_page(doc, pending))
        try:
            self._confirm()
        except IndexFailure as exc:
            if not self._is_outage(exc):
                raise
            self._enter(exc)  # this page too is spooled again, with those before it
        return checked

    def check_many(self, pages: Sequence[Page]) -> list[Outcome]:
        """Each page's outcome, in order: checked in batches while the server answers; from
        the page that finds it away, "unchecked" and spooled, as `check` one by one."""
        outcomes: list[Outcome] = []
        while len(outcomes) < len(pages):
            rest = pages[len(outcomes):]
            if self._since is not None:  # away: each page probes (at most every interval)
                outcomes.append(outcome_of(self.check, *rest[0]))
                continue
            for (doc, pending), outcome in zip(rest, self._session.check_batch(rest),
                                               strict=False):
                if isinstance(outcome, IndexFailure) and self._is_outage(outcome):
                    if self._since is None:
                        self._enter(outcome)
                    outcome = outcome_of(self._spooled, doc, pending)
                outcomes.append(outcome)
            if self._since is None:
                try:
                    self._confirm()
                except IndexFailure as exc:
                    if not self._is_outage(exc):
                        raise
                    self._enter(exc)
        return outcomes

    def _confirm(self) -> None:
        """SQLite: commit at least every CONFIRM_SECONDS; the pages recorded before it are
        then safe, and no longer spooled again should a later write fail."""
        unconfirmed = self._session.unconfirmed
        index = self._session.index
        if not unconfirmed or index is None:
            return
        if time.monotonic() - self._confirmed < CONFIRM_SECONDS:
            return
        index.flush()
        unconfirmed.clear()
        self._confirmed = time.monotonic()

    def _respool_unconfirmed(self) -> None:
        """SQLite: the pages recorded since the last commit made here may have been rolled
        back with the failed write: spool them too (a replay of a stored page is harmless)."""
        unconfirmed = self._session.unconfirmed
        if not unconfirmed:
            return
        pages, unconfirmed[:] = list(unconfirmed), []
        fingerprinter = self._session.fingerprinter
        for url, fp in pages:
            try:
                self._bound_spool().add_page(
                    fp.doc_id, url, fingerprinter.encode(fp), fp.keys, language=fp.language,
                    word_count=fp.word_count, content_hash=fp.content_hash,
                )
            except (sqlite3.Error, OSError) as exc:
                self._spool_failed(exc)
                continue
            self._session.counts["spool/unconfirmed"] += 1

    def _spooled(self, doc: Document, pending: Future[Fingerprint] | None) -> Checked:
        return Checked(self._spool_page(doc, pending))

    def _is_outage(self, exc: BaseException) -> bool:
        """An error the crawl goes on through (never a refusal nor an index of other
        parameters: waiting cannot mend those)."""
        return isinstance(exc, self._outages) and not isinstance(
            exc, ConnectionSetupError | IndexParamsError)

    def close(self) -> None:
        """Last replay, flush, close; what the server cannot take stays spooled."""
        if self._since is not None:
            self._last_probe = 0.0  # probe now, whatever the interval
            try:
                self._recover()
            except ConnectionSetupError as exc:  # refused: what is spooled stays spooled
                logger.error("neardup: %s", exc)
        try:
            self._session.close()
        except IndexFailure as exc:
            if not (self._is_outage(exc) or isinstance(exc, ConnectionSetupError)):
                raise
            writes = self._session.pending_writes
            if writes is None:  # SQLite: what the failed commit held goes to the spool
                waiting = len(self._session.unconfirmed or ())
                self._respool_unconfirmed()
                # ERROR unless the outage already said it once
                level = logging.WARNING if self._session.counts[f"{self._prefix}outages"] \
                    else logging.ERROR
                logger.log(level, "neardup: closing the index failed (%s): the %d pages "
                           "recorded since its last commit are spooled to %s; the next crawl "
                           "with this NEARDUP_SPOOL_PATH replays them", exc, waiting,
                           self._spool.path if self._spool is not None else "-")
                return
            actions = writes.take_pending()
            if self._spool is not None and actions:
                try:
                    self._spool.add_actions(actions)
                    self._session.counts["spool/actions"] += len(actions)
                except (sqlite3.Error, OSError) as failure:
                    self._spool_failed(failure)
            logger.warning("neardup: closing without the server (%s): %d buffered writes "
                           "spooled", exc, len(actions))
        finally:
            if self._spool is not None:
                pending = self._spool.pending()
                if pending:
                    self._session.counts["spool/pending"] = pending
                    logger.warning(
                        "neardup: %d fingerprints and writes remain spooled in %s; the next "
                        "crawl with this NEARDUP_SPOOL_PATH replays them when the server answers",
                        pending, self._spool.path,
                    )
                self._close_spool()

    def _enter(self, exc: Exception) -> None:
        """The one ERROR of an outage: what happened, what the crawl does, how it ends."""
        self._since = self._last_probe = time.monotonic()
        self._respool_unconfirmed()
        self._session.counts[f"{self._prefix}outages"] += 1
        # An absent server, or one that answers but holds writes back (blocks.WritesRefused says
        # so with `held_back`, and names the block and its fix itself).
        absent = self._outages == (IndexUnavailable,) and not getattr(exc, "held_back", False)
        overloaded = "status 429" in str(exc) and "cluster_block_exception" not in str(exc)
        state = "overloaded" if overloaded else "unavailable"
        what = f"Elasticsearch {state} ({exc})" if absent else str(exc)
        if absent and "cluster_block_exception" in what:  # a block met outside a bulk write
            from neardup_pipeline.index.elastic.blocks import block_fix

            fix = block_fix(what)
            what += f": {fix}" if fix else ""
        logger.error(
            "neardup: %s; items pass with %s = 'unchecked' and their fingerprints are spooled "
            "to %s, replayed once the index takes them again (tried every %g s; what is left at "
            "the end, by the next crawl with this NEARDUP_SPOOL_PATH)", what,
            self.config.scrapy.tag_fields.status, self._bound_spool().path,
            self.config.scrapy.es_reprobe_seconds,
        )

    def _recover(self) -> bool:
        """At most every es_reprobe_seconds, probe; when the server is back, replay."""
        now = time.monotonic()
        if now - self._last_probe < self.config.scrapy.es_reprobe_seconds:
            return False
        self._last_probe = now
        try:
            if self._session.index is None:
                self._open_index()  # replays the spool
            else:
                ping = self._session.ping
                timeout = min(self.config.elastic.request_timeout, 2.0)
                if ping is not None and not ping.ping(timeout):
                    return False
                self._replay()
        except IndexFailure as exc:
            if not self._is_outage(exc):
                raise
            logger.warning("neardup: the index is still unavailable: %s", exc)
            return False
        assert self._since is not None
        degraded_ms = int((time.monotonic() - self._since) * 1000)
        self._session.counts[f"{self._prefix}degraded_ms"] += degraded_ms
        self._since = None
        logger.warning("neardup: the index takes writes again; spool replayed")
        return True

    def _spool_page(self, doc: Document, pending: Future[Fingerprint] | None) -> Verdict:
        """Fingerprint without the index (DF-based methods see no corpus) and spool."""
        fingerprinter = self._fingerprinter or self._session.fingerprinter
        spool = self._bound_spool()
        fp = self._session.fingerprint(doc, pending, fingerprinter)
        if fp.status != "ok":
            return not_compared(doc.doc_id, fp.status)
        try:
            spool.add_page(
                doc.doc_id, doc.url, fingerprinter.encode(fp), fp.keys, language=fp.language,
                word_count=fp.word_count, content_hash=fp.content_hash,
            )
        except (sqlite3.Error, OSError) as exc:  # the spool's disk is full too, say
            self._spool_failed(exc)
            return Verdict(doc.doc_id, "unchecked", reason="index unavailable: not spooled")
        self._session.counts["spooled"] += 1
        return Verdict(doc.doc_id, "unchecked", reason="index unavailable: spooled")

    def _spool_failed(self, exc: BaseException) -> None:
        """A page the spool cannot take either: counted, said once (the item still passes)."""
        counts = self._session.counts
        counts["unrecorded"] += 1
        if counts["unrecorded"] == 1:
            logger.error("neardup: the spool %s cannot be written either (%s): pages pass "
                         "unchecked and are NOT recorded (neardup/unrecorded counts them); run "
                         "the crawl again once there is room", self._bound_spool().path, exc)

    def _replay(self) -> None:
        """Send spooled writes, then check and record spooled pages in their order."""
        spool, index, counts = self._bound_spool(), self._session.index, self._session.counts
        assert index is not None
        actions = spool.actions()
        writes = self._session.pending_writes
        if actions and writes is not None:
            writes.requeue([a for _, a in actions])
            index.flush()
            spool.remove_actions([seq for seq, _ in actions])
            counts["replayed/actions"] += len(actions)
        dedup = self._session.replayer
        if dedup is None:
            return  # anchors warm-up without other methods: nothing can check them yet
        done: list[int] = []
        try:  # without a write buffer (SQLite) a page leaves the spool once committed
            for page in spool.pages():
                fp = Fingerprint(
                    page.doc_id, "ok", dedup.fingerprinter.decode(page.signatures), page.keys,
                    page.language, page.word_count, content_hash=page.content_hash,
                )
                verdict = dedup.decide(fp, page.url)
                done.append(page.seq)
                counts["replayed"] += 1
                if verdict.is_duplicate:
                    counts["replayed/duplicates"] += 1
                    logger.info("neardup: replayed %s is a near-duplicate of %s (%s, %s); its "
                                "item passed unchecked", page.doc_id, verdict.duplicate_of,
                                verdict.method, verdict.similarity)
                if len(done) >= REPLAY_FLUSH_PAGES:
                    index.flush()
                    spool.remove_pages(done)
                    done = []
            index.flush()
            spool.remove_pages(done)
        finally:
            # Recorded but unflushed pages sit in the index buffer, spooled at close if need be.
            if writes is not None:
                spool.remove_pages(done)

    def _bound_spool(self) -> Spool:
        assert self._spool is not None, "the spool is closed"
        return self._spool

    def _close_spool(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None
