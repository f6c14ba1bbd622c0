"""A document as one row of a Spark table, and back. Pure: no Spark here, only the field
names and the record every reader makes (executors turn rows into `Document`s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neardup_pipeline.fingerprint import Document

# Field, Spark SQL type. `position` orders the output as the input (file n's line or record m:
# n << 40 | m); `where` names it in messages; `problem` says why a record could not be read
# (its other fields then may be empty); `es_id` is the document's `_id` in an index read.
FIELDS: tuple[tuple[str, str], ...] = (
    ("position", "bigint"), ("where", "string"), ("doc_id", "string"), ("url", "string"),
    ("html", "string"), ("html_bytes", "binary"), ("text", "string"), ("encoding", "string"),
    ("es_id", "string"), ("problem", "string"),
)
SCHEMA = ", ".join(f"{name} {kind}" for name, kind in FIELDS)
POSITION_BITS = 40  # records of one input file: a trillion is enough


def position(source: int, record: int) -> int:
    """Where a record sits among all the inputs: its file's number, then its own."""
    return (source << POSITION_BITS) | record


def row_of(doc: Document, where: str, pos: int, es_id: str | None = None) -> dict[str, Any]:
    """The row of a readable document."""
    html = doc.html
    return {"position": pos, "where": where, "doc_id": doc.doc_id, "url": doc.url,
            "html": html if isinstance(html, str) else None,
            "html_bytes": html if isinstance(html, bytes) else None,
            "text": doc.text, "encoding": doc.encoding, "es_id": es_id, "problem": None}


def problem_row(where: str, pos: int, problem: str, doc_id: str | None = None,
                es_id: str | None = None) -> dict[str, Any]:
    """The row of a record that could not be read: kept, so the job reports it."""
    return {"position": pos, "where": where, "doc_id": doc_id, "url": None, "html": None,
            "html_bytes": None, "text": None, "encoding": None, "es_id": es_id,
            "problem": problem}


def document_of(row: Mapping[str, Any]) -> Document:
    """The Document a readable row holds, as the reader made it (str or bytes HTML)."""
    html = row["html"] if row["html"] is not None else row["html_bytes"]
    if isinstance(html, bytearray):
        html = bytes(html)
    return Document(str(row["doc_id"]), html=html, text=row["text"], url=row["url"],
                    encoding=row["encoding"])
