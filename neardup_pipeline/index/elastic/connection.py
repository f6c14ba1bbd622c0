"""Reaching Elasticsearch: the client from the settings, bounded retries, readable errors, and
the templates and indices installed at start.

The sync client is deliberate: the Scrapy pipeline calls the index from one worker thread.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from elastic_transport import SerializationError, TransportError
from elasticsearch import ApiError, BadRequestError, Elasticsearch

from neardup_pipeline.config import redact_backend
from neardup_pipeline.errors import IndexFailure, IndexUnavailable
from neardup_pipeline.index.elastic.mappings import load_mapping
from neardup_pipeline.index.elastic.settings import ElasticSettings

if TYPE_CHECKING:
    from neardup_pipeline.config import NearDupConfig

log = logging.getLogger(__name__)

T = TypeVar("T")

START_TIMEOUT = 5.0  # seconds for the reachability probe: fail fast, never hang at start
RETRY_SECONDS = ElasticSettings.retry_seconds  # bounded wait per call, then IndexUnavailable
BACKOFF_SECONDS = 0.25  # first pause between attempts, doubled after each failed one...
MAX_BACKOFF_SECONDS = 4.0  # ...up to this
RETRY_STATUSES = frozenset({429, 502, 503, 504})  # overloaded or restarting: worth waiting for
CLIENT_LOGGER = "elastic_transport"  # logs every request at INFO: one line per page and bulk


def quiet_client_logs() -> None:
    """Keep the client's per-request lines out of the crawl's log (WARNING and above pass),
    unless the user set a level on its logger themselves."""
    client_log = logging.getLogger(CLIENT_LOGGER)
    if client_log.level == logging.NOTSET and \
            logging.getLogger(f"{CLIENT_LOGGER}.transport").level == logging.NOTSET:
        client_log.setLevel(logging.WARNING)


def error_type(exc: ApiError) -> str | None:
    """The `error.type` of an Elasticsearch error response, when it has one."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    return str(error.get("type")) if isinstance(error, dict) else None


def describe(exc: BaseException) -> str:
    """A short readable reason from an ApiError / TransportError (never the request body)."""
    if isinstance(exc, ApiError):
        info = exc.info if isinstance(exc.info, dict) else {}
        error = info.get("error")
        if isinstance(error, dict):
            return f"status {exc.meta.status}: {error.get('type')}: {error.get('reason')}"
        return f"status {exc.meta.status}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def client_from_config(url: str, config: NearDupConfig) -> tuple[Elasticsearch, str]:
    """A client for `url` from the config (or NEARDUP_ES_* environment), and the URL without
    its credentials, for messages."""
    api_key = config.elastic.api_key or os.environ.get("NEARDUP_ES_API_KEY") or None
    basic_auth = config.elastic.basic_auth
    if basic_auth is None and os.environ.get("NEARDUP_ES_USERNAME"):
        basic_auth = (
            os.environ["NEARDUP_ES_USERNAME"],
            os.environ.get("NEARDUP_ES_PASSWORD", ""),
        )
    kwargs: dict[str, Any] = {
        "request_timeout": config.elastic.request_timeout,
        "max_retries": 0,  # Connection.call retries, within the bounded wait es_retry_seconds
    }
    if api_key:
        kwargs["api_key"] = api_key  # wins over basic auth when both are configured
    elif basic_auth is not None:
        kwargs["basic_auth"] = tuple(basic_auth)
    if url.startswith("https://"):
        kwargs["verify_certs"] = config.elastic.verify_certs
        if config.elastic.ca_certs:
            kwargs["ca_certs"] = config.elastic.ca_certs
    location = redact_backend(url)
    quiet_client_logs()
    log.info(
        "neardup: Elasticsearch fingerprint index %r at %s (auth: %s)",
        config.elastic.fingerprint_index,
        location,
        "api key" if api_key else "basic" if basic_auth else "none",
    )
    try:
        return Elasticsearch(url, **kwargs), location
    except (ValueError, TypeError) as exc:
        raise IndexFailure(f"bad Elasticsearch settings for {location}: {exc}") from exc


class Connection:
    """A client with bounded retries; `counters` tell the crawl's stats what went wrong
    (retries, unavailable, bulk_refused)."""

    def __init__(self, client: Elasticsearch, location: str, retry_seconds: float) -> None:
        self.client = client
        self.location = location
        self.retry_seconds = retry_seconds
        self.counters: Counter[str] = Counter()
        # A call ran out of its wait and nothing has answered since: the next call tries once,
        # so a crawl already degraded (its close too) never waits the whole budget again.
        self.away = False

    def call(self, fn: Callable[[], T]) -> T:
        """Run a request; retry transport failures and 429/502/503/504 with backoff, for at most
        `retry_seconds` in all (one attempt while `away`), then raise IndexUnavailable (the
        caller degrades or fails)."""
        deadline = time.monotonic() + (0.0 if self.away else self.retry_seconds)
        delay = BACKOFF_SECONDS
        attempt = 0
        while True:
            attempt += 1
            try:
                result = fn()
            except SerializationError as exc:  # a value JSON cannot carry: retrying cannot help
                raise IndexFailure(f"cannot encode or decode a request: {exc}") from exc
            except (TransportError, ApiError) as exc:
                if isinstance(exc, ApiError) and exc.meta.status not in RETRY_STATUSES:
                    self.away = False  # it answered, with a refusal retrying cannot change
                    raise
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.counters["unavailable"] += 1
                    waited = "still does not answer" if self.away else (
                        f"did not answer within {self.retry_seconds:g} s")
                    self.away = True
                    raise IndexUnavailable(
                        f"Elasticsearch at {self.location} {waited} ({attempt} attempts): "
                        f"{describe(exc)}"
                    ) from exc
                self.counters["retries"] += 1
                pause = min(delay, remaining)
                log.warning(
                    "neardup: Elasticsearch request failed (%s), retry in %.2fs",
                    describe(exc),
                    pause,
                )
                time.sleep(pause)
                delay = min(delay * 2, MAX_BACKOFF_SECONDS)
            else:
                self.away = False
                return result

    def ping(self, timeout: float) -> bool:
        """True when the server answers cluster health within `timeout` seconds (no retries)."""
        try:
            self.client.options(request_timeout=timeout, max_retries=0).cluster.health(
                timeout=f"{max(int(timeout), 1)}s"
            )
        except (TransportError, ApiError):
            return False
        self.away = False  # back: the next call has its whole wait again
        return True

    def probe(self) -> None:
        """Check once, within START_TIMEOUT, that the server answers and takes the credentials."""
        probe = self.client.options(request_timeout=START_TIMEOUT, max_retries=0)
        try:
            probe.cluster.health(timeout=f"{int(START_TIMEOUT)}s")
        except ApiError as exc:
            # Reachable, but refused (auth, privileges): the later calls will say precisely.
            if exc.meta.status in (401,):
                raise IndexFailure(
                    f"Elasticsearch at {self.location} refused the credentials ({describe(exc)})"
                ) from exc
        except TransportError as exc:
            raise IndexUnavailable(
                f"Elasticsearch at {self.location} is not reachable ({describe(exc)}); "
                "check the URL, that the server runs, and the network"
            ) from exc

    def install(self, name: str, index: str, template_name: str) -> None:
        """Put the composable template when missing or older; create the index with the mapping.

        The template is `template_name` with its file's patterns when they cover `index`; a
        user's own index name gets a template of that name, for that index only.
        """
        client = self.client
        template = load_mapping(f"{name}-template")
        body = load_mapping(name)
        if not any(fnmatch.fnmatchcase(index, p) for p in template["index_patterns"]):
            template_name = index
            template = {**template, "index_patterns": [index]}
        try:
            current = self.call(
                lambda: client.options(ignore_status=404).indices.get_index_template(
                    name=template_name
                )
            )
            installed = [t["index_template"] for t in current.body.get("index_templates", [])]
            if not installed or int(installed[0].get("version") or 0) < int(template["version"]):
                # The client names the body's `_meta` parameter `meta`.
                args = {("meta" if k == "_meta" else k): v for k, v in template.items()}
                self.call(lambda: client.indices.put_index_template(name=template_name, **args))
            try:
                self.call(
                    lambda: client.indices.create(
                        index=index, settings=body["settings"], mappings=body["mappings"]
                    )
                )
            except BadRequestError as exc:
                if error_type(exc) != "resource_already_exists_exception":
                    raise
                # Existing index (another process, an older version): add what is missing.
                mappings = {k: v for k, v in body["mappings"].items() if k != "_meta"}
                self.call(lambda: client.indices.put_mapping(index=index, **mappings))
        except ApiError as exc:
            raise IndexFailure(
                f"cannot prepare Elasticsearch index {index!r} at {self.location}: "
                f"{describe(exc)}"
            ) from exc

    def encodable(self, source: dict[str, Any], what: str) -> None:
        """Refuse a value JSON cannot carry now, so it never poisons a whole bulk batch later."""
        try:
            self.client.transport.serializers.dumps(source, mimetype="application/json")
        except SerializationError as exc:
            raise IndexFailure(f"cannot encode {what} for Elasticsearch: {exc}") from exc
