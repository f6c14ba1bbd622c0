"""A document as a record of the `dedup` input (a JSONL line, a Parquet row): its fields, and
a clear InputError for anything else. Pure: what every reader of such records shares."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from neardup_pipeline.document import Document
from neardup_pipeline.errors import InputError


def parse_document(line: str) -> Document:
    """One JSONL line -> Document; a clear InputError for anything else."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        reason = exc.msg.removesuffix(" at")  # json's "Invalid control character at"
        raise InputError(f"not JSON ({reason} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise InputError("not a JSON object")
    return document_of_record(obj)


def document_of_record(obj: Mapping[str, Any]) -> Document:
    """A record's Document. The id is `id`, else `url`: the pipeline's own feed names its
    pages by URL."""
    doc_id = obj.get("id")
    if doc_id is None:
        doc_id = obj.get("url")
    if doc_id is None or isinstance(doc_id, (dict, list)) or str(doc_id) == "":
        raise InputError("missing 'id' (and no 'url' to name the document by)")
    html, text = obj.get("html"), obj.get("text")
    if not isinstance(html, (str, type(None))) or not isinstance(text, (str, type(None))):
        raise InputError("'html' and 'text' must be strings")
    if html is None and text is None:
        raise InputError(f"document {doc_id!r} has neither 'html' nor 'text'")
    url = obj.get("url")
    return Document(str(doc_id), html=html, text=text, url=str(url) if url else None)
