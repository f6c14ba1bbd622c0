"""The stored documents: a fingerprint entry as an Elasticsearch document and back, and `_id`s.

One document per page in the fingerprint index (mapping in `es_mappings/fingerprints.json`):
`<method>_keys` keyword arrays for the `terms` lookups, the encoded signatures in a non-indexed
object for verification in Python, and the verdict metadata as typed fields.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.base import IndexEntry

MAX_ID_BYTES = 512  # Elasticsearch refuses longer _id values
_METHOD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_TYPED_META = ("url", "cluster", "duplicate_of", "similarity", "method")
PAGE_FIELDS = (
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
    "declared_canonical",
)


def es_id(value: str) -> str:
    """The document `_id` for a doc id or URL: itself when it fits 512 bytes, else its sha256."""
    raw = value.encode("utf-8")
    return value if len(raw) <= MAX_ID_BYTES else hashlib.sha256(raw).hexdigest()


def now() -> str:
    """The current time as stored in `added` and `crawled_at`."""
    return datetime.now(timezone.utc).isoformat()


def keys_field(method: str) -> str:
    """`<method>_keys`; method names become field names, so no dots or odd characters."""
    if not _METHOD_NAME.match(method):
        raise IndexFailure(f"method name {method!r} cannot name an Elasticsearch field")
    return f"{method}_keys"


def fingerprint_source(entry: IndexEntry) -> dict[str, Any]:
    """The fingerprint document of an entry."""
    source: dict[str, Any] = {
        "doc_id": entry.doc_id,
        "key_methods": sorted(entry.keys),
        "signatures": entry.signatures,
        "meta": entry.meta,
        "added": now(),
    }
    for method, keys in entry.keys.items():
        source[keys_field(method)] = list(keys)
    for name in _TYPED_META:
        if entry.meta.get(name) is not None:
            source[name] = entry.meta[name]
    return source


def entry_from(source: Mapping[str, Any]) -> IndexEntry:
    """An IndexEntry from a fingerprint document: as written (a write log's record), with its
    keys; as the fingerprint index returns it, without (its `_source` leaves them out)."""
    methods = source.get("key_methods") or [
        name[: -len("_keys")] for name in source if name.endswith("_keys")
    ]
    keys = {method: list(found) for method in methods
            if (found := source.get(f"{method}_keys"))}
    return IndexEntry(
        doc_id=source["doc_id"],
        signatures=dict(source.get("signatures") or {}),
        keys=keys,
        meta=dict(source.get("meta") or {}),
    )


def page_source(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The pages-index document of a kept page: its known fields, `crawled_at` defaulting to
    now. The page's `cluster_id` lets searches `collapse` near-duplicates away."""
    url = doc.get("url")
    if not isinstance(url, str) or not url:
        raise IndexFailure("a page for the pages index needs a non-empty string 'url'")
    source = {name: doc[name] for name in PAGE_FIELDS if doc.get(name) is not None}
    source.setdefault("crawled_at", now())
    return source
