"""Elasticsearch fingerprint index: shared by every crawler process that points at one cluster.

One document per page in the fingerprint index (mapping in `es_mappings/fingerprints.json`):
`<method>_keys` keyword arrays for the `terms` lookups, the encoded signatures in a non-indexed
object for verification in Python, and the verdict metadata as typed fields.

Writes are buffered and sent with the bulk helper. Elasticsearch is near-real-time: a document is
searchable only after a refresh, so every entry this process added stays in an in-process
write-through cache (a MemoryIndex) until it has been flushed AND refreshed; lookups merge the
cache with Elasticsearch, and for a doc id in the cache the cache wins (its keys may have changed).
Policy: one `indices.refresh` per bulk batch (every `es_bulk_size` writes and at flush/close),
never one per item, which would cost a segment per page. Other processes see our writes after our
flush; `count()` flushes first, so it never counts a pending re-add twice.

Document frequency (rarewords) lives in a side index, `<fingerprint_index>-df` (mapping in
`es_mappings/df.json`, created on first use): one document per counted page, `_id` = the page's,
holding its distinct word hashes as a `keyword` array. DF is a `terms` aggregation over it, never
a stored counter: the server has no painless, so no scripted upsert could increment one safely,
while a page document replaced by `index` (re-add) or written by two processes at once cannot
double count. Cost: every distinct word of every page is indexed once more (about 8 bytes of
term plus postings per word), and a lookup is one aggregation filtered to the page's words.
Pending DF documents stay in a local MemoryIndex until flushed and refreshed, like fingerprints.

The sync client is deliberate: the Scrapy pipeline calls the index from one worker thread.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from elastic_transport import SerializationError, TransportError
from elasticsearch import ApiError, BadRequestError, Elasticsearch, helpers

from neardup_pipeline.config import redact_backend
from neardup_pipeline.errors import IndexFailure, IndexParamsError, IndexUnavailable
from neardup_pipeline.index.base import IndexEntry, Membership, membership_of, params_mismatch
from neardup_pipeline.index.elastic.mappings import load_mapping
from neardup_pipeline.index.memory import MemoryIndex

if TYPE_CHECKING:
    from neardup_pipeline.config import NearDupConfig

__all__ = ["ElasticIndex", "es_id"]

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_ID_BYTES = 512  # Elasticsearch refuses longer _id values
PARAMS_META_KEY = "neardup_params"
REQUEST_TIMEOUT = 10.0  # seconds per request (NEARDUP_ES_REQUEST_TIMEOUT)
START_TIMEOUT = 5.0  # seconds for the reachability probe: fail fast, never hang at start
RETRY_SECONDS = 30.0  # bounded wait per call: retries with backoff, then IndexUnavailable
BACKOFF_SECONDS = 0.25  # first pause between attempts, doubled after each failed one...
MAX_BACKOFF_SECONDS = 4.0  # ...up to this
RETRY_STATUSES = frozenset({429, 502, 503, 504})  # overloaded or restarting: worth waiting for
MAX_CANDIDATES = 10_000  # = the default index.max_result_window
MGET_CHUNK = 1000
MSEARCH_CHUNK = 200  # candidate lookups per msearch request
DF_CHUNK = 10_000  # words per DF aggregation: below index.max_terms_count (65,536)
_METHOD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_TYPED_META = ("url", "cluster", "duplicate_of", "similarity", "method")
_PAGE_FIELDS = (
    "url",
    "doc_id",
    "title",
    "text",
    "cluster_id",
    "is_canonical",
    "duplicate_of",
    "nearest",
    "similarity",
    "method",
    "text_length",
    "published",
    "first_seen",
    "crawled_at",
)


def es_id(value: str) -> str:
    """The document `_id` for a doc id or URL: itself when it fits 512 bytes, else its sha256."""
    raw = value.encode("utf-8")
    return value if len(raw) <= MAX_ID_BYTES else hashlib.sha256(raw).hexdigest()


def _keys_field(method: str) -> str:
    """`<method>_keys`; method names become field names, so no dots or odd characters."""
    if not _METHOD_NAME.match(method):
        raise IndexFailure(f"method name {method!r} cannot name an Elasticsearch field")
    return f"{method}_keys"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _error_type(exc: ApiError) -> str | None:
    """The `error.type` of an Elasticsearch error response, when it has one."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    return str(error.get("type")) if isinstance(error, dict) else None


def _describe(exc: BaseException) -> str:
    """A short readable reason from an ApiError / TransportError (never the request body)."""
    if isinstance(exc, ApiError):
        info = exc.info if isinstance(exc.info, dict) else {}
        error = info.get("error")
        if isinstance(error, dict):
            return f"status {exc.meta.status}: {error.get('type')}: {error.get('reason')}"
        return f"status {exc.meta.status}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


class ElasticIndex:
    """FingerprintIndex on Elasticsearch, with bulk writes and a read-after-write cache."""

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
    ) -> None:
        self._client = client
        self.retry_seconds = retry_seconds
        # What went wrong, for the crawl's stats: retries, unavailable, bulk_refused.
        self.counters: Counter[str] = Counter()
        self.fingerprint_index = fingerprint_index
        self.pages_index = pages_index
        self.bulk_size = max(1, bulk_size)
        self.max_candidates = max_candidates
        self._location = location
        self._lock = threading.RLock()
        # Pending bulk actions by (index, _id): a re-add before the flush replaces the action.
        self._buffer: dict[tuple[str, str], dict[str, Any]] = {}
        # Entries added since they last became searchable; authoritative for their doc ids.
        self._cache = MemoryIndex()
        self._cached: dict[str, IndexEntry] = {}
        self._closed = False
        self.df_index = f"{fingerprint_index}-df"
        self._df_ready = False
        self._df_cache = MemoryIndex()  # DF of pages queued since the last refresh
        self._df_cached: set[str] = set()
        self._warned_truncated = False
        self._start()

    @classmethod
    def from_config(cls, url: str, config: NearDupConfig) -> ElasticIndex:
        """Client from the config (or NEARDUP_ES_* environment), then a checked, ready index."""
        api_key = config.es_api_key or os.environ.get("NEARDUP_ES_API_KEY") or None
        basic_auth = config.es_basic_auth
        if basic_auth is None and os.environ.get("NEARDUP_ES_USERNAME"):
            basic_auth = (
                os.environ["NEARDUP_ES_USERNAME"],
                os.environ.get("NEARDUP_ES_PASSWORD", ""),
            )
        kwargs: dict[str, Any] = {
            "request_timeout": config.es_request_timeout,
            "max_retries": 0,  # _call retries, within the bounded wait es_retry_seconds
        }
        if api_key:
            kwargs["api_key"] = api_key  # wins over basic auth when both are configured
        elif basic_auth is not None:
            kwargs["basic_auth"] = tuple(basic_auth)
        if url.startswith("https://"):
            kwargs["verify_certs"] = config.es_verify_certs
            if config.es_ca_certs:
                kwargs["ca_certs"] = config.es_ca_certs
        location = redact_backend(url)
        log.info(
            "neardup: Elasticsearch fingerprint index %r at %s (auth: %s)",
            config.fingerprint_index,
            location,
            "api key" if api_key else "basic" if basic_auth else "none",
        )
        try:
            client = Elasticsearch(url, **kwargs)
        except (ValueError, TypeError) as exc:
            raise IndexFailure(f"bad Elasticsearch settings for {location}: {exc}") from exc
        try:
            return cls(
                client,
                fingerprint_index=config.fingerprint_index,
                pages_index=config.pages_index,
                bulk_size=config.es_bulk_size,
                location=location,
                retry_seconds=config.es_retry_seconds,
            )
        except BaseException:
            client.close()
            raise

    # ------------------------------------------------------------------ start

    def _start(self) -> None:
        """Probe the server (bounded), install templates, create missing indices."""
        probe = self._client.options(request_timeout=START_TIMEOUT, max_retries=0)
        try:
            probe.cluster.health(timeout=f"{int(START_TIMEOUT)}s")
        except ApiError as exc:
            # Reachable, but refused (auth, privileges): the later calls will say precisely.
            if exc.meta.status in (401,):
                raise IndexFailure(
                    f"Elasticsearch at {self._location} refused the credentials ({_describe(exc)})"
                ) from exc
        except TransportError as exc:
            raise IndexUnavailable(
                f"Elasticsearch at {self._location} is not reachable ({_describe(exc)}); "
                "check the URL, that the server runs, and the network"
            ) from exc
        self._install("fingerprints", self.fingerprint_index, "neardup-fingerprints")
        if self.pages_index:
            self._install("pages", self.pages_index, "neardup-pages")

    def _install(self, name: str, index: str, template_name: str) -> None:
        """Put the composable template when missing or older; create the index with the mapping."""
        template = load_mapping(f"{name}-template")
        body = load_mapping(name)
        try:
            current = self._call(
                lambda: self._client.options(ignore_status=404).indices.get_index_template(
                    name=template_name
                )
            )
            installed = [t["index_template"] for t in current.body.get("index_templates", [])]
            if not installed or int(installed[0].get("version") or 0) < int(template["version"]):
                # The client names the body's `_meta` parameter `meta`.
                args = {("meta" if k == "_meta" else k): v for k, v in template.items()}
                self._call(
                    lambda: self._client.indices.put_index_template(name=template_name, **args)
                )
            try:
                self._call(
                    lambda: self._client.indices.create(
                        index=index, settings=body["settings"], mappings=body["mappings"]
                    )
                )
            except BadRequestError as exc:
                if _error_type(exc) != "resource_already_exists_exception":
                    raise
                # Existing index (another process, an older version): add what is missing.
                mappings = {k: v for k, v in body["mappings"].items() if k != "_meta"}
                self._call(lambda: self._client.indices.put_mapping(index=index, **mappings))
        except ApiError as exc:
            raise IndexFailure(
                f"cannot prepare Elasticsearch index {index!r} at {self._location}: "
                f"{_describe(exc)}"
            ) from exc

    def _call(self, fn: Callable[[], T]) -> T:
        """Run a request; retry transport failures and 429/502/503/504 with backoff, for at most
        `retry_seconds` in all, then raise IndexUnavailable (the caller degrades or fails)."""
        deadline = time.monotonic() + self.retry_seconds
        delay = BACKOFF_SECONDS
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except SerializationError as exc:  # a value JSON cannot carry: retrying cannot help
                raise IndexFailure(f"cannot encode or decode a request: {exc}") from exc
            except (TransportError, ApiError) as exc:
                if isinstance(exc, ApiError) and exc.meta.status not in RETRY_STATUSES:
                    raise
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.counters["unavailable"] += 1
                    raise IndexUnavailable(
                        f"Elasticsearch at {self._location} did not answer within "
                        f"{self.retry_seconds:g} s ({attempt} attempts): {_describe(exc)}"
                    ) from exc
                self.counters["retries"] += 1
                pause = min(delay, remaining)
                log.warning(
                    "neardup: Elasticsearch request failed (%s), retry in %.2fs",
                    _describe(exc),
                    pause,
                )
                time.sleep(pause)
                delay = min(delay * 2, MAX_BACKOFF_SECONDS)

    def ping(self, timeout: float) -> bool:
        """True when the server answers cluster health within `timeout` seconds (no retries)."""
        try:
            self._client.options(request_timeout=timeout, max_retries=0).cluster.health(
                timeout=f"{max(int(timeout), 1)}s"
            )
        except (TransportError, ApiError):
            return False
        return True

    def take_pending(self) -> list[dict[str, Any]]:
        """Hand over the unsent bulk actions (for the spool) and forget them here."""
        with self._lock:
            actions = list(self._buffer.values())
            self._buffer.clear()
            return actions

    def requeue(self, actions: Iterable[Mapping[str, Any]]) -> None:
        """Queue bulk actions taken earlier (spool replay); sent with the next flush."""
        with self._lock:
            self._check_open()
            for action in actions:
                key = (str(action["_index"]), str(action["_id"]))
                self._buffer.pop(key, None)
                self._buffer[key] = dict(action)
                if key[0] == self.df_index:
                    self._ensure_df()

    # ------------------------------------------------------------------ contract

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        """Keep the parameters in the index mapping's `_meta`; refuse an index built with others."""
        try:
            meta = self._meta()
            stored = meta.get(PARAMS_META_KEY)
            if stored is None:
                new_meta = {**meta, PARAMS_META_KEY: dict(params)}
                self._call(
                    lambda: self._client.indices.put_mapping(
                        index=self.fingerprint_index, meta=new_meta
                    )
                )
                # Read back: another process may have stored its parameters at the same moment.
                stored = self._meta().get(PARAMS_META_KEY)
        except ApiError as exc:
            raise IndexFailure(
                f"cannot read or store the parameters of {self.fingerprint_index!r}: "
                f"{_describe(exc)}"
            ) from exc
        diff = params_mismatch(stored or {}, params)
        if diff is not None:
            raise IndexParamsError(
                f"Elasticsearch index {self.fingerprint_index!r} was built with other parameters "
                f"({diff}); use another fingerprint_index or the same settings"
            )

    def _meta(self) -> dict[str, Any]:
        response = self._call(
            lambda: self._client.indices.get_mapping(index=self.fingerprint_index)
        )
        for body in response.body.values():  # one entry, keyed by the concrete index name
            meta = body.get("mappings", {}).get("_meta", {})
            return dict(meta) if isinstance(meta, dict) else {}
        return {}

    def add(self, entry: IndexEntry) -> None:
        """Buffer the write and cache the entry; a full buffer is flushed (and refreshed)."""
        source: dict[str, Any] = {
            "doc_id": entry.doc_id,
            "key_methods": sorted(entry.keys),
            "signatures": entry.signatures,
            "meta": entry.meta,
            "added": _now(),
        }
        for method, keys in entry.keys.items():
            source[_keys_field(method)] = list(keys)
        for name in _TYPED_META:
            if entry.meta.get(name) is not None:
                source[name] = entry.meta[name]
        self._encodable(source, f"fingerprint {entry.doc_id!r}")
        with self._lock:
            self._check_open()
            self._cache.add(entry)
            self._cached[entry.doc_id] = entry
            self._queue(self.fingerprint_index, es_id(entry.doc_id), source)

    def add_page(self, doc: Mapping[str, Any]) -> None:
        """Queue a kept page for the content index (a no-op when `pages_index` is not set).

        The page's `cluster_id` lets searches `collapse` near-duplicates away.
        """
        if not self.pages_index:
            return
        url = doc.get("url")
        if not isinstance(url, str) or not url:
            raise IndexFailure("a page for the pages index needs a non-empty string 'url'")
        source = {name: doc[name] for name in _PAGE_FIELDS if doc.get(name) is not None}
        source.setdefault("crawled_at", _now())
        self._encodable(source, f"page {url!r}")
        with self._lock:
            self._check_open()
            self._queue(self.pages_index, es_id(url), source)

    def update_page(self, url: str, fields: Mapping[str, Any]) -> None:
        """Queue a partial update of a stored page (canonical changes); a pending write of the
        same page takes the fields instead, so neither write loses the other's."""
        if not self.pages_index:
            return
        changes = dict(fields)
        self._encodable(changes, f"page update {url!r}")
        key = (self.pages_index, es_id(url))
        with self._lock:
            self._check_open()
            pending = self._buffer.pop(key, None)
            if pending is None:
                action = {"_op_type": "update", "_index": key[0], "_id": key[1], "doc": changes}
            elif "_source" in pending:
                action = {**pending, "_source": {**pending["_source"], **changes}}
            else:
                action = {**pending, "doc": {**pending["doc"], **changes}}
            self._buffer[key] = action
            if len(self._buffer) >= self.bulk_size:
                self._flush()

    def get_page(self, url: str) -> dict[str, Any] | None:
        """A page of the pages index as this process last wrote it (pending writes included)."""
        if not self.pages_index:
            return None
        key = (self.pages_index, es_id(url))
        with self._lock:
            self._check_open()
            pending = self._buffer.get(key)
        if pending is not None and "_source" in pending:
            return dict(pending["_source"])
        try:
            response = self._call(
                lambda: self._client.options(ignore_status=404).get(index=key[0], id=key[1])
            )
        except ApiError as exc:
            raise IndexFailure(f"fetching page {url!r} failed: {_describe(exc)}") from exc
        if not response.body.get("found"):
            return None
        source = dict(response.body["_source"])
        return {**source, **pending["doc"]} if pending is not None else source

    def pending_pages(self) -> list[dict[str, Any]]:
        """Pages queued but not yet sent (their full documents), for read-after-write lookups."""
        with self._lock:
            return [
                dict(a["_source"]) for (index, _), a in self._buffer.items()
                if index == self.pages_index and "_source" in a
            ]

    @property
    def client(self) -> Elasticsearch:
        """The client, for read-only queries on the pages index (search, stats, report)."""
        return self._client

    def _encodable(self, source: dict[str, Any], what: str) -> None:
        """Refuse a value JSON cannot carry now, so it never poisons a whole bulk batch later."""
        try:
            self._client.transport.serializers.dumps(source, mimetype="application/json")
        except SerializationError as exc:
            raise IndexFailure(f"cannot encode {what} for Elasticsearch: {exc}") from exc

    def _queue(self, index: str, doc_id: str, source: dict[str, Any]) -> None:
        self._buffer.pop((index, doc_id), None)  # re-queue at the end: the newest write wins
        self._buffer[(index, doc_id)] = {"_index": index, "_id": doc_id, "_source": source}
        if len(self._buffer) >= self.bulk_size:
            self._flush()

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        """Ids sharing a key: Elasticsearch's `terms` hits, corrected by this process's cache."""
        query = _candidate_query(keys)
        with self._lock:
            self._check_open()
            found = self._cache.candidates(keys)
            cached = set(self._cached)
        if query is None:
            return found
        try:
            response = self._call(
                partial(self._client.search, index=self.fingerprint_index, request_cache=False,
                        **self._lookup_body(query))
            )
        except ApiError as exc:
            raise IndexFailure(f"candidate lookup failed: {_describe(exc)}") from exc
        self._collect(response.body["hits"], query, found, cached)
        return found

    def _lookup_body(self, query: dict[str, Any], source: bool = False) -> dict[str, Any]:
        """A filter-only search returning doc ids from doc values: no stored fields are read
        (loading `_source` or `_id` per hit doubled the latency at 1M fingerprints), no total
        counted. `source`: read doc_id from `_source` (ids beyond the keyword's ignore_above)."""
        body: dict[str, Any] = {
            "query": query,
            "size": self.max_candidates,
            "track_total_hits": False,
            "sort": ["_doc"],  # no scoring
        }
        if source:
            body["_source"] = {"includes": ["doc_id"]}
        else:
            body.update(_source=False, stored_fields=["_none_"], docvalue_fields=["doc_id"])
        return body

    def candidates_many(self, keys: Sequence[Mapping[str, Sequence[str]]]) -> list[set[str]]:
        """`candidates` for many documents in one `msearch` round trip (per MSEARCH_CHUNK)."""
        with self._lock:
            self._check_open()
            results = [self._cache.candidates(k) for k in keys]
            cached = set(self._cached)
        asked = [(n, q) for n, q in enumerate(map(_candidate_query, keys)) if q is not None]
        for start in range(0, len(asked), MSEARCH_CHUNK):
            chunk = asked[start : start + MSEARCH_CHUNK]
            searches: list[Mapping[str, Any]] = []
            for _, query in chunk:
                searches.append({"index": self.fingerprint_index, "request_cache": False})
                searches.append(self._lookup_body(query))
            try:
                response = self._call(partial(self._client.msearch, searches=searches))
            except ApiError as exc:
                raise IndexFailure(f"candidate lookup failed: {_describe(exc)}") from exc
            for (n, query), answer in zip(chunk, response.body["responses"], strict=True):
                if "error" in answer:  # one failed search fails the batch, as one lookup would
                    error = answer["error"]
                    reason = error.get("reason") if isinstance(error, dict) else error
                    raise IndexFailure(
                        f"candidate lookup failed: status {answer.get('status')}: {reason}"
                    )
                self._collect(answer["hits"], query, results[n], cached)
        return results

    def _collect(
        self, hits: Mapping[str, Any], query: dict[str, Any], found: set[str], cached: set[str]
    ) -> None:
        """Add a lookup's hits to `found`, except cached (pending) entries: their keys may have
        changed, and the cache already answered for them."""
        if any("doc_id" not in hit.get("fields", {}) for hit in hits["hits"]):
            # a doc id longer than the keyword's ignore_above has no doc value: ask _source
            try:
                response = self._call(
                    partial(self._client.search, index=self.fingerprint_index,
                            request_cache=False, **self._lookup_body(query, source=True))
                )
            except ApiError as exc:
                raise IndexFailure(f"candidate lookup failed: {_describe(exc)}") from exc
            hits = {"hits": [{"fields": {"doc_id": [hit["_source"]["doc_id"]]}}
                             for hit in response.body["hits"]["hits"]]}
        if len(hits["hits"]) >= self.max_candidates and not self._warned_truncated:
            self._warned_truncated = True
            log.warning(
                "neardup: more than %d candidates share a key; only the first %d are verified",
                self.max_candidates,
                self.max_candidates,
            )
        for hit in hits["hits"]:
            doc_id = hit["fields"]["doc_id"][0]
            if doc_id not in cached:
                found.add(doc_id)

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        """Entries of the ids: the cache first, then `mget` for the rest."""
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            self._check_open()
            result = self._cache.get(wanted)
        for source in self._stored_sources([i for i in wanted if i not in result]):
            entry = _entry(source)
            result[entry.doc_id] = entry
        return result

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        """Each id's membership: the cache first, then `mget` of the metadata it needs (no
        signatures travel)."""
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            self._check_open()
            result = self._cache.memberships(wanted)
        for source in self._stored_sources(
            [i for i in wanted if i not in result],
            fields=["doc_id", "meta.cluster", "meta.to_original"],
        ):
            result[source["doc_id"]] = membership_of(_entry(source))
        return result

    def _stored_sources(
        self, ids: Sequence[str], fields: list[str] | None = None
    ) -> Iterable[Mapping[str, Any]]:
        """`_source` (or its `fields`) of each stored fingerprint document among `ids`."""
        for start in range(0, len(ids), MGET_CHUNK):
            chunk = ids[start : start + MGET_CHUNK]
            by_es_id = {es_id(doc_id): doc_id for doc_id in chunk}
            try:
                response = self._call(
                    partial(self._client.mget, index=self.fingerprint_index, ids=list(by_es_id),
                            source_includes=fields)
                )
            except ApiError as exc:
                raise IndexFailure(
                    f"fetching stored fingerprints failed: {_describe(exc)}"
                ) from exc
            for doc in response.body["docs"]:
                if doc.get("found") and by_es_id.get(doc["_id"]) == doc["_source"].get("doc_id"):
                    yield doc["_source"]  # the check guards the sha256 _id mapping

    def count(self) -> int:
        """Documents in the index; flushes first so pending re-adds are not counted twice."""
        with self._lock:
            self._check_open()
            self._flush()
            try:
                response = self._call(lambda: self._client.count(index=self.fingerprint_index))
            except ApiError as exc:
                raise IndexFailure(f"counting fingerprints failed: {_describe(exc)}") from exc
            return int(response.body["count"])

    # ------------------------------------------------------------------ document frequency

    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        """Queue the page's DF document (its distinct words); it replaces any earlier one."""
        words = sorted({int(w) for w in word_hashes})
        source = {"doc_id": doc_id, "words": [f"{w:016x}" for w in words], "added": _now()}
        with self._lock:
            self._check_open()
            self._ensure_df()
            self._df_cache.add_document_frequencies(doc_id, words)
            self._df_cached.add(doc_id)
            self._queue(self.df_index, es_id(doc_id), source)

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        """Aggregated DF of the stored pages (pending and `exclude` left out) + pending DF."""
        wanted = list(dict.fromkeys(int(w) for w in word_hashes))
        counts, _ = self._df_query(wanted, exclude)
        return counts

    def document_count(self, exclude: str | None = None) -> int:
        return self._df_query([], exclude)[1]

    def _df_query(self, wanted: list[int], exclude: str | None) -> tuple[dict[int, int], int]:
        with self._lock:
            self._check_open()
            self._ensure_df()
            counts = self._df_cache.document_frequencies(wanted, exclude)
            documents = self._df_cache.document_count(exclude)
            skip = sorted(self._df_cached | ({exclude} if exclude is not None else set()))
        query = {"bool": {"must_not": [{"ids": {"values": [es_id(i) for i in skip]}}]}}
        by_hex = {f"{w:016x}": w for w in wanted}
        hexes = list(by_hex)
        for start in range(0, max(len(hexes), 1), DF_CHUNK):
            chunk = hexes[start : start + DF_CHUNK]
            aggs = {"df": {"filter": {"terms": {"words": chunk}}, "aggs": {"w": {"terms": {
                "field": "words", "include": chunk, "size": len(chunk)}}}}} if chunk else None
            try:
                response = self._call(
                    partial(self._client.search, index=self.df_index, query=query, size=0,
                            aggs=aggs, track_total_hits=True, request_cache=False)
                )
            except ApiError as exc:
                raise IndexFailure(f"document frequency lookup failed: {_describe(exc)}") from exc
            if start == 0:
                documents += int(response.body["hits"]["total"]["value"])
            if chunk:
                for bucket in response.body["aggregations"]["df"]["w"]["buckets"]:
                    word = by_hex[bucket["key"]]
                    counts[word] = counts.get(word, 0) + int(bucket["doc_count"])
        return counts, documents

    def _ensure_df(self) -> None:
        """Create the DF side index on first use (pages-only crawls never pay for it)."""
        if not self._df_ready:
            self._install("df", self.df_index, "neardup-df")
            self._df_ready = True

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
            try:
                self._flush()
            finally:
                self._closed = True
                self._client.close()

    # ------------------------------------------------------------------ bulk

    def _flush(self) -> None:
        if not self._buffer:
            return
        actions = list(self._buffer.values())
        try:
            _, errors = self._call(lambda: self._bulk(actions))
        except ApiError as exc:
            self.counters["bulk_refused"] += len(actions)
            log.error("neardup: bulk write of %d documents rejected: %s", len(actions),
                      _describe(exc))
            raise IndexFailure(f"bulk write rejected: {_describe(exc)}") from exc
        # Sent (or refused for good): the buffer is done either way; on a transport failure
        # (_call raised above) it stays for the next flush.
        self._buffer.clear()
        failed = {(e["_index"], e["_id"]) for e in errors}
        refresh = sorted({a["_index"] for a in actions if (a["_index"], a["_id"]) not in failed})
        if refresh:
            try:
                self._call(lambda: self._client.indices.refresh(index=",".join(refresh)))
            except ApiError as exc:
                raise IndexFailure(f"refresh after bulk failed: {_describe(exc)}") from exc
        # Now searchable (or never stored): Elasticsearch is the truth for these doc ids again.
        sent = {a["_source"]["doc_id"] for a in actions if a["_index"] == self.fingerprint_index}
        for doc_id in {a["_source"]["doc_id"] for a in actions if a["_index"] == self.df_index}:
            self._df_cache.remove_document_frequencies(doc_id)
            self._df_cached.discard(doc_id)
        keep = {doc_id: e for doc_id, e in self._cached.items() if doc_id not in sent}
        if len(keep) != len(self._cached):
            self._cached = keep
            self._cache = MemoryIndex()
            for entry in keep.values():
                self._cache.add(entry)
        if errors:
            self.counters["bulk_refused"] += len(errors)
            summary = _bulk_summary(errors, len(actions))
            log.error("neardup: %s", summary)
            raise IndexFailure(summary)

    def _bulk(self, actions: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
        """One bulk helper run; per-document errors returned, 429s retried by the helper."""
        success, raw_errors = helpers.bulk(
            self._client,
            actions,
            chunk_size=max(len(actions), 1),
            raise_on_error=False,
            raise_on_exception=True,
            max_retries=3,
            initial_backoff=1,
            stats_only=False,
        )
        errors: list[dict[str, Any]] = []
        assert isinstance(raw_errors, list)
        for item in raw_errors:
            for op in item.values():  # {"index": {"_index", "_id", "status", "error"}}
                errors.append(op)
        return success, errors

    def _check_open(self) -> None:
        if self._closed:
            raise IndexFailure("the Elasticsearch index is closed")

    def __repr__(self) -> str:
        return f"ElasticIndex({self._location!r}, {self.fingerprint_index!r})"


def _bulk_summary(errors: list[dict[str, Any]], total: int) -> str:
    """`N of M documents refused: reasons` with the first few documents named."""
    shown = []
    for op in errors[:3]:
        error = op.get("error")
        if isinstance(error, dict):
            reason = f"{error.get('type')}: {error.get('reason')}"
        else:
            reason = str(error)
        shown.append(f"{op.get('_index')}/{op.get('_id')} (status {op.get('status')}): {reason}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"Elasticsearch refused {len(errors)} of {total} documents: " + "; ".join(shown) + more


def _candidate_query(keys: Mapping[str, Sequence[str]]) -> dict[str, Any] | None:
    """The filter-only query for "shares a key of the same method" (None: no keys at all)."""
    should = [
        {"terms": {_keys_field(method): list(dict.fromkeys(values))}}
        for method, values in keys.items()
        if values
    ]
    if not should:
        return None
    return {"bool": {"filter": [{"bool": {"should": should, "minimum_should_match": 1}}]}}


def _entry(source: Mapping[str, Any]) -> IndexEntry:
    """An IndexEntry from a stored fingerprint document."""
    methods = source.get("key_methods") or [
        name[: -len("_keys")] for name in source if name.endswith("_keys")
    ]
    keys = {method: list(source.get(f"{method}_keys") or []) for method in methods}
    return IndexEntry(
        doc_id=source["doc_id"],
        signatures=dict(source.get("signatures") or {}),
        keys=keys,
        meta=dict(source.get("meta") or {}),
    )
