"""Elasticsearch fingerprint index: shared by every crawler process that points at one cluster.

Writes are buffered and sent with the bulk helper (elastic/bulk.py). Elasticsearch is
near-real-time: a document is searchable only after a refresh, so every entry this process added
stays in an in-process write-through cache (a MemoryIndex) until it has been flushed AND
refreshed; lookups merge the cache with Elasticsearch, and for a doc id in the cache the cache
wins (its keys may have changed). Other processes see our writes after our flush; `count()`
flushes first, so it never counts a pending re-add twice. Document frequency lives in a side
index (elastic/df.py); the pages index's writes share the bulk queue (elastic/pages.py).

Several processes: `publish` puts what this process added since its last call into the write
log (elastic/writelog.py), the one order of every writer's batches, and returns the entries
peers published meanwhile, which this process's lookups may have missed; the cache holds those
too until their writer says they are searchable.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, Elasticsearch

from neardup_pipeline.errors import IndexFailure, IndexParamsError, NearDupError
from neardup_pipeline.index.base import (
    ClosesOnExit,
    IndexEntry,
    Membership,
    close_at_exit,
    closed_before_exit,
    layout_changed,
    membership_of,
    params_mismatch,
)
from neardup_pipeline.index.elastic import bulk
from neardup_pipeline.index.elastic.clusters import ElasticClusters
from neardup_pipeline.index.elastic.connection import (
    RETRY_SECONDS,
    Connection,
    client_from_config,
    describe,
)
from neardup_pipeline.index.elastic.df import DocumentFrequencies
from neardup_pipeline.index.elastic.documents import (
    entry_from,
    es_id,
    fingerprint_source,
    page_source,
)
from neardup_pipeline.index.elastic.environment import with_environment
from neardup_pipeline.index.elastic.lookup import MAX_CANDIDATES, FingerprintReader, candidate_query
from neardup_pipeline.index.elastic.templates import IndexSpec, prepare_index
from neardup_pipeline.index.elastic.writelog import LogRecord, WriteLog
from neardup_pipeline.index.memory import MemoryIndex

if TYPE_CHECKING:
    from neardup_pipeline.config import NearDupConfig

__all__ = ["ElasticIndex", "es_id"]

log = logging.getLogger(__name__)

PARAMS_META_KEY = "neardup_params"


class ElasticIndex(ClosesOnExit):
    """FingerprintIndex on Elasticsearch, with bulk writes and a read-after-write cache.

    Closed by a `with` block, by `close`, or else at interpreter exit: the bulk queue is sent
    even when its owner forgets to close it."""

    def __init__(
        self,
        client: Elasticsearch,
        *,
        fingerprint_index: str = "neardup-fingerprints",
        pages_index: str | None = None,
        bulk_size: int = 500,
        max_candidates: int = MAX_CANDIDATES,
        location: str = "Elasticsearch",
        retry_seconds: float = RETRY_SECONDS,
        ordered: bool = True,
        manage_templates: bool = True,
    ) -> None:
        """`ordered=False` leaves the write log out: for one writer only, or to measure it."""
        self._connection = Connection(client, location, retry_seconds)
        self._connection.manage_templates = manage_templates  # False: only checked (templates.py)
        self._connection.index_names = (fingerprint_index, pages_index)
        self.fingerprint_index = fingerprint_index
        self.pages_index = pages_index
        self._lock = threading.RLock()
        self._queue = bulk.BulkQueue(bulk_size)
        # Entries added here or published by peers since they last became searchable;
        # authoritative for their doc ids.
        self._cache = MemoryIndex()
        self._cached: dict[str, IndexEntry] = {}
        self._peer_entries: dict[str, dict[str, int]] = {}  # writer -> doc id -> slot
        self._peer_flushed: dict[str, int] = {}
        self._unpublished: dict[str, dict[str, Any]] = {}  # doc id -> source, not yet in the log
        self._slot = 0  # this process's last slot in the write log...
        self._flushed_slot = 0  # ...and the last one whose entries are searchable
        self._unstripped: list[int] = []  # its slots whose records still hold their entries
        self._closed = False
        self._reader = FingerprintReader(self._connection, fingerprint_index, max_candidates)
        self._df = DocumentFrequencies(self._connection, f"{fingerprint_index}-df")
        self.clusters = ElasticClusters(self._connection, f"{fingerprint_index}-clusters")
        self._connection.probe()
        prepare_index(self._connection, IndexSpec("fingerprints", fingerprint_index,
                                                 "neardup-fingerprints"))
        if pages_index:
            prepare_index(self._connection, IndexSpec("pages", pages_index, "neardup-pages"))
        self._log = WriteLog(self._connection, f"{fingerprint_index}-writelog") if ordered else None
        if self._log is not None:
            self._learn(self._log.open())
        close_at_exit(self)

    @classmethod
    def from_config(cls, url: str, config: NearDupConfig) -> ElasticIndex:
        """Client from the config (or NEARDUP_ES_* environment), then a checked, ready index."""
        client, location = client_from_config(url, config)
        try:
            return cls(
                client,
                fingerprint_index=config.elastic.fingerprint_index,
                pages_index=config.elastic.pages_index,
                bulk_size=config.elastic.bulk_size,
                location=location,
                retry_seconds=config.elastic.retry_seconds,
                manage_templates=with_environment(config.elastic, os.environ).manage_templates,
            )
        except BaseException:
            client.close()
            raise

    @property
    def client(self) -> Elasticsearch:
        """The client, for read-only queries on the pages index (search, stats, report)."""
        return self._connection.client

    @property
    def counters(self) -> Counter[str]:
        """What went wrong, for the crawl's stats: retries, unavailable, bulk_refused."""
        return self._connection.counters

    @property
    def retry_seconds(self) -> float:
        """The bounded wait of each call: retries with backoff, then IndexUnavailable."""
        return self._connection.retry_seconds

    @retry_seconds.setter
    def retry_seconds(self, value: float) -> None:
        self._connection.retry_seconds = value

    @property
    def bulk_size(self) -> int:
        return self._queue.size

    @property
    def max_candidates(self) -> int:
        return self._reader.max_candidates

    @property
    def df_index(self) -> str:
        return self._df.index

    def ping(self, timeout: float) -> bool:
        """True when the server answers cluster health within `timeout` seconds (no retries)."""
        return self._connection.ping(timeout)

    def take_pending(self) -> list[dict[str, Any]]:
        """Hand over the unsent bulk actions (for the spool) and forget them here."""
        with self._lock:
            return self._queue.take()

    def requeue(self, actions: Iterable[Mapping[str, Any]]) -> None:
        """Queue bulk actions taken earlier (spool replay); sent with the next flush."""
        with self._lock:
            self._check_open()
            for action in actions:
                self._queue.requeue([action])
                if str(action["_index"]) == self._df.index:
                    self._df.ensure_ready()

    # ------------------------------------------------------------------ contract

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        """Keep the parameters in the index mapping's `_meta`; refuse an index built with others."""
        client = self._connection.client
        try:
            meta = self._meta()
            stored = meta.get(PARAMS_META_KEY)
            if stored is None:
                new_meta = {**meta, PARAMS_META_KEY: dict(params)}
                self._connection.call(
                    lambda: client.indices.put_mapping(index=self.fingerprint_index, meta=new_meta)
                )
                # Read back: another process may have stored its parameters at the same moment.
                stored = self._meta().get(PARAMS_META_KEY)
        except ApiError as exc:
            raise IndexFailure(
                f"cannot read or store the parameters of {self.fingerprint_index!r}: "
                f"{describe(exc)}"
            ) from exc
        diff = params_mismatch(stored or {}, params)
        if diff is not None and layout_changed(stored or {}, params):
            raise IndexParamsError(
                f"Elasticsearch index {self.fingerprint_index!r} stores its fingerprints in a "
                f"layout this version does not read ({diff}); rebuild it under a new name: "
                "`neardup dedup PAGES.jsonl -o OUT.jsonl --backend URL --fingerprint-index NEW` "
                "(PAGES.jsonl: the crawl's feed), or `neardup hygiene --es URL --pages-index "
                "PAGES --fingerprint-index NEW` for an index of documents"
            )
        if diff is not None:
            raise IndexParamsError(
                f"Elasticsearch index {self.fingerprint_index!r} was built with other parameters "
                f"({diff}); use another fingerprint_index or the same settings"
            )

    def _meta(self) -> dict[str, Any]:
        client = self._connection.client
        response = self._connection.call(
            lambda: client.indices.get_mapping(index=self.fingerprint_index)
        )
        for body in response.body.values():  # one entry, keyed by the concrete index name
            meta = body.get("mappings", {}).get("_meta", {})
            return dict(meta) if isinstance(meta, dict) else {}
        return {}

    def add(self, entry: IndexEntry) -> None:
        """Buffer the write and cache the entry; a full buffer is flushed (and refreshed)."""
        source = fingerprint_source(entry)
        self._connection.encodable(source, f"fingerprint {entry.doc_id!r}")
        with self._lock:
            self._check_open()
            self._cache.add(entry)
            self._cached[entry.doc_id] = entry
            self._forget_peer(entry.doc_id)
            if self._log is not None:
                self._unpublished[entry.doc_id] = source
            self._put(self.fingerprint_index, es_id(entry.doc_id), source)

    def publish(self) -> list[IndexEntry]:
        """Append the entries added since the last call to the write log: every peer that
        publishes later compares its pages with them. Returns the entries peers published
        before this batch's slot and after this process's previous one, which the lookups
        of the pages now published may have missed (the caller compares its pages with them)."""
        with self._lock:
            self._check_open()
            if self._log is None or not self._unpublished:
                return []
            slot, records = self._log.claim(list(self._unpublished.values()), self._flushed_slot)
            self._unpublished.clear()
            self._slot = slot
            self._unstripped.append(slot)
            return self._learn(records, fetch_stripped=True)

    def _learn(self, records: list[LogRecord], fetch_stripped: bool = False) -> list[IndexEntry]:
        """Hold the entries of peers' log records until their writer says they are searchable;
        return them all, in slot order. A stripped record's entries are searchable already:
        `fetch_stripped` reads them from the fingerprint index for the caller, else they are
        left out. Lock held (or in the constructor)."""
        learned: list[IndexEntry] = []
        wanted = [i for r in records if r.stripped for i in r.ids] if fetch_stripped else []
        stored = {source["doc_id"]: entry_from(source)  # every stripped record's, one mget
                  for source in self._reader.sources(list(dict.fromkeys(wanted)))}
        for record in records:
            if record.stripped:
                if fetch_stripped:
                    learned += [stored[i] for i in record.ids if i in stored]
                self._peer_flushed[record.writer] = max(
                    record.slot, self._peer_flushed.get(record.writer, 0))
                self._release_peer(record.writer, None if record.closed else record.slot)
                continue
            entries = [entry_from(source) for source in record.entries]
            learned += entries
            held = self._peer_entries.setdefault(record.writer, {})
            for entry in entries:
                if entry.doc_id in self._unpublished:
                    continue  # this process's newer write of the same page comes later
                self._forget_peer(entry.doc_id)
                self._cache.add(entry)
                self._cached[entry.doc_id] = entry
                held[entry.doc_id] = record.slot
            if record.closed or record.flushed > self._peer_flushed.get(record.writer, 0):
                self._peer_flushed[record.writer] = record.flushed
                self._release_peer(record.writer, None if record.closed else record.flushed)
        return learned

    def _release_peer(self, writer: str, flushed: int | None) -> None:
        """Stop holding a peer's entries up to slot `flushed` (None: all): it says they are
        searchable. Lock held."""
        held = self._peer_entries.get(writer, {})
        for doc_id in [d for d, s in held.items() if flushed is None or s <= flushed]:
            del held[doc_id]
            self._cached.pop(doc_id, None)
            self._cache.remove(doc_id)

    def _forget_peer(self, doc_id: str) -> None:
        """A newer entry replaces a peer's: stop tracking the peer's one. Lock held."""
        for held in self._peer_entries.values():
            held.pop(doc_id, None)

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        """Ids sharing a key: Elasticsearch's `terms` hits, corrected by this process's cache."""
        query = candidate_query(keys)
        with self._lock:
            self._check_open()
            found = self._cache.candidates(keys)
            cached = set(self._cached)
        if query is not None:
            self._reader.candidates(query, found, cached)
        return found

    def candidates_many(self, keys: Sequence[Mapping[str, Sequence[str]]]) -> list[set[str]]:
        """`candidates` for many documents in one `msearch` round trip (per MSEARCH_CHUNK)."""
        with self._lock:
            self._check_open()
            results = [self._cache.candidates(k) for k in keys]
            cached = set(self._cached)
        self._reader.candidates_many([candidate_query(k) for k in keys], results, cached)
        return results

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        """Entries of the ids: the cache first, then `mget` for the rest."""
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            self._check_open()
            result = self._cache.get(wanted)
        for source in self._reader.sources([i for i in wanted if i not in result]):
            entry = entry_from(source)
            result[entry.doc_id] = entry
        return result

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        """Each id's membership: the cache first, then `mget` of the metadata it needs (no
        signatures travel)."""
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            self._check_open()
            result = self._cache.memberships(wanted)
        for source in self._reader.sources(
            [i for i in wanted if i not in result],
            fields=["doc_id", "meta.cluster", "meta.to_original"],
        ):
            result[source["doc_id"]] = membership_of(entry_from(source))
        return result

    def count(self) -> int:
        """Documents in the index; flushes first so pending re-adds are not counted twice."""
        client = self._connection.client
        with self._lock:
            self._check_open()
            self._flush()
            try:
                response = self._connection.call(
                    lambda: client.count(index=self.fingerprint_index)
                )
            except ApiError as exc:
                raise IndexFailure(f"counting fingerprints failed: {describe(exc)}") from exc
            return int(response.body["count"])

    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        """Queue the page's DF document (its distinct words); it replaces any earlier one."""
        with self._lock:
            self._check_open()
            source = self._df.document(doc_id, word_hashes)
            self._put(self._df.index, es_id(doc_id), source)

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        """Aggregated DF of the stored pages (pending and `exclude` left out) + pending DF."""
        wanted = list(dict.fromkeys(int(w) for w in word_hashes))
        return self._df_query(wanted, exclude)[0]

    def document_count(self, exclude: str | None = None) -> int:
        return self._df_query([], exclude)[1]

    def _df_query(self, wanted: list[int], exclude: str | None) -> tuple[dict[int, int], int]:
        with self._lock:
            self._check_open()
            counts, documents, skip = self._df.pending(wanted, exclude)
        return self._df.stored(wanted, skip, counts, documents)

    def flush(self) -> None:
        """Send the buffer, refresh, and let Elasticsearch answer for what was sent."""
        with self._lock:
            self._check_open()
            self._flush()

    def close(self) -> None:
        """Flush, then close the client (even when the flush fails)."""
        with self._lock:
            if self._closed:
                return
            closed_before_exit(self)
            try:
                self._flush()
                self._close_log()
            finally:
                self._closed = True
                self._connection.client.close()

    # ------------------------------------------------------------------ pages index

    def add_page(self, doc: Mapping[str, Any]) -> None:
        """Queue a kept page for the content index (a no-op when `pages_index` is not set)."""
        if not self.pages_index:
            return
        source = page_source(doc)
        self._connection.encodable(source, f"page {source['url']!r}")
        with self._lock:
            self._check_open()
            self._put(self.pages_index, es_id(source["url"]), source)

    def update_page(self, url: str, fields: Mapping[str, Any]) -> None:
        """Queue a partial update of a stored page (canonical changes); a pending write of the
        same page takes the fields instead, so neither write loses the other's."""
        if not self.pages_index:
            return
        changes = dict(fields)
        self._connection.encodable(changes, f"page update {url!r}")
        with self._lock:
            self._check_open()
            self._queue.update((self.pages_index, es_id(url)), changes)
            if self._queue.full():
                self._flush()

    def get_page(self, url: str) -> dict[str, Any] | None:
        """A page of the pages index as this process last wrote it (pending writes included)."""
        if not self.pages_index:
            return None
        key = (self.pages_index, es_id(url))
        with self._lock:
            self._check_open()
            pending = self._queue.get(key)
        if pending is not None and "_source" in pending:
            return dict(pending["_source"])
        client = self._connection.client
        try:
            response = self._connection.call(
                lambda: client.options(ignore_status=404).get(index=key[0], id=key[1])
            )
        except ApiError as exc:
            raise IndexFailure(f"fetching page {url!r} failed: {describe(exc)}") from exc
        if not response.body.get("found"):
            return None
        source = dict(response.body["_source"])
        return {**source, **pending["doc"]} if pending is not None else source

    def pending_pages(self) -> list[dict[str, Any]]:
        """Pages queued but not yet sent (their full documents), for read-after-write lookups."""
        with self._lock:
            return self._queue.sources(self.pages_index) if self.pages_index else []

    # ------------------------------------------------------------------ bulk

    def _put(self, index: str, doc_id: str, source: dict[str, Any]) -> None:
        """Queue a whole document as the newest write of its `_id`; a full queue is flushed."""
        self._queue.put(index, doc_id, source)
        if self._queue.full():
            self._flush()

    def _flush(self) -> None:
        """Send and refresh; then Elasticsearch is the truth for the doc ids sent again (or
        they were never stored), so the caches forget them. Lock held. Writes the server held
        back (a block, 429) stay queued and cached, and raise WritesRefused."""
        actions, errors, held_back = bulk.send(self._connection, self._queue)
        if not actions:
            return
        kept = {(str(e["_index"]), str(e["_id"])) for e in held_back}
        actions = [a for a in actions if (a["_index"], a["_id"]) not in kept]
        sent = {a["_source"]["doc_id"] for a in actions
                if a["_index"] == self.fingerprint_index and "_source" in a}
        self._df.sent({a["_source"]["doc_id"] for a in actions
                       if a["_index"] == self._df.index and "_source" in a})
        peers = {doc_id for held in self._peer_entries.values() for doc_id in held}
        for doc_id in sent - peers:
            if self._cached.pop(doc_id, None) is not None:
                self._cache.remove(doc_id)
        if not kept:  # every published entry was queued before this flush, and is stored
            self._flushed_slot = self._slot
            self._strip_log()
        bulk.raise_refused(self._connection, errors, len(actions) + len(kept), held_back)

    def _strip_log(self) -> None:
        """Take the entries out of this process's log records: they are searchable now. A
        failure leaves them for the next flush (a record with its entries is still right).
        Lock held."""
        if self._log is None or not self._unstripped:
            return
        try:
            self._log.strip(self._unstripped)
        except NearDupError as exc:
            log.warning("neardup: write log records not stripped yet: %s", exc)
            return
        self._unstripped.clear()

    def _close_log(self) -> None:
        """A last record: everything this process wrote is searchable (its leftovers are in
        it). Lock held. Without it peers only hold this process's last entries a while."""
        if self._log is None or (self._slot == 0 and not self._unpublished):
            return
        try:
            self._log.claim(list(self._unpublished.values()), self._slot, closed=True,
                            searchable=True)  # close flushed them first
        except NearDupError as exc:
            log.warning("neardup: closing record of the write log not written: %s", exc)
        self._unpublished.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise IndexFailure("the Elasticsearch index is closed")

    def __repr__(self) -> str:
        return f"ElasticIndex({self._connection.location!r}, {self.fingerprint_index!r})"
