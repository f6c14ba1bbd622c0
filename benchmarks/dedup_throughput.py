"""docs/s of `neardup dedup` on the PostgreSQL manual pages, per backend and process count.

Runs the real command line on the 2,334 pages of ../shared/data (two releases) once per backend
and `--processes` value, in one run so the ratios compare, and prints a table
with the pairwise precision and recall of its clusters against the truth (same file name in the
two releases, text identical or edited). The time is the whole command's, interpreter start
included. Usage: python benchmarks/dedup_throughput.py [--es-url URL] [--method simhash]
[--processes 0 2] [--rounds N] (every second round in reverse order: the machine drifts)
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import Page, postgresql_pages
from benchmarks.provenance import measured_at


def write_corpus(pages: tuple[Page, ...], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for page in pages:
            html = page.html.decode("utf-8", errors="replace")
            out.write(json.dumps({"id": page.doc_id, "html": html, "url": page.doc_id}) + "\n")


def pairs_of(clusters: dict[str, list[str]]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for members in clusters.values():
        found.update(itertools.combinations(sorted(members), 2))
    return found


def score(output: Path, pages: tuple[Page, ...]) -> tuple[float, float, int]:
    predicted: dict[str, list[str]] = defaultdict(list)
    for line in output.open(encoding="utf-8"):
        record = json.loads(line)
        predicted[record["cluster"]].append(record["id"])
    gold: dict[str, list[str]] = defaultdict(list)
    for page in pages:
        gold[page.group].append(page.doc_id)
    got, truth = pairs_of(predicted), pairs_of(gold)
    true_positive = len(got & truth)
    precision = true_positive / len(got) if got else 1.0
    return precision, true_positive / len(truth), len(got - truth)


def drop_index(es_url: str, index: str) -> None:
    """Delete the fingerprint index one run made: the server is the user's, not the benchmark's."""
    from elasticsearch import Elasticsearch

    with Elasticsearch(es_url) as client:
        client.options(ignore_status=404).indices.delete(index=index)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--es-url", help="Elasticsearch URL to include that backend")
    parser.add_argument("--method", default="simhash", help="neardup dedup --method")
    parser.add_argument("--processes", type=int, nargs="+", default=[0],
                        help="child processes that fingerprint (one run per value)")
    parser.add_argument("--rounds", type=int, default=1, help="run every setting N times")
    args = parser.parse_args()
    pages = postgresql_pages()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "pg.jsonl"
        write_corpus(pages, corpus)
        backends = {"memory": "memory", "sqlite": f"sqlite:{Path(tmp) / 'fp.sqlite'}"}
        if args.es_url:
            backends["elasticsearch"] = args.es_url
        print(f"{measured_at()}: {len(pages)} pages, "
              f"{corpus.stat().st_size / 1e6:.1f} MB of HTML")
        print(f"method {args.method}")
        print("| backend | processes | round | docs/s | seconds | precision | recall "
              "| false pairs |")
        print("|---|---|---|---|---|---|---|---|")
        outputs: dict[tuple[int, int], set[bytes]] = {}
        settings = list(itertools.product(backends.items(), args.processes))
        runs = [(n, s) for n in range(args.rounds) for s in (settings[::-1] if n % 2 else settings)]
        for round_number, ((name, base), processes) in runs:
            run = f"{processes}-{round_number}"
            output = Path(tmp) / f"{name}-{run}.jsonl"
            spec = base.replace("fp.sqlite", f"fp-{run}.sqlite")
            command = [sys.executable, "-m", "neardup_pipeline", "dedup", str(corpus),
                       "--method", args.method, "--backend", spec, "-o", str(output),
                       "--processes", str(processes)]
            index = f"neardup-fingerprints-bench-{uuid.uuid4().hex[:8]}"
            if name == "elasticsearch":
                command += ["--fingerprint-index", index]
            start = time.perf_counter()
            try:
                subprocess.run(command, check=True)
                seconds = time.perf_counter() - start
            finally:
                if name == "elasticsearch":
                    drop_index(args.es_url, index)
            precision, recall, false_pairs = score(output, pages)
            outputs.setdefault((round_number, processes), set()).add(output.read_bytes())
            print(f"| {name} | {processes} | {round_number + 1} | {len(pages) / seconds:,.0f} "
                  f"| {seconds:.1f} "
                  f"| {precision:.4f} | {recall:.4f} | {false_pairs} |")
    same = all(len(found) == 1 for found in outputs.values())
    print(f"verdict files byte-identical across backends in every round: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
