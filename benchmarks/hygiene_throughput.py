"""docs/s and bytes written of `neardup hygiene` on a content index of real pages: with 1, 2 and
4 reader processes into a side index, N slices run at once then one `--finish`, and in place;
and whether each run's clusters equal `neardup dedup`'s on the same documents.

The documents are made from the real pages of ../shared/data (PostgreSQL manual, Debian
installation guide, multisite web pages): each is either a variant of a page with half its words
replaced by words of the corpus (a distinct document) or a copy of an earlier variant with 1 % of
its words replaced (a near-duplicate), seeded. They are loaded, in order, into a one-shard index
of a real Elasticsearch; each run then marks them into its own side index (`--into`) with its
own fingerprint index, so every run starts from the same state and leaves the content index as
it was; the in-place run comes last. Bytes stored: what a run leaves on disk, after a flush and a
merge to one segment: the indices it made (side, fingerprints, document frequencies, checkpoint)
and, in place, what the content index grew by. Disk writes (a server on this machine, found
by its port or given by --es-pid): what the server process wrote to disk during the run
(/proc/PID/io: write_bytes less cancelled_write_bytes), merges and translog included. The time
is the commands', interpreter start included. Usage: python benchmarks/hygiene_throughput.py
--es-url URL [--docs 100000] [--processes 1 2 4] [--slices 2] [--in-place-processes 2]
[--es-pid PID] [--no-dedup]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import installation_guide_pages, multisite_pages, postgresql_pages
from benchmarks.local_process import disk_writes, listening_pid
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


def neardup(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "neardup_pipeline", *argv]


def run_commands(argvs: list[list[str]]) -> float:
    """neardup command lines run at once in child interpreters (machines sharing the work);
    the wall time until the last ends."""
    import subprocess

    started = time.monotonic()
    children = [subprocess.Popen(neardup(argv), text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE) for argv in argvs]
    outputs = [child.communicate() for child in children]
    seconds = time.monotonic() - started
    for argv, child, (out, err) in zip(argvs, children, outputs, strict=True):
        if child.returncode != 0:
            raise SystemExit(f"neardup {' '.join(argv)} failed:\n{err[-2000:]}")
        if out.strip():
            print(f"  {out.strip()}", flush=True)
    return seconds


def marks_of(client: Any, index: str, key: str) -> dict[str, dict[str, Any]]:
    """doc id -> its neardup fields (`key`: the field naming the document, or `_id`)."""
    from elasticsearch import helpers

    client.indices.refresh(index=index)
    fields = ["neardup_cluster", "neardup_canonical", "neardup_of"]
    return {(h["_id"] if key == "_id" else h["_source"][key]): h["_source"]
            for h in helpers.scan(client, index=index, size=5000,
                                  _source=[*fields, *([key] if key != "_id" else [])])}


def consistent(marks: dict[str, dict[str, Any]]) -> bool:
    """Every document marked, one canonical per cluster, every other member pointing at it."""
    members: dict[str, list[str]] = defaultdict(list)
    for doc_id, m in marks.items():
        if "neardup_cluster" not in m:
            return False
        members[m["neardup_cluster"]].append(doc_id)
    return all(
        [d for d in docs if marks[d]["neardup_canonical"]] == [cluster]
        and all(marks[d].get("neardup_of") == (None if d == cluster else cluster) for d in docs)
        for cluster, docs in members.items())


def partition(cluster_of: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = defaultdict(set)
    for doc_id, cluster in cluster_of.items():
        groups[cluster].add(doc_id)
    return {frozenset(g) for g in groups.values()}


def dedup_clusters(corpus: Path, folder: Path) -> tuple[dict[str, str], float]:
    """`neardup dedup` on the same documents: each one's final cluster, and the time."""
    from neardup_pipeline.cli.sources import sqlite_records

    db = folder / "dedup.sqlite"
    seconds = run_commands([["dedup", str(corpus), "-o", str(folder / "verdicts.jsonl"),
                             "--backend", f"sqlite:{db}", "--processes", "1"]])
    return {r.doc_id: r.cluster for r in sqlite_records(db)}, seconds


@dataclass
class Row:
    name: str
    seconds: float
    stored: int
    written: int | None
    clusters: int
    same: str
    note: str = ""


def measure(client: Any, args: argparse.Namespace, name: str, steps: list[list[list[str]]],
            prefix: str, marked: str, key: str, expected: set[frozenset[str]] | None,
            content_before: int = 0) -> Row:
    """Run `steps` (each a list of commands run at once), then read what they marked."""
    load_before = os.getloadavg()[0]
    written_before = disk_writes(args.es_pid)
    times = [run_commands(step) for step in steps]
    written_after = disk_writes(args.es_pid)
    written = (None if written_before is None or written_after is None
               else written_after - written_before)
    stored = store_bytes(client, f"{prefix}*")
    if content_before:
        stored += store_bytes(client, INDEX) - content_before
    marks = marks_of(client, marked, key)
    got = partition({d: m["neardup_cluster"] for d, m in marks.items()})
    same = ("not compared" if expected is None else "yes" if got == expected else "NO")
    if not consistent(marks) or len(marks) != args.docs:
        same += f" (NOT one canonical per cluster, {len(marks):,} marked)"
    note = " + ".join(f"{t:.0f} s" for t in times) if len(times) > 1 else ""
    note += f"{'; ' if note else ''}load {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    return Row(name, sum(times), stored, written, len(got), same, note)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--es-url", required=True)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--processes", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--slices", type=int, default=2,
                        help="slices run at once, then one --finish (0: none)")
    parser.add_argument("--in-place-processes", type=int, default=2,
                        help="the in-place run's --processes (-1: no in-place run)")
    parser.add_argument("--es-pid", type=int, help="the server's process id (default: the "
                        "process listening on --es-url's port, when it runs on this machine): "
                        "its disk writes are measured too")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--no-dedup", action="store_true", help="skip the dedup comparison")
    args = parser.parse_args()
    from elasticsearch import Elasticsearch

    client = Elasticsearch(args.es_url, request_timeout=600)
    print(measured_at(), flush=True)
    if args.es_pid is None:
        args.es_pid = listening_pid(args.es_url)
    if disk_writes(args.es_pid) is None:
        print("disk writes not measured: no readable server process on this machine", flush=True)
    else:
        print(f"disk writes of the server's process {args.es_pid}", flush=True)
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
        corpus.unlink()
        base = ["hygiene", "--es", args.es_url, "--index", INDEX]
        rows = []
        for processes in args.processes:
            prefix = f"bench-hygiene-run{processes}"
            drop(client, f"{prefix}*")
            side = ["--into", f"{prefix}-side", "--fingerprint-index", f"{prefix}-fp"]
            rows.append(measure(client, args, f"--processes {processes}, --into",
                                [[[*base, *side, "--processes", str(processes)]]], prefix,
                                f"{prefix}-side", "doc_id", expected))
            drop(client, f"{prefix}*")
            print(rows[-1], flush=True)
        if args.slices:
            prefix = "bench-hygiene-slices"
            drop(client, f"{prefix}*")
            side = ["--into", f"{prefix}-side", "--fingerprint-index", f"{prefix}-fp"]
            n = args.slices
            steps = [[[*base, *side, "--slice", f"{i}/{n}"] for i in range(n)],
                     [[*base, *side, "--finish"]]]
            rows.append(measure(client, args, f"{n} slices at once, then --finish, --into",
                                steps, prefix, f"{prefix}-side", "doc_id", expected))
            drop(client, f"{prefix}*")
            print(rows[-1], flush=True)
        if args.in_place_processes >= 0:
            prefix = f"{INDEX}-neardup"  # the default fingerprint index and its companions
            drop(client, f"{prefix}*")
            steps = [[[*base, "--processes", str(args.in_place_processes)]]]
            rows.append(measure(client, args, f"--processes {args.in_place_processes}, in place",
                                steps, prefix, INDEX, "_id", expected, content_before=content))
            drop(client, f"{prefix}*")
            print(rows[-1], flush=True)
        print("\n| run | seconds | docs/s | bytes stored | disk writes | clusters | = dedup |")
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            written = "-" if row.written is None else f"{row.written / 1e6:,.0f} MB"
            note = f" ({row.note})" if row.note else ""
            print(f"| {row.name} | {row.seconds:.0f}{note} | {args.docs / row.seconds:,.0f} | "
                  f"{row.stored / 1e6:,.1f} MB | {written} | {row.clusters:,} | {row.same} |")
    client.options(ignore_status=404).indices.delete(index=INDEX)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
