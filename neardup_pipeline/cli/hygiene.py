"""`neardup hygiene --es URL --index CONTENT`: near-duplicates of an existing search index marked
on its documents (`neardup_cluster`, `neardup_canonical`, `neardup_of`), or in a side index."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from pathlib import Path

from tqdm import tqdm

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.options import (
    add_es_options,
    add_es_template_option,
    add_field_options,
    add_method_options,
    at_least,
    config_from_args,
    es_settings,
    field_spec,
)
from neardup_pipeline.errors import ConfigError, NearDupError, ReportError
from neardup_pipeline.hygiene.options import HygieneOptions, RunResult
from neardup_pipeline.hygiene.run import run_hygiene

DEFAULT_REPORT = Path("hygiene-report.html")
BULK_TIMEOUT = 60.0  # seconds per request, unless --es-request-timeout or its variable says
REQUEST_TIMEOUT = "NEARDUP_ES_REQUEST_TIMEOUT"


# Why documents were left out of the comparison, in the order the summary lists them.
NOT_CHECKED = ("no_text", "not_html", "bad_field", "repeated_id", "gone")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    hygiene = sub.add_parser("hygiene", help=about("hygiene"))
    add_es_options(hygiene, required=True)
    add_es_template_option(hygiene)
    hygiene.add_argument("--index", required=True, help="the content index to check")
    add_field_options(hygiene)
    add_method_options(hygiene)
    hygiene.add_argument(
        "--into", metavar="SIDE_INDEX",
        help="write the marks into this index, keyed by document id, not on the documents")
    hygiene.add_argument(
        "--fingerprint-index", metavar="NAME",
        help="the persistent fingerprint index (default: CONTENT-neardup-fingerprints, or "
        "SIDE_INDEX-neardup-fingerprints with --into)")
    hygiene.add_argument(
        "--processes", type=at_least(0), default=0, metavar="N",
        help="read and fingerprint in N child processes, one slice each; the verdicts stay in "
        "this one, in order: the same marks (default: 0, all in this process)")
    machines = hygiene.add_mutually_exclusive_group()
    machines.add_argument(
        "--slice", type=_slice, metavar="I/N",
        help="N machines sharing the work: fingerprint slice I of N (0-based) and stage the "
        "fingerprints; nothing is marked until one --finish run")
    machines.add_argument(
        "--finish", action="store_true",
        help="after every --slice run has ended: judge all documents in one order with the "
        "staged fingerprints and mark them (the same clusters as one machine)")
    hygiene.add_argument("--dry-run", action="store_true",
                         help="change nothing; write the HTML report of what would be marked")
    hygiene.add_argument("--report", type=Path, default=DEFAULT_REPORT, metavar="PATH",
                         help=f"the dry run's report (default: {DEFAULT_REPORT})")
    hygiene.add_argument("--window", type=at_least(1), default=1000, metavar="N",
                         help="documents per checkpoint (default: 1000)")
    hygiene.add_argument("--batch", type=at_least(1), default=100, metavar="N",
                         help="lookups per round trip (default: 100)")
    hygiene.set_defaults(func=cmd_hygiene)


def _slice(value: str) -> tuple[int, int]:
    try:
        i, n = (int(part) for part in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N, e.g. 0/4, got {value!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"needs 0 <= I < N, got {value!r}")
    return i, n


def options_from_args(args: argparse.Namespace) -> HygieneOptions:
    config = config_from_args(args)
    elastic = es_settings(args, config.elastic)
    if args.es_request_timeout is None and not os.environ.get(REQUEST_TIMEOUT):
        # a window's bulk writes take seconds on a loaded cluster: not the crawl's 5 s
        elastic = dataclasses.replace(elastic, request_timeout=BULK_TIMEOUT,
                                      retry_seconds=max(elastic.retry_seconds, BULK_TIMEOUT))
    config = config.replace(elastic=elastic)
    spec = field_spec(args)
    return HygieneOptions(
        url=args.es, index=args.index, config=config, spec=spec, into=args.into,
        fingerprint_index=args.fingerprint_index, processes=args.processes,
        slice_=args.slice, finish=args.finish, dry_run=args.dry_run, window=args.window,
        batch=args.batch,
    )


def cmd_hygiene(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    bar = tqdm(unit=" docs", disable=not sys.stderr.isatty(), file=sys.stderr, smoothing=0.1,
               dynamic_ncols=True)

    progress: list[int] = []  # [total, documents committed], once the index is counted

    def start(total: int, done: int) -> None:
        progress[:] = [total, done]
        bar.reset(total=total)
        bar.update(done)

    def read(n: int) -> None:  # called once a window is committed behind the checkpoint
        progress[1] += n
        bar.update(n)

    try:
        result = run_hygiene(options, start, read)
    except (NearDupError, KeyboardInterrupt) as exc:
        bar.close()
        print(stopped_line(options, exc, progress), file=sys.stderr)
        return 128 + signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 2
    finally:
        bar.close()
    if options.dry_run:
        write_report(options, result, args.report)
    print(summary_line(options, result))
    for problem, n in result.problems.most_common():
        print(f"neardup: {n:,} document(s) tagged bad_field: {problem}", file=sys.stderr)
    return 0


def stopped_line(options: HygieneOptions, exc: BaseException, progress: list[int]) -> str:
    """The one line of a run an index failure or Ctrl-C stopped: what happened, how far it got,
    how to go on. Windows are committed behind the checkpoint, so the same command resumes after
    the last one committed (a window caught halfway is undone and checked again)."""
    what = "interrupted (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else f"error: {exc}"
    if options.dry_run:
        return f"neardup: {what}; a dry run keeps nothing: run it again"
    if not progress:
        return f"neardup: {what}; nothing marked yet: run the same command again"
    total, done = progress
    work = "staged" if options.slice_ is not None else "marked"
    return (f"neardup: {what}; {done:,} of {total:,} documents {work} and saved in the "
            "checkpoint; run the same command again to resume from it")


def summary_line(options: HygieneOptions, result: RunResult) -> str:
    """The one line a run ends with."""
    c = result.counts
    rate = result.read_now / result.seconds if result.seconds else 0.0
    if options.slice_ is not None:
        part, of = options.slice_
        tagged = f", {c['bad_field']:,} bad_field" if c["bad_field"] else ""
        return (
            f"neardup hygiene: slice {part}/{of}: {c['read']:,} documents read "
            f"({result.read_now:,} in {result.seconds:.1f} s, {rate:,.0f} docs/s"
            f"{', resumed from its checkpoint' if result.resumed else ''}): {c['staged']:,} "
            f"fingerprints staged, {c['staged_before']:,} staged before, {c['unchanged']:,} "
            f"unchanged since the last run{tagged}; nothing marked until one --finish run "
            "after every slice has ended"
        )
    target = f"side index {options.into}" if options.into else f"index {options.index}"
    verb = "would be written to" if options.dry_run else "written to"
    resumed = ", resumed from its checkpoint" if result.resumed else ""
    tagged = ", ".join(f"{c[k]:,} {k}" for k in NOT_CHECKED if c[k])
    if options.finish:
        tagged = ", ".join(filter(None, (f"{c['from_slices']:,} fingerprinted by the slices",
                                         tagged)))
    return (
        f"neardup hygiene: {c['read']:,} documents read ({result.read_now:,} in "
        f"{result.seconds:.1f} s, {rate:,.0f} docs/s{resumed}): {c['checked']:,} checked, "
        f"{c['duplicates']:,} near-duplicates, {c['unchanged']:,} unchanged since the last run"
        f"{', ' + tagged if tagged else ''}; {c['marked']:,} marks {verb} {target}"
    )


def write_report(options: HygieneOptions, result: RunResult, path: Path) -> None:
    """The dry run's HTML report (texts of the pairs shown read again from the index)."""
    from neardup_pipeline.fingerprint import Fingerprinter
    from neardup_pipeline.hygiene.connect import connect
    from neardup_pipeline.hygiene.dry_report import records_of, texts_of
    from neardup_pipeline.report.html import pairs_of, render_report

    marks = list(result.marks.values())
    records = records_of(marks)
    pairs, _ = pairs_of(records, {}, "first", 200)
    by_doc = {m.doc_id: m.es_id for m in marks}
    wanted = {r.doc_id: by_doc[r.doc_id] for p in pairs for r in (p.canonical, p.copy)}
    connection = connect(options.url, options.config)
    try:
        texts = texts_of(connection, options.index, options.spec,
                         Fingerprinter(options.config), wanted)
    finally:
        connection.client.close()
    try:
        page = render_report(records, texts, source=f"{options.index} (dry run: nothing "
                             "written)", policy="first")
    except ReportError as exc:
        raise ConfigError(f"cannot write the dry run's report: {exc}") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    print(f"neardup hygiene: dry run: nothing written; report {path}", file=sys.stderr)
