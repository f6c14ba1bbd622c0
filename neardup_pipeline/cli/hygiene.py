"""`neardup search`, `neardup stats`, `neardup report`: what the index holds, for people.

Sources: a `neardup dedup` output (JSONL), an SQLite fingerprint index (`sqlite:PATH`), or the
Elasticsearch pages index (`--es URL`). Search needs Elasticsearch (it collapses on cluster_id).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neardup_pipeline.config import redact_backend
from neardup_pipeline.errors import IndexFailure, SourceError
from neardup_pipeline.report.stats import PageRecord, Summary, record_from_verdict, summarize
from neardup_pipeline.verdict.canonical import POLICIES

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

DEFAULT_PAGES_INDEX = "neardup-pages"



def add_hygiene_commands(sub: Any) -> None:
    """Register search, stats and report on the `neardup` subparsers."""
    search = sub.add_parser("search", help="search the pages index, near-duplicates collapsed")
    search.add_argument("query", help="words to look for in titles and texts")
    _add_es_options(search, required=True)
    search.add_argument("--size", type=int, default=10, help="clusters to show (default 10)")
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.set_defaults(func=cmd_search)

    stats = sub.add_parser("stats", help="documents, clusters and duplicates by method")
    stats.add_argument("source", nargs="?", help="OUT.jsonl (neardup dedup) or sqlite:PATH")
    _add_es_options(stats)
    stats.add_argument("--json", action="store_true", help="machine-readable output")
    stats.set_defaults(func=cmd_stats)

    report = sub.add_parser("report", help="one self-contained HTML report of the clusters")
    report.add_argument("source", nargs="?", help="OUT.jsonl (neardup dedup) or sqlite:PATH")
    _add_es_options(report)
    report.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    report.add_argument("--docs", type=Path,
                        help="the input corpus (JSONL: id, html|text): texts for the pairs")
    report.add_argument("--canonical", choices=POLICIES, default="first",
                        help="canonical copy where the source does not mark one")
    report.add_argument("--largest", type=int, default=10, help="largest clusters listed")
    report.add_argument("--max-pairs", type=int, default=200, help="pairs shown side by side")
    report.set_defaults(func=cmd_report)


def _add_es_options(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument("--es", required=required, metavar="URL",
                        help="Elasticsearch URL (credentials: NEARDUP_ES_API_KEY, or "
                        "NEARDUP_ES_USERNAME and NEARDUP_ES_PASSWORD)")
    parser.add_argument("--pages-index", default=DEFAULT_PAGES_INDEX,
                        help=f"pages index name (default {DEFAULT_PAGES_INDEX})")


# ---------------------------------------------------------------------- commands


def cmd_search(args: argparse.Namespace) -> int:
    from neardup_pipeline.index.elastic.search import collapsed_search

    with _es_client(args.es, args.pages_index) as client:
        result = collapsed_search(client, args.pages_index, args.query, size=args.size)
    if args.json:
        print(json.dumps({"query": result.query, "total_pages": result.total_pages,
                          "hits": [vars(h) for h in result.hits]}, ensure_ascii=False, indent=2))
        return 0
    print(f"{result.total_pages} pages match {args.query!r}; "
          f"{len(result.hits)} clusters shown (near-duplicates collapsed)")
    for n, hit in enumerate(result.hits, start=1):
        copies = f"{hit.copies} copies" if hit.copies != 1 else "1 copy"
        print(f"{n:>3}. {hit.title or '(no title)'}  [score {hit.score:.2f}, {copies}]")
        print(f"     {hit.url}")
        if hit.matched_url != hit.url:
            print(f"     (matched in the copy {hit.matched_url})")
    return 0 if result.hits else 1


def cmd_stats(args: argparse.Namespace) -> int:
    summary = _summary(args)
    if args.json:
        print(json.dumps(summary.as_dict(), indent=2))
        return 0
    print(f"documents   {summary.documents:>10,}")
    print(f"clusters    {summary.clusters:>10,}")
    print(f"duplicates  {summary.duplicates:>10,}")
    for method, n in summary.by_method.items():
        print(f"  by {method:<8} {n:>9,}")
    for why, n in summary.not_checked.items():
        print(f"not checked ({why}) {n:,}")
    sizes = ", ".join(f"{size}: {n:,}" for size, n in summary.size_histogram.items())
    print(f"cluster sizes (size: clusters)  {sizes or '-'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from neardup_pipeline.errors import ReportError
    from neardup_pipeline.report.html import render_report

    records, texts, source = _report_data(args)
    try:
        page = render_report(records, texts, source=source, policy=args.canonical,
                             largest=args.largest, max_pairs=args.max_pairs)
    except ReportError as exc:
        print(f"neardup: error: {exc}", file=sys.stderr)
        return 2
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(page, encoding="utf-8")
    summary = summarize(records)
    print(f"{args.output}: {summary.documents:,} documents, {summary.clusters:,} clusters, "
          f"{summary.duplicates:,} duplicates")
    return 0


# ---------------------------------------------------------------------- sources


def _summary(args: argparse.Namespace) -> Summary:
    if args.es:
        from neardup_pipeline.index.elastic.pages import pages_summary

        with _es_client(args.es, args.pages_index) as client:
            return pages_summary(client, args.pages_index)
    return summarize(_records(_source(args)))


def _source(args: argparse.Namespace) -> str:
    if args.es and args.source:
        raise SourceError("give either a source (OUT.jsonl, sqlite:PATH) or --es URL, not both")
    if not args.es and not args.source:
        raise SourceError("give a source: OUT.jsonl, sqlite:PATH, or --es URL")
    return str(args.source)


def _records(source: str) -> list[PageRecord]:
    if source.startswith(("http://", "https://")):
        raise SourceError(f"{source}: pass Elasticsearch as --es URL (it reads the pages index)")
    if source == "memory":
        raise SourceError("the memory backend keeps nothing after its process: use the "
                          "JSONL output of `neardup dedup`")
    if source.startswith("sqlite:"):
        return list(sqlite_records(Path(source[len("sqlite:"):])))
    return list(jsonl_records(Path(source)))


def jsonl_records(path: Path) -> Iterator[PageRecord]:
    """The verdict lines of `neardup dedup -o OUT.jsonl`."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield record_from_verdict(json.loads(line), number)
            except (ValueError, KeyError, TypeError) as exc:
                raise SourceError(f"{path}:{number}: not a neardup verdict line ({exc})") from None


def sqlite_records(path: Path) -> Iterator[PageRecord]:
    """Fingerprints of an SQLite index (read-only); duplicates appear when they were indexed
    (NEARDUP_INDEX_DUPLICATES, on by default)."""
    if not path.is_file():
        raise SourceError(f"no SQLite index at {path}")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
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


def _report_data(args: argparse.Namespace) -> tuple[list[PageRecord], dict[str, str], str]:
    """Records, texts by doc id, and a name for the source."""
    if args.es:
        from neardup_pipeline.index.elastic.pages import page_records, page_texts
        from neardup_pipeline.report.html import pairs_of

        if args.source:
            raise SourceError("give either a source (OUT.jsonl, sqlite:PATH) or --es URL")
        with _es_client(args.es, args.pages_index) as client:
            records = list(page_records(client, args.pages_index))
            pairs, _ = pairs_of(records, {}, args.canonical, args.max_pairs)
            urls = sorted({r.url for p in pairs for r in (p.canonical, p.copy) if r.url})
            by_url = page_texts(client, args.pages_index, urls)
        es_texts = {r.doc_id: by_url[r.url] for r in records if r.url in by_url}
        return records, es_texts, f"{args.es} index {args.pages_index}"
    source = _source(args)
    records = _records(source)
    texts: dict[str, str] = {}
    if args.docs is not None:
        texts = corpus_texts(args.docs, {r.doc_id for r in records})
        known = corpus_urls(args.docs)
        records = [r if r.url else _with_url(r, known.get(r.doc_id)) for r in records]
    return records, texts, source


def corpus_texts(path: Path, wanted: set[str]) -> dict[str, str]:
    """doc id -> the text neardup compared (HTML extracted the same way) for the corpus."""
    from neardup_pipeline.cli.main import parse_document
    from neardup_pipeline.errors import InputError
    from neardup_pipeline.fingerprint import Fingerprinter

    fingerprinter = Fingerprinter()
    texts: dict[str, str] = {}
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                doc = parse_document(line)
            except InputError:
                continue
            if doc.doc_id in wanted:
                texts[doc.doc_id] = fingerprinter.text_of(doc)[0]
    return texts


def corpus_urls(path: Path) -> dict[str, str]:
    urls: dict[str, str] = {}
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("url") and obj.get("id") is not None:
                urls[str(obj["id"])] = str(obj["url"])
    return urls


def _with_url(record: PageRecord, url: str | None) -> PageRecord:
    from dataclasses import replace

    return replace(record, url=url) if url else record


class _es_client:
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
