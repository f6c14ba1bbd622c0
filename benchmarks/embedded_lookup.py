"""Embedded simhash lookup: permuted sorted tables at 10M fingerprints, and the SQLite backend
with them against simhash keys looked up as band rows.

1. `PermutedTables` alone: build N random fingerprints (default 10,000,000) into memory-mapped
   sorted tables, report build time, file size, bytes per fingerprint, reopen time, and the
   latency of `near` (distance <= 3) for a query mix: half near-neighbours of stored
   fingerprints (0-3 bits flipped), half random misses.
2. `SqliteIndex.candidates` at M documents (default 1,000,000), which adds the row -> doc id
   query: the tables (rows bulk-inserted into `simhash_rows`, tables rebuilt when the index opens)
   against band rows (4 block keys per document, the way the backend keeps simhash keys written
   before the parameters are known).

Usage: python benchmarks/embedded_lookup.py [-n 10000000] [-m 1000000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.provenance import measured_at
from neardup_pipeline import NearDupConfig
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index import SqliteIndex
from neardup_pipeline.index.sqlite.bands import band_key
from neardup_pipeline.index.sqlite.permuted import PermutedTables
from neardup_pipeline.methods.simhash import block_keys

CHUNK = 100_000


def query_mix(fps: np.ndarray, n: int, seed: int) -> list[int]:
    """Half near-neighbours (0-3 bits flipped) of stored fingerprints, half random misses."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        if q % 2:
            out.append(int(rng.integers(0, 2**64, dtype=np.uint64)))
            continue
        fp = int(fps[int(rng.integers(0, len(fps)))])
        for bit in rng.choice(64, size=q // 2 % 4, replace=False).tolist():
            fp ^= 1 << bit
        out.append(fp)
    return out


def timed(fn: Callable[[int], object], queries: list[int]) -> tuple[list[float], int]:
    for q in queries[:50]:  # warm-up: page cache, allocator
        fn(q)
    seconds, found = [], 0
    for q in queries:
        started = time.perf_counter()
        result = fn(q)
        seconds.append(time.perf_counter() - started)
        found += len(result)  # type: ignore[arg-type]
    return seconds, found


def row(label: str, seconds: list[float], found: int) -> str:
    p50, p95, p99 = np.percentile(np.array(seconds) * 1e3, [50, 95, 99])
    return f"| {label} | {p50:.3f} | {p95:.3f} | {p99:.3f} | {found} |"


def tables_alone(n: int, queries: int, directory: Path) -> list[str]:
    fps = np.random.default_rng(1).integers(0, 2**64, size=n, dtype=np.uint64)
    started = time.perf_counter()
    tables = PermutedTables(4, 3, directory / "tables", tag="bench")
    tables.merge(np.arange(1, n + 1, dtype=np.int64), fps)
    build = time.perf_counter() - started
    tables.close()
    size = sum(f.stat().st_size for f in (directory / "tables").glob("*.npy"))
    started = time.perf_counter()
    tables = PermutedTables(4, 3, directory / "tables", tag="bench")
    opened = time.perf_counter() - started
    mix = query_mix(fps, queries, 2)
    seconds, found = timed(tables.near, mix)
    hits = [s for s, q in zip(seconds, range(len(mix)), strict=True) if q % 2 == 0]
    misses = [s for s, q in zip(seconds, range(len(mix)), strict=True) if q % 2]
    return [
        f"{n:,} fingerprints, 4 tables (b=4, k=3: 16-bit prefixes): build {build:.1f} s, "
        f"files {size / 2**20:.0f} MiB = {size / n:.1f} bytes per fingerprint "
        f"(tables alone {tables.nbytes() / n:.1f}), reopen {opened * 1e3:.1f} ms",
        "",
        "| `PermutedTables.near` (k = 3) | p50 ms | p95 ms | p99 ms | rows found |",
        "|---|---|---|---|---|",
        row("all queries", seconds, found),
        row("near-neighbours (0-3 bits)", hits, found),
        row("random misses", misses, 0),
    ]


def documents(fps: np.ndarray) -> Iterator[tuple[str, str, str]]:
    for n, fp in enumerate(fps.tolist()):
        doc_id = f"doc-{n}"
        keys = {"simhash": block_keys(fp)}
        yield doc_id, json.dumps({"simhash": f"{fp:016x}"}), json.dumps({"cluster": doc_id,
                                                                          "_keys": keys})


def sqlite_compare(m: int, queries: int, directory: Path) -> list[str]:
    """The same documents in two SQLite files: simhash_rows + tables, and band rows."""
    fps = np.random.default_rng(3).integers(0, 2**64, size=m, dtype=np.uint64)
    params = Fingerprinter(NearDupConfig(methods=("simhash",))).params()
    lines = []
    results = {}
    for layout in ("tables", "keys"):
        path = directory / f"{layout}.sqlite"
        SqliteIndex(path).close()  # the schema
        db = sqlite3.connect(path)
        started = time.perf_counter()
        docs = documents(fps)
        while chunk := [d for _, d in zip(range(CHUNK), docs, strict=False)]:
            db.executemany("INSERT INTO docs VALUES (?, ?, ?)", chunk)
            if layout == "keys":
                db.executemany("INSERT INTO doc_numbers (doc_id) VALUES (?)", (
                    (doc_id,) for doc_id, _, _ in chunk
                ))
                db.executemany(
                    "INSERT INTO bands SELECT ?, n FROM doc_numbers WHERE doc_id = ?", (
                        (band_key("simhash", key), doc_id) for doc_id, sig, _ in chunk
                        for key in block_keys(int(json.loads(sig)["simhash"], 16))
                    ),
                )
                db.executemany("INSERT INTO simhash_keyed VALUES (?)", ((d,) for d, _, _ in chunk))
            else:
                db.executemany("INSERT INTO simhash_rows (doc_id, fp) VALUES (?, ?)", (
                    (doc_id, int(np.uint64(int(json.loads(sig)["simhash"], 16)).view(np.int64)))
                    for doc_id, sig, _ in chunk
                ))
            db.commit()
        if layout == "tables":  # the parameters name the simhash layout: the tables take over
            db.execute("INSERT INTO params VALUES ('fingerprint', ?)", (json.dumps(params),))
            db.commit()
        db.close()
        load = time.perf_counter() - started
        started = time.perf_counter()
        index = SqliteIndex(path)  # "tables": rebuilt from simhash_rows here, once
        opened = time.perf_counter() - started
        size = path.stat().st_size + sum(
            f.stat().st_size for f in path.with_name(path.name + ".simhash").glob("*.npy")
        )
        mix = query_mix(fps, queries, 4)
        seconds, found = timed(
            lambda q, index=index: index.candidates({"simhash": block_keys(q)}), mix
        )
        index.close()
        results[layout] = (seconds, found, load, opened, size)
    lines += [
        f"{m:,} documents in SQLite (bulk SQL insert; first open builds the tables):",
        "",
        "| `SqliteIndex.candidates` | p50 ms | p95 ms | p99 ms | ids returned |",
        "|---|---|---|---|---|",
        row("permuted tables (ids within k)", *results["tables"][:2]),
        row("band rows (ids sharing a key)", *results["keys"][:2]),
        "",
    ]
    for layout, (_, _, load, opened, size) in results.items():
        lines.append(f"- {layout}: SQL load {load:.0f} s, open {opened:.1f} s, "
                     f"database + tables {size / 2**20:.0f} MiB ({size / m:.0f} bytes per doc)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=10_000_000, help="fingerprints in the tables")
    parser.add_argument("-m", type=int, default=1_000_000, help="documents in the SQLite run")
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--dir", type=Path, help="working folder (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        lines = tables_alone(args.n, args.queries, Path(tmp))
        lines += ["", *sqlite_compare(args.m, args.queries, Path(tmp))] if args.m else []
    print(f"{measured_at()}; numpy {np.__version__}, SQLite {sqlite3.sqlite_version}\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
