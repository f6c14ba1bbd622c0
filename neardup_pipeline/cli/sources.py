"""What search, stats and report read: a `neardup dedup` output (JSONL), an SQLite fingerprint
index (`sqlite:PATH`), or the Elasticsearch pages index (`--es URL`)."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from neardup_pipeline.errors import IndexFailure, SourceError
from neardup_pipeline.index.clusters import follow
from neardup_pipeline.index.sqlite.schema import connect_read_only
from neardup_pipeline.index.sqlite.spec import SQLITE_SCHEME, sqlite_path
from neardup_pipeline.report.stats import PageRecord, record_from_verdict
from neardup_pipeline.verdict.clusters import doc_id_of

SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite file

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from neardup_pipeline.index.elastic.settings import ElasticSettings

READ_RETRIES = 2  # the client's own retries of a failed connection, for the reading commands


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
    if source.startswith(SQLITE_SCHEME):
        return list(sqlite_records(Path(sqlite_path(source, "the source"))))
    return list(jsonl_records(Path(source)))


def jsonl_records(path: Path) -> Iterator[PageRecord]:
    """The verdict lines of `neardup dedup -o OUT.jsonl`, each document once: a later line of
    the same id (`"status": "repeated"`) is that document again."""
    seen: set[str] = set()
    with path.open("rb") as head:
        if head.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
            raise SourceError(f"{path} is an SQLite index, not verdict lines: give it as "
                              f"sqlite:{path}")
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
            links = _pairs(db, "SELECT name, parent FROM cluster_links")
            canonicals = _pairs(db, "SELECT root, doc_id FROM cluster_canonicals")
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"{path} is not a neardup SQLite index: {exc}") from exc
    ordered = sorted(((doc_id, json.loads(meta)) for doc_id, meta in rows),
                     key=lambda r: (float(r[1].get("added") or 0), r[0]))
    for order, (doc_id, meta) in enumerate(ordered):
        root = follow(links, str(meta.get("cluster") or doc_id))
        canonical = canonicals.get(root, doc_id_of(root))  # a cluster is named for it
        yield replace(record_from_verdict({**meta, "id": doc_id, "cluster": canonical}, order),
                      duplicate_of=None if canonical == doc_id else canonical,
                      is_canonical=canonical == doc_id)


def _pairs(db: sqlite3.Connection, sql: str) -> dict[str, str]:
    """The rows of a two-column cluster table; none in a file written before it existed."""
    try:
        return {str(a): str(b) for a, b in db.execute(sql).fetchall()}
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise


@contextmanager
def es_client(url: str, index: str,
              settings: ElasticSettings | None = None) -> Iterator[Elasticsearch]:
    """A read-only client for the pages index, from the one client factory (`settings`: the
    command's, see cli/options.es_settings); a clear error when the index is missing, and any
    refusal, TLS or connection failure inside the block said with its cause and fix."""
    from elastic_transport import TransportError
    from elasticsearch import ApiError

    from neardup_pipeline.index.elastic.connection import client_from_settings
    from neardup_pipeline.index.elastic.diagnosis import diagnose
    from neardup_pipeline.index.elastic.settings import ElasticSettings

    client, location = client_from_settings(url, settings or ElasticSettings(),
                                            retries=READ_RETRIES)
    try:
        try:
            # A GET (a HEAD answer has no body to say why it was refused) that needs only the
            # `read` privilege, as the commands do.
            if client.options(ignore_status=404).count(index=index).meta.status == 404:
                raise IndexFailure(f"no pages index {index!r} at {location} (crawl with "
                                   "NEARDUP_PAGES_INDEX set to fill it)")
            yield client
        except (ApiError, TransportError) as exc:
            raise diagnose(exc, client, location) from exc
        except IndexFailure as exc:  # a reader's own wrapping of a refusal: say its cause
            cause = exc.__cause__
            if isinstance(cause, TransportError) or (
                    isinstance(cause, ApiError) and cause.meta.status in (401, 403)):
                raise diagnose(cause, client, location) from cause
            raise
    finally:
        client.close()
