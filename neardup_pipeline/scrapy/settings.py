"""Settings of the Scrapy pipeline: what it does with a duplicate, which item fields it reads
and writes, how it fingerprints, and how it rides out an unreachable Elasticsearch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.extras import require_extra
from neardup_pipeline.setting import doc
from neardup_pipeline.verdict.canonical import POLICIES, CanonicalPolicy

Action = Literal["drop", "tag"]
OnError = Literal["keep", "fail"]
EsStart = Literal["fail", "degraded"]


@dataclass(frozen=True)
class TagFields:
    """Item field names the pipeline writes in tag mode (configurable for declared Item classes)."""

    of: str = "neardup_of"
    similarity: str = "neardup_similarity"
    method: str = "neardup_method"
    cluster: str = "neardup_cluster"
    status: str = "neardup_status"


@dataclass(frozen=True)
class ScrapySettings:
    """What the pipeline and its page checkers read (scrapy/pipeline.py, scrapy/check/)."""

    PREFIX: ClassVar[str] = ""

    action: Action = field(
        default="drop",
        metadata=doc("`drop` (raises `NearDuplicate`, a `DropItem` logged at INFO) or `tag`"),
    )
    on_error: OnError = field(
        default="keep",
        metadata=doc(
            '`keep`: the item passes tagged `neardup_status = "error"`; `fail`: close the spider'
        ),
    )
    fingerprint_processes: int = field(
        default=1,
        metadata=doc(
            "Child processes that take the CPU work out of the crawler's process. With "
            "simhash/minhash/bag/auto, one child owns the whole check (fingerprint, lookup, "
            "record, in page order) on an embedded index (memory, SQLite, no pages index) or "
            "Elasticsearch (degraded mode and spool included; any value above 0 is that one "
            "child); otherwise children fingerprint and the pipeline's worker thread looks up. "
            "`0`: everything on the worker thread. A child that dies is restarted (SQLite "
            "writes not yet committed are lost with it; Elasticsearch entries not yet bulked "
            "stay in the write log) and the pages in flight are tried once more; a page that "
            "kills it twice passes tagged `error`. The children ignore Ctrl-C: the crawler's "
            "shutdown closes them, index committed"
        ),
    )
    html_field: str = field(default="html", metadata=doc("Item field holding the page's HTML"))
    text_field: str = field(
        default="text",
        metadata=doc("Item field holding the page's text (read when there is no HTML)"),
    )
    url_field: str = field(default="url", metadata=doc("Item field holding the page's URL"))
    id_field: str = field(default="url", metadata=doc("Item field naming the page in the index"))
    keep_html: bool = field(
        default=True,
        metadata=doc(
            "False: items leave the pipeline without their HTML field (feeds and logs need not "
            "carry whole pages); the page is checked first. True: HTML given as bytes leaves "
            "as the text neardup read, so a JSON or CSV feed can write it (bytes that are not "
            "text, an image's, one character per byte: `.encode('latin-1')` gives them back)"
        ),
    )
    tag_fields: TagFields = field(
        default_factory=TagFields,
        metadata=doc(
            "Dict renaming the tag fields by key (`of`, `similarity`, `method`, `cluster`, "
            '`status`), e.g. `{"of": "dup_of"}`'
        ),
    )
    late_duplicates_file: str | None = field(
        default=None,
        metadata=doc(
            "A JSONL file (appended to) of the pages that passed as their cluster's canonical "
            "and are near-duplicates now: `{url, now_duplicate_of, cluster}` a line, for the "
            "indexer to delete or re-point them; also the `late_duplicate` signal "
            "(`neardup_pipeline.scrapy.late`) and the `neardup/late_duplicates` stat"
        ),
    )
    canonical: CanonicalPolicy = field(
        default="first",
        metadata=doc(
            "The copy a cluster shows in the pages index: `first` seen, or `best` (declared "
            "canonical, then the earlier date, the longer text, https; never the URL's length; "
            "a better copy is kept even in drop mode, and the old canonical demoted). A page's "
            "own rel=canonical or og:url decides first under both"
        ),
    )
    es_start: EsStart = field(
        default="fail",
        metadata=doc(
            "Elasticsearch unreachable at open_spider: `fail` (clear error within 5 s) or "
            "`degraded`"
        ),
    )
    es_reprobe_seconds: float = field(
        default=10.0, metadata=doc("Degraded: seconds between checks that the server is back")
    )
    spool_path: str = field(
        default="neardup-spool.sqlite",
        metadata=doc(
            "SQLite spool of unchecked pages' fingerprints and unsent writes, replayed when the "
            "index takes them again (Elasticsearch back, the SQLite index's disk freed or lock "
            "released). A relative path lies in Scrapy's project data folder (`.scrapy/`, like "
            "`HTTPCACHE_DIR`); left at the default, an SQLite crawl spools to "
            "`neardup-sqlite-spool.sqlite` there, so one backend's spool is never replayed into "
            "the other; the file is created only when something is spooled"
        ),
    )

    def __post_init__(self) -> None:
        if self.action not in ("drop", "tag"):
            raise ConfigError(f"action must be 'drop' or 'tag', got {self.action!r}")
        if self.on_error not in ("keep", "fail"):
            raise ConfigError(f"on_error must be 'keep' or 'fail', got {self.on_error!r}")
        if self.fingerprint_processes < 0:
            raise ConfigError("fingerprint_processes must be >= 0 (0: no child process)")
        if self.canonical not in POLICIES:
            raise ConfigError(f"canonical must be one of {POLICIES}, got {self.canonical!r}")
        if self.canonical == "best":
            require_extra("dates")
        if self.es_start not in ("fail", "degraded"):
            raise ConfigError(f"es_start must be 'fail' or 'degraded', got {self.es_start!r}")
        if self.es_reprobe_seconds <= 0:
            raise ConfigError("es_reprobe_seconds must be > 0")
        if not self.spool_path:
            raise ConfigError("spool_path must name a file")
