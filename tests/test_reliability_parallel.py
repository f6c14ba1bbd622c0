"""Two real crawler processes writing one Elasticsearch index at the same time.

Each near-duplicate pair (a_i, b_i) is split: process 1 crawls a_0..a_n in order, process 2 crawls
b_n..b_0 (reversed), so the two meet in the middle and pairs there are checked almost at once.
A page's fingerprint is searchable by the other process only once its bulk batch is flushed and
refreshed (every NEARDUP_ES_BULK_SIZE pages); the write log (index/elastic/writelog.py) orders
the two writers, so every pair is still caught live, whatever the bulk size.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.index import open_index
from neardup_pipeline.verdict.deduplicator import Deduplicator
from tests.crawl_harness import serve_pages
from tests.documents import random_vocabulary
from tests.es_indices import SIDE_INDICES

PAIRS = 40
PAGE_DELAY = 0.03  # seconds per response: both crawls last long enough to overlap
ROOT = Path(__file__).resolve().parents[1]


def _pages() -> dict[str, str]:
    rng = random.Random(2)
    vocab = random_vocabulary(rng, 4000, shortest=4)
    pages: dict[str, str] = {}
    for i in range(PAIRS):
        words = [rng.choice(vocab) for _ in range(200)]
        pages[f"/a{i}"] = " ".join(words)
        words[100] = "edited"
        pages[f"/b{i}"] = " ".join(words)
    html = {p: f"<html><head><title>{p}</title></head><body><p>{t}</p></body></html>"
            for p, t in pages.items()}
    for start, paths in (("/start1", [f"/a{i}" for i in range(PAIRS)]),
                         ("/start2", [f"/b{i}" for i in reversed(range(PAIRS))])):
        links = "".join(f'<a href="{p}">{p}</a> ' for p in paths)
        html[start] = f"<html><body><p>start {start} {uuid.uuid4().hex}</p>{links}</body></html>"
    return html


PAGES = _pages()


@pytest.fixture(scope="module")
def pair_site() -> Iterator[str]:
    pages = {path: ("text/html; charset=utf-8", body.encode()) for path, body in PAGES.items()}
    with serve_pages(pages, delay=PAGE_DELAY) as base:
        yield base


def run_pair(base: str, es_url: str, index: str, bulk: int, tmp: Path) -> list[dict[str, Any]]:
    """Both crawls at once, in two processes; their items, with the time each came out."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = []
    for n in (1, 2):
        out = tmp / f"crawl{n}-{bulk}.jsonl"
        cmd = [sys.executable, "-m", "tests.parallel_crawl", f"{base}/start{n}", es_url, index,
               str(bulk), str(out)]
        procs.append((subprocess.Popen(cmd, cwd=ROOT, env=env), out))
    items: list[dict[str, Any]] = []
    for proc, out in procs:
        assert proc.wait(timeout=120) == 0
        items += [json.loads(line) for line in out.read_text().splitlines() if line]
    return items


def outcome(base: str, items: list[dict[str, Any]]) -> tuple[int, list[float]]:
    """(pairs caught live, time gaps of the missed pairs)."""
    by_path = {i["url"][len(base):]: i for i in items}
    assert len(by_path) == len(items) == 2 * PAIRS + 2  # each page once: none lost, none doubled
    assert {i["status"] for i in items} == {"checked"}
    caught, gaps = 0, []
    for k in range(PAIRS):
        a, b = by_path[f"/a{k}"], by_path[f"/b{k}"]
        if a["of"] == base + f"/b{k}" or b["of"] == base + f"/a{k}":
            caught += 1
        else:
            gaps.append(abs(a["t"] - b["t"]))
    return caught, gaps


@pytest.mark.parametrize("bulk", [1, 20])
def test_two_crawler_processes_share_one_index(
    pair_site: str, es_url: str, tmp_path: Path, bulk: int
) -> None:
    index = f"neardup-parallel-{uuid.uuid4().hex[:10]}"
    try:
        started = time.monotonic()
        items = run_pair(pair_site, es_url, index, bulk, tmp_path)
        seconds = time.monotonic() - started
        caught, gaps = outcome(pair_site, items)
        # Both writes visible now: every pair is caught by a lookup.
        config = NearDupConfig(backend=es_url).replace(fingerprint_index=index)
        idx = open_index(es_url, config)
        try:
            dedup = Deduplicator(idx, config)

            def found(page: str, other: str) -> bool:
                verdict = dedup.check(Document(pair_site + page, html=PAGES[page]))[0]
                return verdict.duplicate_of == pair_site + other

            # Either way round: a page is never reported as a duplicate of its own copies.
            late = sum(found(f"/b{k}", f"/a{k}") or found(f"/a{k}", f"/b{k}")
                       for k in range(PAIRS))
        finally:
            idx.close()
        print(f"\n[parallel bulk={bulk}] {seconds:.1f} s, caught live {caught}/{PAIRS}, missed "
              f"{PAIRS - caught} (gaps {[round(g, 2) for g in sorted(gaps)]}), after both "
              f"writes visible {late}/{PAIRS}")
        assert late == PAIRS
        assert caught == PAIRS, gaps
    finally:
        client = Elasticsearch(es_url, request_timeout=30)
        client.options(ignore_status=404).indices.delete(
            index=",".join([index, *(f"{index}-{side}" for side in SIDE_INDICES)]),
            allow_no_indices=True)
        client.close()
