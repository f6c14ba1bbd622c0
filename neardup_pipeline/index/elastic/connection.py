"""Reaching Elasticsearch: the one client factory (URL, credentials, TLS, timeouts), bounded
retries, errors that say their cause and fix (diagnosis.py), and the templates and indices
installed at start.

The sync client is deliberate: the Scrapy pipeline calls the index from one worker thread.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import ssl
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from elastic_transport import SerializationError, TransportError
from elasticsearch import ApiError, Elasticsearch

from neardup_pipeline.errors import CaFileError, ConfigError, IndexFailure, IndexUnavailable
from neardup_pipeline.index.elastic import compat
from neardup_pipeline.index.elastic.blocks import WritesRefused, block_fix
from neardup_pipeline.index.elastic.credentials import resolve_credentials
from neardup_pipeline.index.elastic.diagnosis import (
    CA_HINT,
    LIVENESS_CALL,
    diagnose,
    is_access_or_setup,
)
from neardup_pipeline.index.elastic.environment import VARIABLES
from neardup_pipeline.index.elastic.redaction import redact_url, scrub, split_userinfo
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
# urllib3 logs the whole peer certificate when it finds the name not in it; diagnosis.py says
# the same in a line (the names, the fix), so that dump is left out.
URLLIB3_CONNECTION_LOGGER = "urllib3.connection"


class _NoCertificateDump(logging.Filter):
    """Drops urllib3's "Certificate did not match expected hostname: ... Certificate: {...}"."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Certificate did not match expected hostname")


def quiet_client_logs() -> None:
    """Keep the client's per-request lines out of the crawl's log (WARNING and above pass),
    unless the user set a level on its logger themselves."""
    client_log = logging.getLogger(CLIENT_LOGGER)
    if client_log.level == logging.NOTSET and \
            logging.getLogger(f"{CLIENT_LOGGER}.transport").level == logging.NOTSET:
        client_log.setLevel(logging.WARNING)
    urllib3_log = logging.getLogger(URLLIB3_CONNECTION_LOGGER)
    if not any(isinstance(f, _NoCertificateDump) for f in urllib3_log.filters):
        urllib3_log.addFilter(_NoCertificateDump())


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
    """A client for `url` from the configuration's Elasticsearch settings, and the URL without
    its credentials, for messages (see `client_from_settings`)."""
    return client_from_settings(url, config.elastic)


def client_from_settings(
    url: str, settings: ElasticSettings, *, retries: int = 0,
    env: Mapping[str, str] | None = None,
) -> tuple[Elasticsearch, str]:
    """The one client factory: a client for `url`, and the URL without its credentials.

    `url` names one node, or several nodes of one cluster separated by commas (`split_nodes`):
    the client sends each request to the next live one and sets a failed one aside for a while.

    Credentials come from the settings, the URL's `user:password@` (any characters,
    percent-decoded) or `env`, the process environment by default (credentials.py); they never
    reach the client inside the URL, so no client message can quote them. A CA file left unset
    is NEARDUP_ES_CA_CERTS; verification and timeouts are settings (the commands and the crawl
    read their NEARDUP_ES_* variables into them: environment.py). `retries`: the client's
    own retries of a failed connection (0 where Connection.call retries, within es_retry_seconds).
    A CA file is checked here; verification off is said once, here, not once per request.
    """
    env = os.environ if env is None else env
    if settings.ca_certs is None and env.get(VARIABLES["ca_certs"]):
        settings = dataclasses.replace(settings, ca_certs=env[VARIABLES["ca_certs"]])
    hosts, userinfo, location = split_nodes(url)
    credentials = resolve_credentials(settings.api_key, settings.basic_auth, userinfo, env)
    kwargs: dict[str, Any] = {"request_timeout": settings.request_timeout,
                              "max_retries": retries, **credentials.client_options()}
    tls = "none (http)"
    if hosts[0].startswith("https://"):
        if not settings.verify_certs:
            kwargs.update(verify_certs=False, ssl_show_warn=False)  # warned once, below
            tls = "certificate NOT verified"
            log.warning(
                "neardup: TLS certificate verification is off for %s (NEARDUP_ES_VERIFY_CERTS, "
                "--no-es-verify-certs): the traffic is encrypted but any server is trusted; "
                "give its CA with %s instead", location, CA_HINT)
        elif settings.ca_certs:
            check_ca_file(settings.ca_certs)
            kwargs["ca_certs"] = settings.ca_certs
            tls = f"verified with the CA file {settings.ca_certs}"
        else:
            tls = "verified with the default CAs"
    elif settings.ca_certs:
        log.warning("neardup: the CA file %s is not used: %s is http:// (https:// for TLS)",
                    settings.ca_certs, location)
    quiet_client_logs()
    log.info("neardup: Elasticsearch at %s (auth: %s; TLS: %s)", location,
             credentials.summary(), tls)
    try:
        client = compat.client(hosts, **kwargs)  # speaks to 8.19 and 9.x servers
    except (ValueError, TypeError) as exc:  # its text is scrubbed, never echoed as it is
        raise ConfigError(f"bad Elasticsearch settings for {location}: "
                          f"{scrub(str(exc), credentials.secrets)}") from None
    # The one place a built client is returned: whatever adapts every client goes here.
    return client, location


# A comma separates nodes only where a scheme follows it: a password may hold commas.
_NODE_SEPARATOR = re.compile(r"\s*,\s*(?=https?://)")


def split_nodes(url: str) -> tuple[list[str], str | None, str]:
    """The node URLs of `url` (one, or several of one cluster separated by commas) without
    their credentials, the credentials (one set, for every node), and `url` fit for messages."""
    urls = _NODE_SEPARATOR.split(url)
    location = ",".join(redact_url(u) for u in urls)
    parts = [split_userinfo(u) for u in urls]
    for (bare, _), shown in zip(parts, urls, strict=True):
        _check_url(bare, redact_url(shown))
    if len({info for _, info in parts if info is not None}) > 1:
        raise ConfigError(f"{location}: the node URLs hold different credentials; a cluster "
                          "takes one set: give it once (NEARDUP_ES_USERNAME and "
                          "NEARDUP_ES_PASSWORD)")
    if len({urlsplit(bare).scheme for bare, _ in parts}) > 1:
        raise ConfigError(f"{location} mixes http:// and https://: the nodes of one cluster "
                          "speak one")
    userinfo = next((info for _, info in parts if info is not None), None)
    return [bare for bare, _ in parts], userinfo, location


def _check_url(bare: str, location: str) -> None:
    """Refuse a URL (without its credentials) that names no http(s) host and port."""
    try:
        parts = urlsplit(bare)
        # .port raises ValueError for a port that is not a number
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and (
            parts.port is None or parts.port > 0)
    except ValueError:
        valid = False
    if not valid:
        raise ConfigError(f"{location} is not an Elasticsearch URL: use http(s)://host:port "
                          "(several nodes: http(s)://host1:port,http(s)://host2:port; "
                          "credentials in NEARDUP_ES_USERNAME and NEARDUP_ES_PASSWORD rather "
                          "than in the URL)")


def check_ca_file(path: str) -> None:
    """Refuse a CA file that is missing, unreadable or holds no PEM certificate, before any
    request (the client would say only "TLS error")."""
    try:
        ssl.create_default_context(cafile=path)
    except ssl.SSLError:
        raise CaFileError(f"the CA file {path} holds no PEM certificate: give the CA's "
                          f"certificate with {CA_HINT}") from None
    except FileNotFoundError:
        raise CaFileError(f"the CA file {path} does not exist: give the file with "
                          f"{CA_HINT}") from None
    except OSError as exc:
        raise CaFileError(f"the CA file {path} cannot be read ({exc.strerror}): give a "
                          f"readable PEM file with {CA_HINT}") from None


class Connection:
    """A client with bounded retries; `counters` tell the crawl's stats what went wrong
    (retries, unavailable, bulk_refused)."""

    # False: an administrator installs the index templates (`neardup es install-templates`);
    # `install` only checks them, so the role needs no cluster privilege beyond `monitor`.
    manage_templates = True
    # The run's fingerprint and pages index names, so that a TemplatesMissing names the one
    # install command for all of them (templates.install_command); None: the index in question.
    index_names: tuple[str, str | None] | None = None

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
                if isinstance(exc, ApiError) and error_type(exc) == "cluster_block_exception":
                    self.away = False  # it answers; the block stays until someone lifts it
                    raise self._blocked(exc) from exc
                if isinstance(exc, ApiError) and exc.meta.status not in RETRY_STATUSES:
                    self.away = False  # it answered, with a refusal retrying cannot change
                    if exc.meta.status in (401, 403):  # credentials or privileges: say which
                        raise diagnose(exc, self.client, self.location) from exc
                    raise
                if isinstance(exc, TransportError):  # TLS set up differently: never an outage
                    problem = diagnose(exc, self.client, self.location)
                    if is_access_or_setup(problem):
                        raise problem from exc
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.counters["unavailable"] += 1
                    overloaded = isinstance(exc, ApiError) and exc.meta.status == 429
                    waited = (
                        "is still overloaded" if overloaded and self.away
                        else f"stayed overloaded for {self.retry_seconds:g} s" if overloaded
                        else "still does not answer" if self.away
                        else f"did not answer within {self.retry_seconds:g} s")
                    self.away = True
                    raise IndexUnavailable(
                        f"Elasticsearch at {self.location} {waited} "
                        f"({attempt} attempt{'' if attempt == 1 else 's'}): "
                        f"{describe(exc)}"
                    ) from exc
                self.counters["retries"] += 1
                pause = min(delay, remaining)
                log.info(  # the error, if it comes, counts the attempts
                    "neardup: Elasticsearch request failed (%s), retry in %.2fs",
                    describe(exc),
                    pause,
                )
                time.sleep(pause)
                delay = min(delay * 2, MAX_BACKOFF_SECONDS)
            else:
                self.away = False
                return result

    def _blocked(self, exc: ApiError) -> WritesRefused:
        """An index block on the request's index: what holds the writes, and how to lift it."""
        reason = describe(exc)
        fix = block_fix(reason)
        return WritesRefused(f"Elasticsearch at {self.location} holds writes back ({reason})"
                             + (f": {fix}" if fix else ""))

    def ping(self, timeout: float) -> bool:
        """True when the server answers cluster health within `timeout` seconds (no retries);
        False while it is away. A refusal (401, 403) or a TLS mismatch is no absence: it raises
        its ConnectionSetupError, so degraded mode never waits for what cannot come."""
        try:
            self.client.options(request_timeout=timeout, max_retries=0).cluster.health(
                timeout=f"{max(int(timeout), 1)}s"
            )
        except ApiError as exc:
            if exc.meta.status in (401, 403):
                raise diagnose(exc, self.client, self.location, LIVENESS_CALL) from exc
            return False
        except TransportError as exc:
            problem = diagnose(exc, self.client, self.location, LIVENESS_CALL)
            if is_access_or_setup(problem):
                raise problem from exc
            return False
        self.away = False  # back: the next call has its whole wait again
        return True

    def probe(self) -> None:
        """Check once, within START_TIMEOUT, that the server answers, over TLS as configured,
        and takes the credentials; the liveness check needs the cluster privilege `monitor`."""
        probe = self.client.options(request_timeout=START_TIMEOUT, max_retries=0)
        try:
            probe.cluster.health(timeout=f"{int(START_TIMEOUT)}s")
        except ApiError as exc:
            if exc.meta.status in (401, 403):
                raise diagnose(exc, self.client, self.location, LIVENESS_CALL) from exc
            # Any other answer (a 503 while a master is elected): the calls will retry.
        except TransportError as exc:
            raise diagnose(exc, self.client, self.location, LIVENESS_CALL) from exc

    def encodable(self, source: dict[str, Any], what: str) -> None:
        """Refuse a value JSON cannot carry now, so it never poisons a whole bulk batch later."""
        try:
            self.client.transport.serializers.dumps(source, mimetype="application/json")
        except SerializationError as exc:
            raise IndexFailure(f"cannot encode {what} for Elasticsearch: {exc}") from exc
