"""One settings object for the pipeline, the CLI and the library (dict or Scrapy settings)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.verdict.canonical import POLICIES, CanonicalPolicy

Method = Literal["auto", "simhash", "minhash", "bag", "rarewords", "anchors"]
Action = Literal["drop", "tag"]
OnError = Literal["keep", "fail"]
HashName = Literal["rabin", "xxh64"]
Mode = Literal["resemblance", "containment"]
Content = Literal["whole", "chromeless", "main"]
CONTENTS: tuple[Content, ...] = ("whole", "chromeless", "main")
Weighting = Literal["tf", "idf"]

KNOWN_METHODS: tuple[str, ...] = ("simhash", "minhash", "bag", "rarewords", "anchors")
# `auto`: simhash finds the near-identical cheaply; the word bag catches reordered blocks and a
# few percent of changed words, which break too many shingles (see README, "Calibration").
AUTO_METHODS: tuple[str, ...] = ("simhash", "bag")
METHOD_CHOICES: tuple[str, ...] = ("auto", *KNOWN_METHODS)  # what a user may name
DEFAULT_BACKEND = "sqlite:neardup.sqlite"


def redact_backend(backend: str) -> str:
    """A backend spec or URL fit for logs and messages: user:password replaced by ***."""
    parts = urlsplit(backend)
    if parts.username is None and parts.password is None:
        return backend
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))



@dataclass(frozen=True)
class TagFields:
    """Item field names the pipeline writes in tag mode (configurable for declared Item classes)."""

    of: str = "neardup_of"
    similarity: str = "neardup_similarity"
    method: str = "neardup_method"
    cluster: str = "neardup_cluster"
    status: str = "neardup_status"


@dataclass(frozen=True)
class NearDupConfig:
    """Every knob of neardup, with the defaults of DESIGN.md (the methods' literature)."""

    methods: tuple[str, ...] = ("auto",)
    backend: str = DEFAULT_BACKEND
    action: Action = "drop"
    on_error: OnError = "keep"
    # Pipeline: fingerprint in this many child processes (simhash, minhash, bag), so the crawler's
    # own process keeps its core; 0 = in the pipeline's worker thread.
    fingerprint_processes: int = 1
    # Text
    language: str | None = None  # None: detect per document
    remove_stopwords: bool = True
    stem: bool = True
    max_html_bytes: int = 20 * 1024 * 1024  # larger pages are cut here, not refused
    max_token_chars: int = 64  # longer "words" (base64 blobs, hashes) are not words
    min_tokens: int = 1  # fewer tokens than this: the page has no text to compare
    # Fewer canonical words than this: a near-duplicate of an exact copy (equal words) only.
    # Resemblance over a few dozen words cannot tell two stubs apart once they share a few
    # navigation titles; off by default (at 30 it costs the installation guide 0.7 points of
    # recall: short sections that differ by their architecture's name). README "Site chrome".
    min_near_words: int = 0
    # chromeless: the page without its site chrome (landmarks, link-only blocks; extract.py), so
    # distinct short pages of a site with a big menu do not collide. whole: every visible word.
    # main: the main content (trafilatura; the chromeless text as fallback), ~20-90 ms a page.
    content: Content = "chromeless"
    # Simhash (Charikar; Manku et al. 2007)
    hash: HashName = "rabin"
    simhash_shingle: int = 3
    simhash_k: int = 3
    simhash_blocks: int = 4
    # tf: each shingle occurrence weighs 1; idf: TF x IDF from a frozen DF table (idf.py)
    simhash_weighting: Weighting = "tf"
    simhash_idf_model: str | None = None  # the DF table (JSON) idf weighting reads
    # Broder shingles / MinHash (Zelenkov & Segalovich: 10-word shingles, 84 = 6 x 14)
    minhash_shingle: int = 10
    minhash_hashes: int = 84
    minhash_supers: int = 6
    minhash_threshold: float = 0.8
    minhash_exact: bool = False  # verify candidates by exact Jaccard of stored shingle sets
    # Bag of words (weighted Jaccard of log-TF word bags; word-set MinHash bands for lookup)
    bag_threshold: float = 0.6
    bag_bands: int = 21  # 21 bands x 4 rows: candidate with probability 1 - (1 - s^4)^21
    bag_max_words: int = 4096
    bag_order_threshold: float = 0.5  # 3-word shingle resemblance that confirms a bag match
    bag_topic_shift: float = 0.0  # > 0: pages both leaning this much on own terms are twins
    # > 0: two pages whose titles name subjects of their own, each page naming its own this many
    # times more than the other does, are template twins, never near-duplicates (subject.py)
    bag_subject_margin: float = 2.0
    # Below the order threshold: a match when the words differ in scattered single-word edits,
    # none repeated, on at most this share of the (canonical) words; 0 turns the check off
    bag_reword_max_changed: float = 0.3
    bag_reword_max_run: float = 2.0  # mean length of a differing run, in words
    mode: Mode = "resemblance"  # containment: flag a document mostly contained in an earlier one
    containment_threshold: float = 0.8
    containment_sample: int = 8  # containment keys: shingles whose hash is 0 mod this
    # Less-frequent words (DF kept by the index; see rarewords.py)
    rarewords_keys: int = 8  # m: partition keys per document (smallest hashes of its rare words)
    rarewords_percentile: float = 0.5  # rare: DF <= this percentile of the document's word DFs
    rarewords_max_words: int = 256  # profile size cap (smallest hashes kept)
    rarewords_threshold: float = 0.7  # weighted Jaccard of a near-duplicate
    rarewords_warmup: int = 100  # stream: fewer documents in DF than this, no rarewords verdict
    # Pipeline / item fields
    html_field: str = "html"
    text_field: str = "text"
    url_field: str = "url"
    id_field: str = "url"
    tag_fields: TagFields = field(default_factory=TagFields)
    index_duplicates: bool = True
    # Elasticsearch
    fingerprint_index: str = "neardup-fingerprints"
    pages_index: str | None = None  # e.g. "neardup-pages": every checked page, with cluster_id
    canonical: CanonicalPolicy = "first"  # pages index: canonical copy, first seen or "best"
    es_api_key: str | None = None
    es_basic_auth: tuple[str, str] | None = None
    es_verify_certs: bool = True
    es_ca_certs: str | None = None
    es_bulk_size: int = 500
    # Anchor words (Ilyinsky et al.)
    anchors_model: str | None = None  # fitted model (JSON); None: fit from the first pages
    anchors_model_out: str | None = None  # pipeline: save the model fitted at warm-up here
    anchors_warmup: int = 1000  # pages to fit on when no model is given
    anchors_words: int = 3000  # N anchor words (3-5 thousand at web scale)
    anchors_min_df: int = 3
    anchors_max_df: float = 0.5  # share of documents
    anchors_floor_precision: float = 0.8  # stage 1 takes only words at least this precise
    anchors_edit: float = 0.1  # a small edit changes a count by max(edit * tf, edit_floor)
    anchors_edit_floor: float = 0.5
    anchors_min_bits: int = 3  # fewer set bits: never a duplicate (near-empty signatures)
    anchors_tolerance: int = 0  # Hamming distance still called a duplicate
    # Reliability (hostile-input caps; Elasticsearch faults: bounded waits, degraded mode, spool)
    max_html_tags: int = 200_000  # more tags than this: read by a linear scan, not a tree parser
    max_words: int = 200_000  # words read per document (text past max_words * 32 chars unread)
    es_request_timeout: float = 10.0  # seconds per Elasticsearch request
    es_retry_seconds: float = 30.0  # retries with backoff for at most this long, then degraded
    es_reprobe_seconds: float = 10.0  # degraded: seconds between checks that the server is back
    es_start: str = "fail"  # server unreachable at open_spider: "fail" or "degraded"
    spool_path: str = "neardup-spool.sqlite"  # unchecked pages' fingerprints, replayed later

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHOD_CHOICES]
        if not self.methods or unknown:
            raise ConfigError(f"methods must be among {METHOD_CHOICES}, got {list(self.methods)}")
        if self.action not in ("drop", "tag"):
            raise ConfigError(f"action must be 'drop' or 'tag', got {self.action!r}")
        if self.fingerprint_processes < 0:
            raise ConfigError("fingerprint_processes must be >= 0 (0: no child process)")
        if self.on_error not in ("keep", "fail"):
            raise ConfigError(f"on_error must be 'keep' or 'fail', got {self.on_error!r}")
        if self.hash not in ("rabin", "xxh64"):
            raise ConfigError(f"hash must be 'rabin' or 'xxh64', got {self.hash!r}")
        if self.simhash_shingle < 1:
            raise ConfigError("simhash_shingle must be >= 1")
        if not 0 <= self.simhash_k < self.simhash_blocks <= 64:
            raise ConfigError("simhash needs 0 <= k < blocks <= 64 (pigeonhole: blocks - k >= 1)")
        if self.simhash_weighting not in ("tf", "idf"):
            raise ConfigError(
                f"simhash_weighting must be 'tf' or 'idf', got {self.simhash_weighting!r}"
            )
        if self.minhash_shingle < 1 or self.minhash_supers < 2:
            raise ConfigError("minhash needs shingle >= 1 and at least 2 super-shingles")
        if self.minhash_hashes % self.minhash_supers:
            raise ConfigError("minhash_hashes must split evenly into minhash_supers (84 = 6 x 14)")
        if not 0 < self.minhash_threshold <= 1 or not 0 < self.containment_threshold <= 1:
            raise ConfigError("thresholds must lie in (0, 1]")
        if self.content not in CONTENTS:
            raise ConfigError(f"content must be one of {', '.join(CONTENTS)}, got {self.content!r}")
        if not 0 < self.bag_threshold <= 1 or self.bag_max_words < 1:
            raise ConfigError("bag_threshold must lie in (0, 1] and bag_max_words be >= 1")
        if self.bag_subject_margin < 0:
            raise ConfigError("bag_subject_margin must be >= 0 (0 turns the subject check off)")
        if self.bag_topic_shift < 0:
            raise ConfigError("bag_topic_shift must be >= 0 (0 turns the template-twin check off)")
        if not 0 <= self.bag_reword_max_changed <= 1 or self.bag_reword_max_run < 1:
            raise ConfigError("bag_reword_max_changed must lie in [0, 1] (0: off) and "
                              "bag_reword_max_run be >= 1")
        if self.bag_bands < 1 or 84 % self.bag_bands:
            raise ConfigError("bag_bands must divide the 84 word-set minimums (e.g. 21, 14, 12)")
        if self.mode not in ("resemblance", "containment"):
            raise ConfigError(f"mode must be 'resemblance' or 'containment', got {self.mode!r}")
        if self.mode == "containment" and "minhash" not in self.method_names:
            raise ConfigError("containment mode needs the minhash method (shingle sets)")
        if self.containment_sample < 1:
            raise ConfigError("containment_sample must be >= 1")
        if self.max_html_bytes < 1 or self.max_token_chars < 1 or self.min_tokens < 1:
            raise ConfigError("max_html_bytes, max_token_chars and min_tokens must be >= 1")
        if self.min_near_words < 0:
            raise ConfigError("min_near_words must be >= 0")
        if self.rarewords_keys < 1 or self.rarewords_max_words < self.rarewords_keys:
            raise ConfigError("rarewords needs 1 <= rarewords_keys <= rarewords_max_words")
        if not 0 < self.rarewords_percentile <= 1 or not 0 < self.rarewords_threshold <= 1:
            raise ConfigError("rarewords_percentile and rarewords_threshold must lie in (0, 1]")
        if self.rarewords_warmup < 0:
            raise ConfigError("rarewords_warmup must be >= 0")
        if self.canonical not in POLICIES:
            raise ConfigError(f"canonical must be one of {POLICIES}, got {self.canonical!r}")
        if self.es_bulk_size < 1:
            raise ConfigError("es_bulk_size must be >= 1")
        if min(self.anchors_warmup, self.anchors_words, self.anchors_min_df,
               self.anchors_min_bits) < 1 or not 0 <= self.anchors_tolerance <= 3:
            raise ConfigError("anchors_warmup/words/min_df/min_bits must be >= 1, tolerance 0-3")
        # Reliability
        if self.max_html_tags < 1 or self.max_words < 1:
            raise ConfigError("max_html_tags and max_words must be >= 1")
        if min(self.es_request_timeout, self.es_retry_seconds, self.es_reprobe_seconds) <= 0:
            raise ConfigError("es_request_timeout, es_retry_seconds, es_reprobe_seconds: > 0")
        if self.es_start not in ("fail", "degraded"):
            raise ConfigError(f"es_start must be 'fail' or 'degraded', got {self.es_start!r}")
        if not self.spool_path:
            raise ConfigError("spool_path must name a file")

    @property
    def method_names(self) -> tuple[str, ...]:
        """The detection methods to run, with the `auto` preset expanded."""
        names: list[str] = []
        for name in self.methods:
            for method in AUTO_METHODS if name == "auto" else (name,):
                if method not in names:
                    names.append(method)
        return tuple(names)

    @property
    def text_content(self) -> Content:
        """Which text is fingerprinted: the whole page, without its chrome, or its main content."""
        return self.content

    def replace(self, **changes: Any) -> NearDupConfig:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> NearDupConfig:
        """Build from a plain dict of field names; unknown names are an error, not ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ConfigError(f"unknown neardup settings: {unknown}")
        data = dict(values)
        if "methods" in data:
            data["methods"] = _as_methods(data["methods"])
        if isinstance(data.get("tag_fields"), Mapping):
            data["tag_fields"] = TagFields(**data["tag_fields"])
        if isinstance(data.get("es_basic_auth"), list):
            data["es_basic_auth"] = tuple(data["es_basic_auth"])
        return cls(**data)

    @classmethod
    def from_settings(cls, settings: Any) -> NearDupConfig:
        """Build from Scrapy settings (NEARDUP_* names, typed getters); project values win."""
        base = cls()
        get: Callable[[str], Any] = settings.get
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            key = "NEARDUP_" + f.name.upper()
            if get(key) is None or f.name == "tag_fields":
                continue
            default = getattr(base, f.name)
            if isinstance(default, bool):
                values[f.name] = settings.getbool(key)
            elif isinstance(default, int):
                values[f.name] = settings.getint(key)
            elif isinstance(default, float):
                values[f.name] = settings.getfloat(key)
            elif isinstance(default, tuple) or f.name == "es_basic_auth":
                values[f.name] = tuple(settings.getlist(key))
            else:
                values[f.name] = get(key) or None if f.name in _OPTIONAL else get(key)
        tag_overrides = settings.getdict("NEARDUP_TAG_FIELDS")
        if tag_overrides:
            values["tag_fields"] = TagFields(**tag_overrides)
        if "methods" in values:
            values["methods"] = _as_methods(values["methods"])
        return cls.from_mapping(values)


_OPTIONAL = {"simhash_idf_model", "language", "pages_index", "es_api_key", "es_ca_certs"}


def _as_methods(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    return tuple(str(v).strip().lower() for v in value if str(v).strip())
