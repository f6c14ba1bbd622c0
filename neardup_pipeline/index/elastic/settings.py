"""Settings of the Elasticsearch backend: index names, credentials, TLS, bulk size, waits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.index.elastic.credentials import parse_basic_auth
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
        default=None, repr=False,
        metadata=doc("API key (`encoded` of the create-API-key answer), also read from the "
                     "environment; never logged"),
    )
    basic_auth: tuple[str, str] | None = field(
        default=None, repr=False,
        metadata=doc(
            "User and password: `\"user,password\"` (split at the first comma) or a list of "
            "two; also read from the environment, as are `NEARDUP_ES_USERNAME` + "
            "`NEARDUP_ES_PASSWORD`; never logged. Prefer these to a password inside a URL on "
            "a command line (`--backend`, `--es`, `-s NEARDUP_BACKEND=...`), which `ps` shows "
            "for the whole run. Order of the sources: "
            "[elasticsearch.md](elasticsearch.md#connecting)"
        ),
    )
    verify_certs: bool = field(
        default=True,
        metadata=doc("TLS verification of the server's certificate (`false`: testing only; "
                     "one warning per client)"),
    )
    ca_certs: str | None = field(
        default=None,
        metadata=doc("CA file (PEM) that signs the server's certificate; checked at start"),
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
    manage_templates: bool = field(
        default=True,
        metadata=doc(
            "Install or update neardup's index templates at start (cluster privilege "
            "`manage_index_templates`); `false`: only check them, after an administrator ran "
            "`neardup es install-templates` (the role then needs no cluster privilege beyond "
            "`monitor`; see [elasticsearch.md](elasticsearch.md#least-privilege))"
        ),
    )

    def __post_init__(self) -> None:
        if self.basic_auth is not None:  # a string from Scrapy or the environment, or a list
            object.__setattr__(self, "basic_auth",
                               parse_basic_auth(self.basic_auth, "es_basic_auth"))
        if self.bulk_size < 1:
            raise ConfigError("es_bulk_size must be >= 1")
        if min(self.request_timeout, self.retry_seconds) <= 0:
            raise ConfigError("es_request_timeout and es_retry_seconds must be > 0")
