"""What search, stats and report read: a `neardup dedup` output (JSONL), an SQLite fingerprint
index (`sqlite:PATH`), or the Elasticsearch pages index (`--es URL`)."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neardup_pipeline.config import redact_backend
from neardup_pipeline.errors import IndexFailure, SourceError
from neardup_pipeline.index.sqlite.schema import connect_read_only
from neardup_pipeline.report.stats import PageRecord, record_from_verdict

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch


def source_of(args: argparse.Namespace) -> str:
    """The one source named on the command line (a file or `sqlite:PATH`), when not --es."""
    if args.es and args.source:
        raise SourceError("give either a source (OUT.jsonl, sqlite:PATH) or --es URL, not both")
    if not args.es and not args.source:
        raise SourceError("give a source: OUT.jsonl, sqlite:PATH, or --es URL")
    return str(args.source)


def read_records(source: str) -> list[PageRecord]:
    """The pages of a JSONL verdict file or an SQLite index, in the order they were checked."""
    if source.startswith(("http://", "https://")):
        raise SourceError(f"{source}: pass Elasticsearch as --es URL (it reads the pages index)")
    if source == "memory":
        raise SourceError("the memory backend keeps nothing after its process: use the "
                          "JSONL output of `neardup dedup`")
    if source.startswith("sqlite:"):
        return list(sqlite_records(Path(source[len("sqlite:"):])))
    return list(jsonl_records(Path(source)))


def jsonl_records(path: Path) -> Iterator[PageRecord]:
    """The verdict lines of `neardup dedup -o OUT.jsonl`, each document once: a later line of
    the same id (`"status": "repeated"`) is that document again."""
    seen: set[str] = set()
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = record_from_verdict(json.loads(line), number)
            except (ValueError, KeyError, TypeError) as exc:
                raise SourceError(f"{path}:{number}: not a neardup verdict line ({exc})") from None
            if record.doc_id not in seen:
                seen.add(record.doc_id)
                yield record


def sqlite_records(path: Path) -> Iterator[PageRecord]:
    """Fingerprints of an SQLite index, read without writing beside it; duplicates appear when
    they were indexed (NEARDUP_INDEX_DUPLICATES, on by default)."""
    if not path.is_file():
        raise SourceError(f"no SQLite index at {path}")
    try:
        db = connect_read_only(path)
        try:
            rows = db.execute("SELECT doc_id, meta FROM docs").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"{path} is not a neardup SQLite index: {exc}") from exc
    ordered = sorted(((doc_id, json.loads(meta)) for doc_id, meta in rows),
                     key=lambda r: (float(r[1].get("added") or 0), r[0]))
    for order, (doc_id, meta) in enumerate(ordered):
        yield record_from_verdict({**meta, "id": doc_id}, order)


class es_client:
    """A read-only client for the pages index; a clear error when the index is missing."""

    def __init__(self, url: str, index: str) -> None:
        self.url, self.index = url, index
        self._client: Elasticsearch | None = None

    def __enter__(self) -> Elasticsearch:
        from elastic_transport import TransportError
        from elasticsearch import ApiError, Elasticsearch

        kwargs: dict[str, Any] = {"request_timeout": 30}
        if os.environ.get("NEARDUP_ES_API_KEY"):
            kwargs["api_key"] = os.environ["NEARDUP_ES_API_KEY"]
        elif os.environ.get("NEARDUP_ES_USERNAME"):
            kwargs["basic_auth"] = (os.environ["NEARDUP_ES_USERNAME"],
                                    os.environ.get("NEARDUP_ES_PASSWORD", ""))
        self._client = Elasticsearch(self.url, **kwargs)
        try:
            exists = bool(self._client.indices.exists(index=self.index))
        except (ApiError, TransportError) as exc:
            self._client.close()
            raise IndexFailure(f"Elasticsearch at {redact_backend(self.url)}: {exc}") from exc
        if not exists:
            self._client.close()
            raise IndexFailure(f"no pages index {self.index!r} at {redact_backend(self.url)} "
                              "(crawl with NEARDUP_PAGES_INDEX set to fill it)")
        return self._client

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
