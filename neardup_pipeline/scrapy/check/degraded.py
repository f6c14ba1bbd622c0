"""Degraded mode: the crawl goes on while Elasticsearch is away.

Wrapped around the worker-thread check of a shared index. While the server does not answer,
pages pass "unchecked" and their fingerprints wait in the spool; at most every
NEARDUP_ES_REPROBE_SECONDS the server is probed, and once it answers the spool is replayed in
order (writes first, then each page checked and recorded). What cannot be written at close stays
spooled for the next crawl with the same NEARDUP_SPOOL_PATH. Worker thread only.

Only absence is waited for: a server that answers with a refusal (401, 403: credentials, the
`monitor` privilege of the liveness check) or over TLS set up otherwise raises its
ConnectionSetupError, from the probe as from any call, and the pipeline stops the crawl.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConnectionSetupError, IndexUnavailable
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.scrapy.check.base import Checked, Outcome, Page, outcome_of
from neardup_pipeline.scrapy.check.session import IndexSession
from neardup_pipeline.scrapy.spool import Spool
from neardup_pipeline.verdict.deduplicator import Verdict

logger = logging.getLogger(__name__)
REPLAY_FLUSH_PAGES = 100  # replayed pages between flushes (and spool deletions)


class DegradedMode:
    """An IndexSession that survives the server's absence, with the spool."""

    def __init__(self, session: IndexSession, spool: Spool, config: NearDupConfig) -> None:
        self._session = session
        self._spool: Spool | None = spool  # None once closed
        self.config = config
        self._since: float | None = None  # degraded since (monotonic), None while online
        self._last_probe = 0.0
        self._fingerprinter: Fingerprinter | None = None  # a degraded start: no index yet

    @property
    def unavailable(self) -> bool:
        return self._since is not None

    def open(self) -> int | None:
        """Open the index and replay what an earlier crawl spooled; without the server, start
        degraded if NEARDUP_ES_START = 'degraded', else raise IndexUnavailable."""
        try:
            self._open_index()
        except IndexUnavailable as exc:
            if self.config.scrapy.es_start != "degraded":
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
            return self._session.check(doc, pending)
        except IndexUnavailable as exc:
            self._enter(exc)
            return Checked(self._spool_page(doc, pending))

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
                if isinstance(outcome, IndexUnavailable):
                    if self._since is None:
                        self._enter(outcome)
                    outcome = outcome_of(self._spooled, doc, pending)
                outcomes.append(outcome)
        return outcomes

    def _spooled(self, doc: Document, pending: Future[Fingerprint] | None) -> Checked:
        return Checked(self._spool_page(doc, pending))

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
        except (IndexUnavailable, ConnectionSetupError) as exc:
            writes = self._session.pending_writes
            actions = writes.take_pending() if writes is not None else []
            if self._spool is not None and actions:
                self._spool.add_actions(actions)
                self._session.counts["spool/actions"] += len(actions)
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
        self._since = self._last_probe = time.monotonic()
        self._session.counts["es/outages"] += 1
        logger.error(
            "neardup: Elasticsearch unavailable (%s); items pass with %s = 'unchecked' and their "
            "fingerprints are spooled to %s (checked every %g s)", exc,
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
        except IndexUnavailable as exc:
            logger.warning("neardup: Elasticsearch still unavailable: %s", exc)
            return False
        assert self._since is not None
        self._session.counts["es/degraded_ms"] += int((time.monotonic() - self._since) * 1000)
        self._since = None
        logger.warning("neardup: Elasticsearch answers again; spool replayed")
        return True

    def _spool_page(self, doc: Document, pending: Future[Fingerprint] | None) -> Verdict:
        """Fingerprint without the index (DF-based methods see no corpus) and spool."""
        fingerprinter = self._fingerprinter or self._session.fingerprinter
        spool = self._bound_spool()
        fp = self._session.fingerprint(doc, pending, fingerprinter)
        if fp.status != "ok":
            return Verdict(doc.doc_id, "no_text", reason="no words to compare")
        spool.add_page(
            doc.doc_id, doc.url, fingerprinter.encode(fp), fp.keys, language=fp.language,
            word_count=fp.word_count, content_hash=fp.content_hash,
        )
        self._session.counts["spooled"] += 1
        return Verdict(doc.doc_id, "unchecked", reason="Elasticsearch unavailable: spooled")

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
        try:
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
        finally:
            # Recorded but unflushed pages sit in the index buffer, spooled at close if need be.
            spool.remove_pages(done)

    def _bound_spool(self) -> Spool:
        assert self._spool is not None, "the spool is closed"
        return self._spool

    def _close_spool(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None
