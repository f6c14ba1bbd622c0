"""docs/s and bytes written of `neardup hygiene` on a content index of real pages, with 1, 2 and
4 reader processes, and whether its clusters equal `neardup dedup`'s on the same documents.

The documents are made from the real pages of ../shared/data (PostgreSQL manual, Debian
installation guide, multisite web pages): each is either a variant of a page with half its words
replaced by words of the corpus (a distinct document) or a copy of an earlier variant with 1 % of
its words replaced (a near-duplicate), seeded. They are loaded, in order, into a one-shard index
of a real Elasticsearch; each run then marks them into its own side index (`--into`) with its
own fingerprint index, so every run starts from the same state and leaves the content index as
it was. Bytes written: the store size of the indices a run made (side, fingerprints, document
frequencies, checkpoint), after a flush and a merge to one segment. The time is the command's,
interpreter start included. Usage: python benchmarks/hygiene_throughput.py --es-url URL
[--docs 100000] [--processes 1 2 4] [--no-dedup]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import installation_guide_pages, multisite_pages, postgresql_pages
from benchmarks.provenance import measured_at
from tests.corpora import WORD

INDEX = "bench-hygiene-content"
TEXT = re.compile(r">([^<]+)<")


def real_pages() -> list[tuple[str, str]]:
    """(url, html) of every real page the corpora hold."""
    pages = [(f"https://www.postgresql.org/docs/{p.doc_id}", p.html.decode("utf-8", "replace"))
             for p in postgresql_pages()]
    pages += [(f"https://www.debian.org/releases/stable/{p.doc_id}",
               p.html.decode("utf-8", "replace")) for p in installation_guide_pages()]
    pages += [(p.url, p.html.decode("utf-8", "replace")) for p in multisite_pages()]
    return pages


def edit(html: str, fraction: float, rng: random.Random, vocabulary: list[str]) -> str:
    """`html` with `fraction` of the words of its text replaced by corpus words (seeded)."""

    def words(match: re.Match[str]) -> str:
        return ">" + WORD.sub(lambda w: rng.choice(vocabulary) if rng.random() < fraction
                              else w.group(0), match.group(1)) + "<"

    return TEXT.sub(words, html)


def documents(n: int, seed: int) -> Iterator[dict[str, Any]]:
    """`n` documents: 70 % distinct variants of real pages, 30 % near-duplicate copies."""
    rng = random.Random(seed)
    pages = real_pages()
    vocabulary = sorted({w for _, html in pages[::7] for w in WORD.findall(html)
                         if w.isalpha()})[:20_000]
    variants: list[tuple[str, str]] = []  # a bounded reservoir of earlier variants to copy
    for i in range(n):
        if variants and rng.random() < 0.3:
            url, html = rng.choice(variants)
            yield {"_id": f"d{i}", "url": f"{url}?copy={i}",
                   "html": edit(html, 0.01, rng, vocabulary)}
            continue
        url, html = rng.choice(pages)
        html = edit(html, 0.5, rng, vocabulary)
        url = f"{url}?v={i}"
        if len(variants) < 5000:
            variants.append((url, html))
        else:
            variants[rng.randrange(5000)] = (url, html)
        yield {"_id": f"d{i}", "url": url, "html": html}


def load(client: Any, n: int, seed: int, corpus: Path) -> float:
    """Index the documents in order (one shard) and write them as `neardup dedup` input."""
    from elasticsearch import helpers

    client.options(ignore_status=404).indices.delete(index=INDEX)
    client.indices.create(index=INDEX, settings={"number_of_shards": 1,
                                                 "number_of_replicas": 0})
    started = time.monotonic()
    with corpus.open("w", encoding="utf-8") as out:
        def actions() -> Iterator[dict[str, Any]]:
            for doc in documents(n, seed):
                out.write(json.dumps({"id": doc["_id"], "url": doc["url"],
                                      "html": doc["html"]}) + "\n")
                yield {"_index": INDEX, "_id": doc["_id"],
                       "_source": {"url": doc["url"], "html": doc["html"]}}

        for ok, item in helpers.streaming_bulk(client, actions(), chunk_size=500,
                                               max_retries=5, initial_backoff=2):
            if not ok:
                raise SystemExit(f"loading failed: {item}")
    client.indices.refresh(index=INDEX)
    return time.monotonic() - started


def store_bytes(client: Any, pattern: str) -> int:
    """Store size of the indices matching `pattern`, flushed and merged to one segment."""
    names = list(client.indices.get(index=pattern, allow_no_indices=True))
    if not names:
        return 0
    client.indices.flush(index=",".join(names))
    client.indices.forcemerge(index=",".join(names), max_num_segments=1)
    stats = client.indices.stats(index=",".join(names), metric="store")
    return int(stats["_all"]["primaries"]["store"]["size_in_bytes"])


def drop(client: Any, pattern: str) -> None:
    for name in client.indices.get(index=pattern, allow_no_indices=True):
        client.indices.delete(index=name)


def run_command(argv: list[str]) -> float:
    """The neardup command line in a child interpreter; its wall time."""
    import subprocess

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "neardup_pipeline", *argv], text=True,
                          capture_output=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"neardup {' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    if done.stdout.strip():
        print(f"  {done.stdout.strip()}", flush=True)
    return seconds


def side_clusters(client: Any, index: str) -> dict[str, str]:
    from elasticsearch import helpers

    return {h["_source"]["doc_id"]: h["_source"]["neardup_cluster"]
            for h in helpers.scan(client, index=index, size=5000,
                                  _source=["doc_id", "neardup_cluster"])}


def partition(cluster_of: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = defaultdict(set)
    for doc_id, cluster in cluster_of.items():
        groups[cluster].add(doc_id)
    return {frozenset(g) for g in groups.values()}


def dedup_clusters(corpus: Path, folder: Path) -> tuple[dict[str, str], float]:
    """`neardup dedup` on the same documents: each one's final cluster, and the time."""
    from neardup_pipeline.cli.sources import sqlite_records

    db = folder / "dedup.sqlite"
    seconds = run_command(["dedup", str(corpus), "-o", str(folder / "verdicts.jsonl"),
                           "--backend", f"sqlite:{db}", "--processes", "1"])
    return {r.doc_id: r.cluster for r in sqlite_records(db)}, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--es-url", required=True)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--no-dedup", action="store_true", help="skip the dedup comparison")
    args = parser.parse_args()
    from elasticsearch import Elasticsearch

    client = Elasticsearch(args.es_url, request_timeout=600)
    print(measured_at())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus.jsonl"
        seconds = load(client, args.docs, args.seed, corpus)
        content = store_bytes(client, INDEX)
        print(f"loaded {args.docs:,} documents in {seconds:.0f} s; content index "
              f"{content / 1e6:,.1f} MB", flush=True)
        expected = None
        if not args.no_dedup:
            clusters, seconds = dedup_clusters(corpus, folder)
            expected = partition(clusters)
            print(f"neardup dedup --backend sqlite --processes 1: {seconds:.0f} s, "
                  f"{args.docs / seconds:,.0f} docs/s, {len(expected):,} clusters", flush=True)
        rows = []
        for processes in args.processes:
            prefix = f"bench-hygiene-run{processes}"
            drop(client, f"{prefix}*")
            seconds = run_command(["hygiene", "--es", args.es_url, "--index", INDEX,
                                   "--into", f"{prefix}-side", "--processes", str(processes),
                                   "--fingerprint-index", f"{prefix}-fp"])
            written = store_bytes(client, f"{prefix}*")
            got = partition(side_clusters(client, f"{prefix}-side"))
            same = "not compared" if expected is None else "yes" if got == expected else "NO"
            rows.append((processes, seconds, written, len(got), same))
            drop(client, f"{prefix}*")
        print("\n| processes | seconds | docs/s | bytes written | clusters | = dedup |")
        print("|---|---|---|---|---|---|")
        for processes, seconds, written, found, same in rows:
            note = " (2 cores)" if processes > 2 else ""
            print(f"| {processes}{note} | {seconds:.0f} | {args.docs / seconds:,.0f} | "
                  f"{written / 1e6:,.1f} MB | {found:,} | {same} |")
    client.options(ignore_status=404).indices.delete(index=INDEX)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
