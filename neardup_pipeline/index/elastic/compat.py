"""One client for Elasticsearch 8 and 9 servers: the REST compatibility version, asked once.

The Python client marks every request `compatible-with=<its major>` (Accept and Content-Type).
A server accepts its own major and the one before it, so an 8.x server refuses the 9.x client's
requests (400 `media_type_header_exception`) while a 9.x server takes `compatible-with=8`. The
client's own `options(headers=...)` cannot lower it: each API call's headers win over the
client's, and the client stamps its major on them last. So the transport beneath it asks the
server once, before the first request, which version it accepts (its node's version, marked with
the client's major, then the one before), and from then on rewrites the version in those two
headers when the server is the older major. A server that accepts neither, or reports a major
other than 8 or 9, is an `UnsupportedServer` error naming its version.

The question is `GET /_nodes/_local` (filtered to the version), not `GET /`: every distribution
has it (the test distribution lacks the root endpoint, and a 405 would mark the node dead), and
it needs the same cluster privilege, `monitor`. It carries the first request's headers, so its
credentials: a server checks the media type after authentication and before authorization, so
a 403 (no `monitor`) still tells whether the version is accepted, only not which release runs.
A 401 tells nothing: the question is asked again before the next request.

The answer also tells whether Elasticsearch answered at all: it marks its answers with the
header `X-Elastic-Product` (all but a 401 of its security layer, which is JSON with an `error`).
Another HTTP server at the URL (a web server on the wrong port) is a `NotElasticsearch` error
naming the URL and what it answered, not a crash on a body that is not JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import elasticsearch
from elastic_transport import (
    ApiResponseMeta,
    AsyncTransport,
    HttpHeaders,
    NodeConfig,
    SerializationError,
    Transport,
    TransportApiResponse,
)
from elastic_transport.client_utils import DEFAULT
from elasticsearch import Elasticsearch

from neardup_pipeline.errors import NotElasticsearch, UnsupportedServer
from neardup_pipeline.index.elastic.redaction import scrub

if TYPE_CHECKING:
    from elasticsearch import AsyncElasticsearch

__all__ = [
    "CLIENT_MAJOR",
    "SUPPORTED_MAJORS",
    "async_client",
    "client",
    "server_compatibility",
]

log = logging.getLogger(__name__)

CLIENT_MAJOR: int = elasticsearch.__version__[0]
CANDIDATES = (CLIENT_MAJOR, CLIENT_MAJOR - 1)  # what a server may accept from this client
SUPPORTED_MAJORS = (8, 9)
OLDEST_TESTED = (8, 19)  # the oldest server the test suite runs against
SUPPORTED_TEXT = "Elasticsearch 8.19 and 9.x"
PROBE = "/_nodes/_local?filter_path=nodes.*.version"
_COMPAT = re.compile(r"compatible-with=\d+")
_VERSION = re.compile(r"^(\d+)\.(\d+)")
_MEDIA_TYPES = ("accept", "content-type")
PRODUCT_HEADER = "x-elastic-product"
# A proxy's answers while the node behind it is away or busy: retried, never taken for the
# server (no Elasticsearch header, an HTML body) being another product.
PASSING_STATUSES = frozenset({429, 502, 503, 504})
SHOWN_CHARS = 80  # of a foreign server's answer, in the message
_TAGS = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"\s+")
URL_HINT = ("check the URL (--backend, --es or NEARDUP_BACKEND): it must be an Elasticsearch "
            "node's HTTP address (port 9200 by default)")


@dataclass(frozen=True)
class Answer:
    """What the server said to the probe marked with one compatibility version."""

    refused: bool  # 400 media_type_header_exception: the version is not one it accepts
    version: str | None  # its node's version number, when it told it (200)
    unauthenticated: bool = False  # 401: it said nothing about the version


def read_answer(status: int, body: object) -> Answer:
    """Sort a probe's response: refused for its compatibility version, or accepted (with the
    node's version number when the server told it)."""
    data = body if isinstance(body, Mapping) else {}
    error = data.get("error")
    if status == 400 and isinstance(error, Mapping) and \
            error.get("type") == "media_type_header_exception":
        return Answer(refused=True, version=None)
    nodes = data.get("nodes") if status == 200 else None
    node = next(iter(nodes.values()), None) if isinstance(nodes, Mapping) else None
    version = node.get("version") if isinstance(node, Mapping) else None
    return Answer(refused=False, version=str(version) if version else None,
                  unauthenticated=status == 401)


def answered_by_elasticsearch(
    status: int, headers: Mapping[str, str], body: object, where: str,
    secrets: tuple[str, ...] = (),
) -> None:
    """Raise NotElasticsearch when the probe's answer is not Elasticsearch's: no product
    header and no JSON it would send (`nodes`, `error`); `secrets` are kept out of the quote."""
    if PRODUCT_HEADER in HttpHeaders(headers) or status in PASSING_STATUSES:
        return
    if isinstance(body, Mapping) and ("nodes" in body or "error" in body):
        return  # its security layer's 401, or a fork without the header (its version decides)
    kind = HttpHeaders(headers).get("content-type") or "no content type"
    raise NotElasticsearch(
        f"{where} answered, but is not Elasticsearch: GET {PROBE.split('?')[0]} got "
        f"{status} ({kind}{_quote(body, secrets)}); {URL_HINT}")


def _quote(body: object, secrets: tuple[str, ...]) -> str:
    """The start of a body, tags and runs of space removed, for a message."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    elif isinstance(body, Mapping | list):
        body = json.dumps(body)
    text = _SPACES.sub(" ", _TAGS.sub(" ", str(body or ""))).strip()
    text = scrub(text, secrets)
    if not text:
        return ""
    return f": {text[:SHOWN_CHARS]!r}" if len(text) <= SHOWN_CHARS else \
        f": {text[:SHOWN_CHARS] + '...'!r}"


def _authorization(request: dict[str, Any]) -> tuple[str, ...]:
    """The request's Authorization value and its token: never quoted from an echoing server."""
    headers = request.get("headers")
    value = str(headers.get("authorization") or "") if isinstance(headers, Mapping) else ""
    return tuple(v for v in (value, value.partition(" ")[2]) if v)


def server_compatibility(answers: list[Answer], where: str) -> int | None:
    """The compatibility major to mark requests with (None: the client's own), from the answers
    to the client's major and then (after a refusal) the one before; raises UnsupportedServer."""
    accepted = next((a for a in answers if not a.refused), None)
    if accepted is None:
        raise UnsupportedServer(
            f"the server at {where} accepts neither Elasticsearch {CLIENT_MAJOR} nor "
            f"{CLIENT_MAJOR - 1} requests: neardup supports {SUPPORTED_TEXT}"
        )
    marked = CANDIDATES[answers.index(accepted)]
    found = _VERSION.match(accepted.version or "")
    if found:
        release = (int(found.group(1)), int(found.group(2)))
        if release[0] not in SUPPORTED_MAJORS:
            raise UnsupportedServer(
                f"the server at {where} runs version {accepted.version}: neardup supports "
                f"{SUPPORTED_TEXT}"
            )
        if release < OLDEST_TESTED:
            log.warning(
                "neardup: Elasticsearch %s at %s is older than %d.%d, the oldest tested",
                accepted.version, where, *OLDEST_TESTED,
            )
    if marked != CLIENT_MAJOR:
        log.info(
            "neardup: Elasticsearch %s at %s: requests marked compatible-with=%d",
            accepted.version or f"{marked}.x", where, marked,
        )
        return marked
    return None


def rewrite(headers: Mapping[str, str], major: int) -> HttpHeaders:
    """A copy of `headers` whose Accept and Content-Type ask for compatibility with `major`."""
    copy = HttpHeaders(headers)
    for name in _MEDIA_TYPES:
        value = copy.get(name)
        if value:
            copy[name] = _COMPAT.sub(f"compatible-with={major}", value)
    return copy


def question(request_headers: object, major: int) -> HttpHeaders:
    """The probe's headers: the request's (its credentials), asking for `major`, no body."""
    headers = HttpHeaders(request_headers if isinstance(request_headers, Mapping) else {})
    headers.pop("content-type", None)
    headers["accept"] = f"application/vnd.elasticsearch+json; compatible-with={major}"
    return headers


class Negotiation:
    """One transport's state: whether the server was asked, and the version to mark."""

    def __init__(self, nodes: list[NodeConfig]) -> None:
        node = nodes[0] if nodes else None
        # Scheme, host and port only: credentials travel in headers, never here.
        self.where = f"{node.scheme}://{node.host}:{node.port}" if node else "Elasticsearch"
        self.settled = False
        self.major: int | None = None

    def settle(self, answers: list[Answer]) -> None:
        """Take the answers (raises UnsupportedServer); a 401 leaves the question open."""
        self.major = server_compatibility(answers, self.where)
        self.settled = not answers[-1].unauthenticated

    def mark(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The request's arguments, its headers marked with the version the server accepts."""
        headers = kwargs.get("headers")
        if self.major is not None and isinstance(headers, Mapping):
            return {**kwargs, "headers": rewrite(headers, self.major)}
        return kwargs


def probe_options(request: dict[str, Any], major: int) -> dict[str, Any]:
    """The version question's options: the first request's credentials and timeouts, marked
    with `major`."""
    return {"headers": question(request.get("headers"), major),
            "request_timeout": request.get("request_timeout", DEFAULT),
            "max_retries": request.get("max_retries", DEFAULT)}


def sort_answer(
    meta: ApiResponseMeta, body: object, where: str, request: dict[str, Any]
) -> Answer:
    """The probe's answer, after checking that Elasticsearch gave it (NotElasticsearch)."""
    answered_by_elasticsearch(meta.status, meta.headers, body, where, _authorization(request))
    return read_answer(meta.status, body)


def unreadable(where: str, exc: SerializationError) -> NotElasticsearch:
    """The error for a probe answer the client cannot even decode (not JSON nor text)."""
    return NotElasticsearch(f"{where} answered, but is not Elasticsearch: GET "
                            f"{PROBE.split('?')[0]} got a body that is not JSON ({exc}); "
                            f"{URL_HINT}")


class CompatTransport(Transport):
    """The sync transport, marking requests with the version the server accepts."""

    def __init__(self, node_configs: list[NodeConfig], *args: Any, **kwargs: Any) -> None:
        super().__init__(node_configs, *args, **kwargs)
        self._negotiation = Negotiation(node_configs)
        self._lock = threading.Lock()

    def perform_request(
        self, method: str, target: str, **kwargs: Any
    ) -> TransportApiResponse:
        negotiation = self._negotiation
        if not negotiation.settled:
            with self._lock:
                if not negotiation.settled:
                    answers: list[Answer] = []
                    for major in CANDIDATES:
                        try:
                            meta, body = super().perform_request(
                                "GET", PROBE, **probe_options(kwargs, major))
                        except SerializationError as exc:
                            raise unreadable(negotiation.where, exc) from None
                        answers.append(sort_answer(meta, body, negotiation.where, kwargs))
                        if not answers[-1].refused:
                            break
                    negotiation.settle(answers)
        return super().perform_request(method, target, **negotiation.mark(kwargs))


class AsyncCompatTransport(AsyncTransport):
    """The async transport, marking requests with the version the server accepts."""

    def __init__(self, node_configs: list[NodeConfig], *args: Any, **kwargs: Any) -> None:
        super().__init__(node_configs, *args, **kwargs)
        self._negotiation = Negotiation(node_configs)
        self._lock: asyncio.Lock | None = None  # made on the loop that first uses it

    async def perform_request(  # type: ignore[override]
        self, method: str, target: str, **kwargs: Any
    ) -> TransportApiResponse:
        negotiation = self._negotiation
        if not negotiation.settled:
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if not negotiation.settled:
                    answers: list[Answer] = []
                    for major in CANDIDATES:
                        try:
                            meta, body = await super().perform_request(
                                "GET", PROBE, **probe_options(kwargs, major))
                        except SerializationError as exc:
                            raise unreadable(negotiation.where, exc) from None
                        answers.append(sort_answer(meta, body, negotiation.where, kwargs))
                        if not answers[-1].refused:
                            break
                    negotiation.settle(answers)
        return await super().perform_request(method, target, **negotiation.mark(kwargs))


def client(hosts: Any, **kwargs: Any) -> Elasticsearch:
    """`Elasticsearch(hosts, **kwargs)` that speaks to 8.19 and 9.x servers alike."""
    return Elasticsearch(hosts, transport_class=CompatTransport, **kwargs)


def async_client(hosts: Any, **kwargs: Any) -> AsyncElasticsearch:
    """`AsyncElasticsearch(hosts, **kwargs)` (needs the client's `async` extra, aiohttp) that
    speaks to 8.19 and 9.x servers alike."""
    from elasticsearch import AsyncElasticsearch

    return AsyncElasticsearch(hosts, transport_class=AsyncCompatTransport, **kwargs)
