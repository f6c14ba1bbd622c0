"""Candidates per lookup, stored bytes per document and docs/s, per method, on ../shared/data.

Stored bytes: the JSON of the encoded signatures plus the lookup keys (what every backend keeps),
and for rarewords also its DF words (8 bytes per distinct word; SQLite blob, ES keyword array).
rarewords runs in batch mode (DF pass first) unless --stream. Usage:
python benchmarks/rarewords_stats.py [--methods rarewords simhash minhash] [--stream]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import installation_guide_pages, postgresql_pages
from benchmarks.provenance import measured_at
from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.index import MemoryIndex


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--methods", nargs="+", default=["rarewords", "simhash", "minhash"])
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    corpora = {
        "postgresql": postgresql_pages(),
        "guide-en": [p for p in installation_guide_pages() if p.info["lang"] == "en"],
    }
    print(f"{measured_at()}\n")
    print("| corpus | method | docs/s | candidates/lookup mean | p50 | p99 | max "
          "| stored bytes/doc (signature+keys) | DF words bytes/doc |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, pages in corpora.items():
        for method in args.methods:
            index = MemoryIndex()
            dedup = Deduplicator(index, NearDupConfig(methods=(method,), backend="memory"))
            start = time.perf_counter()
            if method == "rarewords" and not args.stream:
                for p in pages:
                    dedup.learn(Document(p.doc_id, html=p.html))
            cands = [dedup.process(Document(p.doc_id, html=p.html)).candidates for p in pages]
            rate = len(pages) / (time.perf_counter() - start)
            entries = index.get([p.doc_id for p in pages]).values()
            stored = [len(json.dumps(e.signatures)) + len(json.dumps(e.keys)) for e in entries]
            df_bytes = [8 * len(w) for w in index._doc_words.values()] or [0]
            c = np.array(cands)
            print(f"| {name} | {method} | {rate:.0f} | {c.mean():.1f} | {np.median(c):.0f} "
                  f"| {np.quantile(c, 0.99):.0f} | {c.max()} | {np.mean(stored):.0f} "
                  f"| {np.mean(df_bytes):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
