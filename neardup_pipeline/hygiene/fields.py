"""A stored document of the content index -> the Document neardup checks, or why it cannot be.

Pure. A document whose field is missing or of the wrong type is never dropped: it becomes an
`Item` with a `problem`, tagged `bad_field` in the index and counted in the summary.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from neardup_pipeline.errors import SourceError
from neardup_pipeline.fingerprint import Document, Fingerprint

ContentKind = Literal["html", "text"]
ID_FIELD = "_id"  # the document's own Elasticsearch id
STATUS_FIELD = "neardup_status"  # the mark saying why a document was not checked
BAD_FIELD = "bad_field"

_MISSING = object()


@dataclass(frozen=True)
class FieldSpec:
    """Which fields of the content index hold the page, its URL and its id."""

    content: str = "html"
    kind: ContentKind = "html"
    url: str | None = "url"
    id: str = ID_FIELD

    def source_fields(self) -> list[str]:
        """The `_source` paths a read needs (nothing else travels): the page's fields, and the
        status an earlier run marked it with."""
        wanted = [self.content, STATUS_FIELD]
        if self.url:
            wanted.append(self.url)
        if self.id != ID_FIELD:
            wanted.append(self.id)
        return wanted


@dataclass(frozen=True)
class Item:
    """One document of the content index in the run's order: `key` its sort values, `es_id` its
    `_id`, `doc_id` the id neardup names it by. Exactly one of `doc` and `problem` is set."""

    key: tuple[int, ...]
    es_id: str
    doc_id: str
    doc: Document | None = None
    problem: str | None = None
    source_hash: str = ""
    known: bool = False  # checked by an earlier run with this very content: nothing to do
    fingerprint: Fingerprint | None = None  # computed in a reader process, or by a slice
    staged: bool = False  # `fingerprint` is a slice's (staged.py)
    marked: str | None = None  # the status an earlier run marked it with, when read in place

    @property
    def missing_content(self) -> bool:
        """Whether the document lacks the field that holds its page."""
        return bool(self.problem) and str(self.problem).startswith("missing ") and \
            not str(self.problem).startswith("missing id")


def value_at(source: Mapping[str, Any], path: str) -> object:
    """The value at a dotted path of `_source` (a flat key with dots wins), or _MISSING."""
    if path in source:
        return source[path]
    node: object = source
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _type_name(value: object) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__)


def item_of(hit: Mapping[str, Any], spec: FieldSpec) -> Item:
    """The Item of one search hit (`_id`, `_source`, `sort`)."""
    es_id = str(hit["_id"])
    key = tuple(int(v) for v in hit.get("sort") or ())
    source = hit.get("_source") or {}
    doc_id = es_id
    if spec.id != ID_FIELD:
        value = value_at(source, spec.id)
        if value is _MISSING or value is None:
            return Item(key, es_id, es_id, problem=f"missing id field {spec.id!r}")
        if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
            return Item(key, es_id, es_id,
                        problem=f"id field {spec.id!r} is {_type_name(value)}, not a string")
        doc_id = str(value)
    content = value_at(source, spec.content)
    if content is _MISSING or content is None:
        return Item(key, es_id, doc_id, problem=f"missing {spec.kind} field {spec.content!r}")
    if not isinstance(content, str):
        return Item(key, es_id, doc_id, problem=f"{spec.kind} field {spec.content!r} is "
                    f"{_type_name(content)}, not a string")
    url: str | None = None
    if spec.url:
        raw_url = value_at(source, spec.url)
        if raw_url is not _MISSING and raw_url is not None:
            if not isinstance(raw_url, str):
                return Item(key, es_id, doc_id, problem=f"url field {spec.url!r} is "
                            f"{_type_name(raw_url)}, not a string")
            url = raw_url or None
    doc = (Document(doc_id, html=content, url=url) if spec.kind == "html"
           else Document(doc_id, text=content, url=url))
    marked = source.get(STATUS_FIELD)
    return Item(key, es_id, doc_id, doc=doc, source_hash=source_hash(content, url),
                marked=marked if isinstance(marked, str) else None)


def refuse_unreadable(items: list[Item], spec: FieldSpec, share: float = 0.5) -> None:
    """Stop before any mark is written when most of the first documents read lack the field
    that holds the page: a misspelt --html-field would otherwise mark every document
    `bad_field` and its own canonical, replacing the marks of a run that could read them."""
    missing = sum(item.missing_content for item in items)
    if items and missing > share * len(items):
        flag = "--html-field" if spec.kind == "html" else "--text-field"
        raise SourceError(
            f"{flag} {spec.content!r}: {missing} of the first {len(items)} documents have no "
            f"such field; nothing was marked. Name the field that holds each page with "
            f"{flag} (or --text-field / --html-field for the other kind)")


def source_hash(content: str, url: str | None) -> str:
    """What tells an unchanged document from an edited one between runs (cheap: no parsing)."""
    digest = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=12)
    digest.update(b"\0" + (url or "").encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
