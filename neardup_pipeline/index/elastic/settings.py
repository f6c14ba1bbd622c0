"""Settings of the Elasticsearch backend: index names, credentials, TLS, bulk size, waits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.setting import doc


@dataclass(frozen=True)
class ElasticSettings:
    """What the Elasticsearch index reads (index/elastic/connection.py, store.py)."""

    PREFIX: ClassVar[str] = "es_"

    fingerprint_index: str = field(
        default="neardup-fingerprints",
        metadata=doc("The fingerprint index", name="fingerprint_index"),
    )
    pages_index: str | None = field(
        default=None,
        metadata=doc(
            "E.g. `neardup-pages`: every checked page (copies too) is indexed there with "
            "`cluster_id`, `is_canonical`, `duplicate_of` (see "
            "[elasticsearch.md](elasticsearch.md)); unset: no pages index",
            name="pages_index",
        ),
    )
    api_key: str | None = field(
        default=None,
        metadata=doc("API key (or the environment's `NEARDUP_ES_API_KEY`); never logged"),
    )
    basic_auth: tuple[str, str] | None = field(
        default=None,
        metadata=doc(
            "User and password, a list of two (or the environment's `NEARDUP_ES_USERNAME` + "
            "`NEARDUP_ES_PASSWORD`); never logged"
        ),
    )
    verify_certs: bool = field(
        default=True, metadata=doc("TLS verification of the server's certificate")
    )
    ca_certs: str | None = field(
        default=None, metadata=doc("CA bundle that signs the server's certificate")
    )
    bulk_size: int = field(default=500, metadata=doc("Fingerprints per bulk request"))
    # Seconds, not the client's defaults: an outage costs the crawl one page's wait, then pages
    # pass unchecked (degraded mode); a loaded cluster that needs longer is a setting away.
    request_timeout: float = field(
        default=5.0,
        metadata=doc(
            "Seconds per Elasticsearch request; raise it for large bulk batches on a loaded "
            "cluster (see [reliability.md](reliability.md#elasticsearch-faults))"
        ),
    )
    retry_seconds: float = field(
        default=5.0,
        metadata=doc(
            "Bounded wait per call: retries with backoff (0.25 s doubling to 4 s), then "
            "degraded mode. One page waits it (plus at most one request timeout) when the "
            "server goes away; while it stays away, calls (the close's too) try once"
        ),
    )

    def __post_init__(self) -> None:
        if self.bulk_size < 1:
            raise ConfigError("es_bulk_size must be >= 1")
        if min(self.request_timeout, self.retry_seconds) <= 0:
            raise ConfigError("es_request_timeout and es_retry_seconds must be > 0")
