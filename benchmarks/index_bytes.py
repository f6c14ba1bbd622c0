"""Bytes a page in everything neardup stores per page, after `neardup dedup` on real pages.

Runs the real command line on the PostgreSQL manual pages of ../shared/data (2,334 pages, two
releases) and on the multisite web pages (410 article pages of a few hundred sites), once into a
fresh Elasticsearch index and once into a fresh SQLite file, with the default methods. Then,
per Elasticsearch index neardup made (fingerprints, write log, clusters), the primary store
size after a force-merge to one segment, over the pages checked; for SQLite the file's size
after VACUUM (the `.simhash` folder included when there is one).

Usage: python benchmarks/index_bytes.py --es-url URL [--corpus postgresql multisite] [--fields]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from elasticsearch import Elasticsearch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import multisite_pages, postgresql_pages
from benchmarks.provenance import measured_at

SIDE = ("writelog", "clusters", "df")
RETENTION_WAIT_SECONDS = 600
PROBE_ID = "neardup-bytes-probe"


def corpus_lines(name: str) -> list[str]:
    if name == "postgresql":
        pages: list[tuple[str, bytes, str | None]] = [
            (p.doc_id, p.html, None) for p in postgresql_pages()]
    else:
        pages = [(p.doc_id, p.html, p.url) for p in multisite_pages()]
    return [json.dumps({"id": doc_id, "html": html.decode("utf-8", "replace"), "url": url})
            for doc_id, html, url in pages]


def dedup(source: Path, backend: str, out: Path, extra: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "neardup_pipeline", "dedup", str(source), "-o",
                           str(out), "--backend", backend, *extra], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"neardup dedup failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def es_bytes(client: Elasticsearch, index: str) -> dict[str, int]:
    """Primary store bytes per neardup index, merged to one segment. A document replaced or
    updated stays on disk (soft-deleted) until the shard's retention lease passes it: the
    merge waits for that (`wait_for_retention`), as a long crawl's merges do."""
    names = [index] + [f"{index}-{side}" for side in SIDE]
    found = ",".join(n for n in names if client.indices.exists(index=n))
    for name in found.split(","):  # a merge prunes only what it rewrites: give it two segments
        client.index(index=name, id=PROBE_ID, document={}, refresh=True)
        client.delete(index=name, id=PROBE_ID, refresh=True)
    wait_for_retention(client, found)
    client.indices.forcemerge(index=found, only_expunge_deletes=True, wait_for_completion=True)
    client.indices.forcemerge(index=found, max_num_segments=1, wait_for_completion=True)
    client.indices.flush(index=found)
    client.indices.refresh(index=found)
    stats = client.indices.stats(index=found, metric="store")["indices"]
    return {n: int(stats[n]["primaries"]["store"]["size_in_bytes"]) for n in stats}


def wait_for_retention(client: Elasticsearch, indices: str) -> None:
    """Wait until every shard's retention leases retain no operation: until then a merge
    keeps replaced and deleted documents, and `_recovery_source` (the whole source of a
    document whose `_source` leaves fields out). Leases advance at each sync
    (`index.soft_deletes.retention_lease.sync_interval`, 30 s), later on a busy machine."""
    deadline = time.monotonic() + RETENTION_WAIT_SECONDS
    while time.monotonic() < deadline:
        client.indices.flush(index=indices)
        stats = client.indices.stats(index=indices, level="shards")["indices"]
        behind = [
            name for name, index in stats.items() for copies in index["shards"].values()
            for shard in copies
            if any(int(lease["retaining_seq_no"]) <= int(shard["seq_no"]["max_seq_no"])
                   for lease in shard["retention_leases"]["leases"])]
        if not behind:
            return
        time.sleep(5)
    raise SystemExit(f"retention leases still hold operations after {RETENTION_WAIT_SECONDS} s")


def field_bytes(client: Elasticsearch, index: str) -> dict[str, int]:
    """Bytes per field of one index (the `_disk_usage` analysis: inverted index, stored fields
    (`_source`, `_id`), doc values, points), largest first."""
    usage = client.indices.disk_usage(index=index, run_expensive_tasks=True)[index]["fields"]
    sizes = {name: int(field["total_in_bytes"]) for name, field in usage.items()}
    return dict(sorted(sizes.items(), key=lambda item: -item[1]))


def sqlite_bytes(path: Path) -> int:
    with sqlite3.connect(path) as db:
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # VACUUM went through the WAL
    extra = sum(f.stat().st_size for f in path.parent.glob(path.name + "*") if f != path
                and f.is_file())
    folder = path.with_suffix(path.suffix + ".simhash")
    if folder.is_dir():
        extra += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return path.stat().st_size + extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--es-url", required=True)
    parser.add_argument("--corpus", nargs="+", default=["postgresql", "multisite"],
                        choices=["postgresql", "multisite"])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--fields", action="store_true",
                        help="also print the fingerprint index's bytes a page per field")
    args = parser.parse_args()
    print(measured_at())
    client = Elasticsearch(args.es_url, request_timeout=600)
    print("| corpus | pages | backend | index | bytes | bytes a page | dedup s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.corpus:
        lines = corpus_lines(name)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            source = folder / "in.jsonl"
            source.write_text("\n".join(lines) + "\n", encoding="utf-8")
            pages = len(lines)
            index = f"neardup-bytes-{uuid.uuid4().hex[:8]}"
            batch = ["--batch", str(args.batch)]
            try:
                es_seconds = dedup(source, args.es_url, folder / "es.jsonl",
                                   [*batch, "--fingerprint-index", index])
                sizes = es_bytes(client, index)
                for n, size in sizes.items():
                    print(f"| {name} | {pages} | elasticsearch | {n.replace(index, 'INDEX')} "
                          f"| {size:,} | {size / pages:,.0f} | {es_seconds:.1f} |")
                if args.fields:
                    for field, size in field_bytes(client, index).items():
                        print(f"| {name} | {pages} | elasticsearch | INDEX field {field} "
                              f"| {size:,} | {size / pages:,.0f} | |")
                total = sum(sizes.values())
                print(f"| {name} | {pages} | elasticsearch | all | {total:,} "
                      f"| {total / pages:,.0f} | {es_seconds:.1f} |")
            finally:
                client.options(ignore_status=404).indices.delete(
                    index=",".join([index] + [f"{index}-{side}" for side in SIDE]))
            db = folder / "fp.sqlite"
            sqlite_seconds = dedup(source, f"sqlite:{db}", folder / "sq.jsonl", batch)
            size = sqlite_bytes(db)
            print(f"| {name} | {pages} | sqlite | file | {size:,} | {size / pages:,.0f} "
                  f"| {sqlite_seconds:.1f} |")


if __name__ == "__main__":
    main()
