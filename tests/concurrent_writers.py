"""Twin pages checked at the same instant by several processes sharing one Elasticsearch index.

Processes go in partners (0 and 1, 2 and 3, ...): in each round every process checks `batch`
pages, one twin of each pair going to each partner, and a barrier releases every process of the
round at once, so the twins are checked as nearly simultaneously as two processes can. A pair is
caught when its two pages end in one cluster (one the original, the other a member). Used by
tests/test_concurrent_writers.py and benchmarks/concurrent_crawlers.py.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from typing import Any

from elasticsearch import Elasticsearch

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.index.elastic.store import ElasticIndex
from neardup_pipeline.verdict.deduplicator import Deduplicator

Twin = tuple[str, bytes]  # doc id, html
Pair = tuple[Twin, Twin]


@dataclass(frozen=True)
class Outcome:
    pairs: int
    missed: int
    pages: int
    seconds: float  # wall time of the whole run, barrier to last close
    check_seconds: float  # summed over processes: time in process/process_batch and close


def rounds_of(pairs: Sequence[Pair], processes: int, batch: int) -> list[list[list[Twin]]]:
    """Per process, its pages per round: partner processes get the two twins of one pair at
    the same position of the same round."""
    if processes < 2 or processes % 2:
        raise ValueError("an even number of processes, at least 2")
    per_round = processes // 2 * batch
    plan: list[list[list[Twin]]] = [[] for _ in range(processes)]
    for start in range(0, len(pairs), per_round):
        chunk = pairs[start:start + per_round]
        for p in range(processes):
            mine = chunk[(p // 2) * batch:(p // 2 + 1) * batch]
            plan[p].append([pair[p % 2] for pair in mine])
    return plan


def _writer(es_url: str, index: str, rounds: list[list[Twin]], batch: int, ordered: bool,
            barrier: Barrier, results: Any) -> None:
    config = NearDupConfig(backend=es_url).replace(fingerprint_index=index)
    client = Elasticsearch(es_url, request_timeout=30)
    store = ElasticIndex(client, fingerprint_index=index, ordered=ordered)
    dedup = Deduplicator(store, config)
    clusters: dict[str, str] = {}
    spent = 0.0
    for pages in rounds:
        docs = [Document(doc_id, html=html) for doc_id, html in pages]
        barrier.wait()
        started = time.perf_counter()
        verdicts = dedup.process_batch(docs) if batch > 1 else [dedup.process(d) for d in docs]
        spent += time.perf_counter() - started
        clusters.update({v.doc_id: v.cluster or v.doc_id for v in verdicts})
    started = time.perf_counter()
    store.close()
    spent += time.perf_counter() - started
    results.put((clusters, spent))


def run_writers(es_url: str, pairs: Sequence[Pair], processes: int, batch: int = 1,
                ordered: bool = True, index: str = "neardup-concurrent") -> Outcome:
    """Every pair checked by two partner processes at once; the index deleted afterwards."""
    context = multiprocessing.get_context("fork")
    plan = rounds_of(pairs, processes, batch)
    barrier = context.Barrier(processes)
    results = context.Queue()
    workers = [context.Process(target=_writer, args=(es_url, index, plan[p], batch, ordered,
                                                     barrier, results))
               for p in range(processes)]
    started = time.perf_counter()
    try:
        for worker in workers:
            worker.start()
        clusters: dict[str, str] = {}
        check = 0.0
        for _ in workers:
            found, spent = results.get(timeout=600)
            clusters.update(found)
            check += spent
        seconds = time.perf_counter() - started
        for worker in workers:
            worker.join(timeout=60)
            if worker.exitcode != 0:
                raise RuntimeError(f"a writer process failed (exit code {worker.exitcode})")
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
        with Elasticsearch(es_url) as client:
            client.options(ignore_status=404).indices.delete(
                index=f"{index},{index}-writelog,{index}-clusters", allow_no_indices=True)
    missed = sum(clusters[a[0]] != clusters[b[0]] for a, b in pairs)
    return Outcome(len(pairs), missed, 2 * len(pairs), seconds, check)


def twins_of(pages: Sequence[tuple[str, bytes, str]], config: NearDupConfig) -> list[Pair]:
    """Pairs (two pages of one group) that the configured methods call near-duplicates when
    one is checked after the other: the pairs a concurrent run must catch."""
    from neardup_pipeline.index.memory import MemoryIndex

    groups: dict[str, list[tuple[str, bytes]]] = {}
    for doc_id, html, group in pages:
        groups.setdefault(group, []).append((doc_id, html))
    pairs: list[Pair] = []
    for members in groups.values():
        if len(members) != 2:
            continue
        dedup = Deduplicator(MemoryIndex(), config)
        dedup.process(Document(members[0][0], html=members[0][1]))
        if dedup.process(Document(members[1][0], html=members[1][1])).is_duplicate:
            pairs.append((members[0], members[1]))
    return pairs
