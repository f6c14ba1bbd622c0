"""`neardup stats SOURCE`: documents, clusters and duplicates by method."""

from __future__ import annotations

import argparse
import json

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.options import add_es_options, es_settings
from neardup_pipeline.cli.sources import es_client, read_records, source_of
from neardup_pipeline.report.stats import Summary, summarize


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    stats = sub.add_parser("stats", help=about("stats"))
    stats.add_argument("source", nargs="?", help="OUT.jsonl (neardup dedup) or sqlite:PATH")
    add_es_options(stats)
    stats.add_argument("--json", action="store_true", help="machine-readable output")
    stats.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    summary = summary_of(args)
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


def summary_of(args: argparse.Namespace) -> Summary:
    """The summary of the source: Elasticsearch aggregates it, a file is read whole."""
    if args.es:
        from neardup_pipeline.index.elastic.pages import pages_summary

        with es_client(args.es, args.pages_index, es_settings(args)) as client:
            return pages_summary(client, args.pages_index)
    return summarize(read_records(source_of(args)))
