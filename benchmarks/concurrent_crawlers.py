"""Missed pairs and cost per page with N processes writing one Elasticsearch index at once.

M twin pairs of the PostgreSQL manual (the same page in two releases, near-duplicates by the
default methods) are split between partner processes; a barrier releases each round's pages in
every process at the same instant (tests/concurrent_writers.py). Each setting runs with the
write log (the default) and without it (`ordered=False`, every writer on its own), so the table
shows what the log catches and what it costs. Cost per page: time in `process` /
`process_batch` and the close, summed over the processes, per page.
Usage: python benchmarks/concurrent_crawlers.py --es-url URL [--processes 2 4 8] [--pairs 400]
[--batch 1 50]
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import postgresql_pages
from benchmarks.provenance import measured_at
from neardup_pipeline.config import NearDupConfig
from tests.concurrent_writers import run_writers, twins_of


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--es-url", required=True)
    parser.add_argument("--processes", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--pairs", type=int, default=400, help="twin pairs per run (M)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 50],
                        help="pages per check: 1 as in a crawl, 50 as a dedup batch")
    args = parser.parse_args()
    pages = [(p.doc_id, p.html, p.group) for p in postgresql_pages()]
    twins = twins_of(pages, NearDupConfig())
    if len(twins) < args.pairs:
        raise SystemExit(f"only {len(twins)} twin pairs in the data")
    twins = twins[:args.pairs]
    print(f"{measured_at()}: {len(twins)} twin pairs (PostgreSQL manual, two releases), "
          "default methods, bulk size 500")
    print("| processes | pages per check | write log | missed pairs | ms per page | wall s |")
    print("|---|---|---|---|---|---|")
    for processes in args.processes:
        for batch in args.batch:
            for ordered in (False, True):
                outcome = run_writers(args.es_url, twins, processes, batch, ordered,
                                      index=f"neardup-bench-concurrent-{uuid.uuid4().hex[:8]}")
                print(f"| {processes} | {batch} | {'on' if ordered else 'off'} "
                      f"| {outcome.missed} of {outcome.pairs} "
                      f"| {1000 * outcome.check_seconds / outcome.pages:.1f} "
                      f"| {outcome.seconds:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
