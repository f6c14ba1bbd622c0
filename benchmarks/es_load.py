"""Fill Elasticsearch with synthetic simhash fingerprints and time candidate lookups.

Loads N random 64-bit fingerprints (default 1,000,000) into a fresh fingerprint index made by
neardup's own mapping, in bulk chunks with a progress bar, then times `ElasticIndex.candidates`
(one `terms` search per document) against `candidates_many` (one msearch per batch) on the same
query mix: half near-neighbours of stored fingerprints (distance 0-3, found), half random
fingerprints (misses). Prints p50/p95/p99. The index is deleted at the end unless --keep.

Usage: python benchmarks/es_load.py --es-url http://127.0.0.1:9200 [-n 1000000] [--batch 100]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from elasticsearch import ApiError, Elasticsearch, helpers
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.provenance import measured_at
from neardup_pipeline.index.elastic.store import ElasticIndex
from neardup_pipeline.methods.simhash import block_keys

Keys = Mapping[str, Sequence[str]]


def fingerprints(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)


def actions(index: str, fps: np.ndarray) -> Iterator[dict[str, Any]]:
    """Documents as ElasticIndex.add writes them (same fields, same mapping)."""
    for n, fp in enumerate(fps.tolist()):
        doc_id = f"bench-{n}"
        yield {
            "_index": index,
            "_id": doc_id,
            "_source": {
                "doc_id": doc_id,
                "key_methods": ["simhash"],
                "signatures": {"simhash": f"{fp:016x}"},
                "meta": {"cluster": doc_id},
                "simhash_keys": block_keys(fp),
                "cluster": doc_id,
            },
        }


def load(client: Elasticsearch, index: str, fps: np.ndarray, chunk: int) -> float:
    """Bulk-load with refresh off (the usual bulk-load setting), then refresh once."""
    client.indices.put_settings(index=index, settings={"refresh_interval": "-1"})
    started = time.perf_counter()
    with tqdm(total=len(fps), unit=" docs", desc="bulk load", file=sys.stderr) as bar:
        for ok, info in helpers.parallel_bulk(  # two requests in flight: the server never idles
            client, actions(index, fps), thread_count=2, chunk_size=chunk, raise_on_error=True,
        ):
            if not ok:
                raise RuntimeError(f"bulk refused: {info}")
            bar.update(1)
    client.indices.put_settings(index=index, settings={"refresh_interval": None})
    client.indices.refresh(index=index)
    return time.perf_counter() - started


def queries(fps: np.ndarray, n: int, seed: int) -> list[Keys]:
    """Half near-neighbours (0-3 bits flipped) of stored fingerprints, half random misses."""
    rng = np.random.default_rng(seed)
    out: list[Keys] = []
    for q in range(n):
        if q % 2:
            fp = int(rng.integers(0, 2**64, dtype=np.uint64))
        else:
            fp = int(fps[int(rng.integers(0, len(fps)))])
            for bit in rng.choice(64, size=q // 2 % 4, replace=False).tolist():
                fp ^= 1 << bit
        out.append({"simhash": block_keys(fp)})
    return out


def percentiles(seconds: list[float]) -> tuple[float, float, float]:
    p50, p95, p99 = np.percentile(np.array(seconds) * 1000.0, [50, 95, 99])
    return float(p50), float(p95), float(p99)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--es-url", default=os.environ.get("NEARDUP_TEST_ES_URL",
                                                           "http://127.0.0.1:9200"))
    parser.add_argument("-n", type=int, default=1_000_000, help="fingerprints to load")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--batch", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--chunk", type=int, default=5000, help="documents per bulk request")
    parser.add_argument("--index", help="existing index to reuse (skips the load)")
    parser.add_argument("--keep", action="store_true", help="keep the index afterwards")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    name = args.index or f"neardup-bench-{uuid.uuid4().hex[:8]}"
    client = Elasticsearch(args.es_url, request_timeout=120)
    try:
        server = str(client.info()["version"]["number"])
    except ApiError:  # a proxy in front of the server may refuse GET /
        server = "(version not reported)"
    index = ElasticIndex(client, fingerprint_index=name)  # creates it with neardup's mapping
    fps = fingerprints(args.n, args.seed)
    try:
        load_s = 0.0 if args.index else load(client, name, fps, args.chunk)
        stored = index.count()
        stats = client.indices.stats(index=name, metric=["store", "segments"])["_all"]["primaries"]
        asked = queries(fps, args.queries, args.seed + 1)
        found = 0
        for keys in asked[:50]:  # warm-up: caches, JIT, connection pool
            index.candidates(keys)
        single = []
        for keys in asked:
            started = time.perf_counter()
            found += len(index.candidates(keys))
            single.append(time.perf_counter() - started)
        rows = [("single `search`", 1, *percentiles(single), float(np.median(single)) * 1000)]
        for size in args.batch:
            batches = []
            for start in range(0, len(asked), size):
                chunk = asked[start : start + size]
                started = time.perf_counter()
                index.candidates_many(chunk)
                batches.append(time.perf_counter() - started)
            p50, p95, p99 = percentiles(batches)
            rows.append((f"`msearch` x{size}", size, p50, p95, p99, p50 / size))
    finally:
        if not args.keep and not args.index:
            client.options(ignore_status=404).indices.delete(index=name)
        index.close()

    print(f"\n{measured_at()}; Elasticsearch {server}")
    print(f"index {name}: {stored:,} fingerprints, {stats['store']['size_in_bytes'] / 2**20:.0f} "
          f"MiB, {stats['segments']['count']} segments; load {load_s:.0f} s "
          f"({args.n / load_s if load_s else 0:,.0f} docs/s)")
    print(f"{len(asked)} lookups (half near-neighbours, half misses), {found} candidates found\n")
    print("| lookup | docs per request | p50 ms | p95 ms | p99 ms | per doc at p50, ms |")
    print("|---|---|---|---|---|---|")
    for label, size, p50, p95, p99, per_doc in rows:
        print(f"| {label} | {size} | {p50:.2f} | {p95:.2f} | {p99:.2f} | {per_doc:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
