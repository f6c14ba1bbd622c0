"""`neardup report SOURCE -o REPORT.html`: one self-contained HTML report of the clusters."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.inputs import parse_document
from neardup_pipeline.cli.options import add_es_options, es_settings
from neardup_pipeline.cli.reuse import reuse_output, reuse_report
from neardup_pipeline.cli.sources import es_client, read_records, source_of
from neardup_pipeline.config import redact_backend
from neardup_pipeline.errors import InputError, ReportError, SourceError
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.report.stats import PageRecord, summarize
from neardup_pipeline.scrapy.settings import ScrapySettings
from neardup_pipeline.verdict.canonical import POLICIES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser("report", help=about("report"))
    report.add_argument("source", nargs="?", help="OUT.jsonl (neardup dedup) or sqlite:PATH")
    add_es_options(report)
    report.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    report.add_argument("--docs", type=Path,
                        help="the input corpus or the crawl's feed (JSONL: id or url, "
                        "html|text): texts for the pairs")
    report.add_argument("--sources", type=Path,
                        help="for a `neardup reuse` output: the sources (JSONL, a folder, or "
                        "the SQLite file of `neardup reuse index`); --docs: the suspects")
    report.add_argument("--canonical", choices=POLICIES, default=ScrapySettings.canonical,
                        help="canonical copy where the source does not mark one (default: "
                        f"{ScrapySettings.canonical})")
    report.add_argument("--largest", type=int, default=10, help="largest clusters listed")
    report.add_argument("--max-pairs", type=int, default=200, help="pairs shown side by side")
    report.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from neardup_pipeline.report.html import render_report

    if args.source and reuse_output(Path(args.source)):
        return reuse_report(args)
    records, texts, source = report_data(args)
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


def report_data(args: argparse.Namespace) -> tuple[list[PageRecord], dict[str, str], str]:
    """Records, texts by doc id, and a name for the source."""
    if args.es:
        from neardup_pipeline.index.elastic.pages import page_records, page_texts
        from neardup_pipeline.report.html import pairs_of

        if args.source:
            raise SourceError("give either a source (OUT.jsonl, sqlite:PATH) or --es URL")
        with es_client(args.es, args.pages_index, es_settings(args)) as client:
            records = list(page_records(client, args.pages_index))
            pairs, _ = pairs_of(records, {}, args.canonical, args.max_pairs)
            urls = sorted({r.url for p in pairs for r in (p.canonical, p.copy) if r.url})
            by_url = page_texts(client, args.pages_index, urls)
        es_texts = {r.doc_id: by_url[r.url] for r in records if r.url in by_url}
        return records, es_texts, f"{redact_backend(args.es)} index {args.pages_index}"
    source = source_of(args)
    records = read_records(source)
    texts: dict[str, str] = {}
    if args.docs is not None:
        texts = compared_texts(args.docs, {r.doc_id for r in records})
        known = corpus_urls(args.docs)
        records = [r if r.url else _with_url(r, known.get(r.doc_id)) for r in records]
    return records, texts, source


def compared_texts(path: Path, wanted: set[str]) -> dict[str, str]:
    """doc id -> the text neardup compared (HTML extracted the same way) for the corpus (a
    `dedup` input or the crawl's feed); says on stderr why pairs will lack their texts."""
    fingerprinter = Fingerprinter()
    texts: dict[str, str] = {}
    no_text = documents = 0
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            if _without_text(line):
                no_text += 1
                continue
            try:
                doc = parse_document(line)
            except InputError:
                continue
            documents += 1
            if doc.doc_id in wanted:
                texts[doc.doc_id] = fingerprinter.text_of(doc)[0]
    if no_text:
        print(f"neardup: {path}: {no_text} lines have neither 'html' nor 'text', so their pairs "
              "show no text (a crawl's feed carries the HTML unless NEARDUP_KEEP_HTML = False)",
              file=sys.stderr)
    if documents and wanted and not texts:
        print(f"neardup: {path}: none of its {documents} documents is in the source (their "
              "`id`, else `url`, names no document the source holds)", file=sys.stderr)
    return texts


def _without_text(line: str) -> bool:
    """A JSON object line with neither `html` nor `text` (a feed written without its pages)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("html") is None and obj.get("text") is None


def corpus_urls(path: Path) -> dict[str, str]:
    """doc id -> URL of every corpus line that has one (a verdict file may lack them)."""
    urls: dict[str, str] = {}
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("url"):
                doc_id = obj["url"] if obj.get("id") is None else obj["id"]
                urls[str(doc_id)] = str(obj["url"])
    return urls


def _with_url(record: PageRecord, url: str | None) -> PageRecord:
    return replace(record, url=url) if url else record
