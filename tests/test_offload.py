"""Fingerprinting in a child process: the same fingerprints, and a dead child is replaced."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import Document, NearDupConfig
from neardup_pipeline.errors import FingerprintCrash
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.parallel.child import OrderedChild, batched
from neardup_pipeline.parallel.offload import (
    CheckProcess,
    FingerprintWorkers,
    can_check_in_child,
    can_offload,
)
from neardup_pipeline.scrapy.check.base import Checked
from neardup_pipeline.scrapy.check.session import IndexSession
from neardup_pipeline.verdict.deduplicator import Deduplicator
from tests.cli_runner import dedup_outputs, neardup
from tests.crawl_harness import crawl, crawl_settings
from tests.crawl_outcomes import assert_drop_outcome
from tests.documents import ARTICLE, corpus_with_copies
from tests.verdicts import outcome

CONFIG = NearDupConfig()  # auto: simhash + bag


@pytest.fixture(scope="module")
def workers() -> Iterator[FingerprintWorkers]:
    pool = FingerprintWorkers(CONFIG, processes=1)
    pool.warm_up()
    yield pool
    pool.close()


def same(a: Any, b: Any) -> bool:
    if hasattr(a, "__dataclass_fields__"):
        return all(same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def test_child_fingerprints_equal_the_parents(workers: FingerprintWorkers) -> None:
    local = Fingerprinter(CONFIG)
    docs = [
        Document("a", html=f"<html><title>T</title><body><p>{ARTICLE}</p></body></html>"),
        Document("b", html=ARTICLE.encode("utf-8")),
        Document("c", text="too short"),
        Document("d", html=b"\xff\xfe<p>\x00broken</b></i>"),
    ]
    for doc in docs:
        remote = workers.fingerprint(doc)
        assert same(remote, local.fingerprint(doc)), doc.doc_id


class _KillsTheChild:
    """Unpickling this in the child ends the child process at once, as a libxml2 crash would."""

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (os._exit, (3,))


def test_a_dead_child_is_reported_and_replaced(workers: FingerprintWorkers) -> None:
    with pytest.raises(FingerprintCrash, match="poison"):
        workers.fingerprint(Document("poison", html=_KillsTheChild()))  # type: ignore[arg-type]
    fp = workers.fingerprint(Document("after", text=ARTICLE))
    assert fp.status == "ok" and fp.doc_id == "after"


def test_only_self_contained_methods_leave_the_process() -> None:
    assert can_offload(NearDupConfig(methods=("simhash", "minhash", "bag")))
    assert not can_offload(NearDupConfig(methods=("simhash", "rarewords")))
    with pytest.raises(ValueError, match="need the index"):
        FingerprintWorkers(NearDupConfig(methods=("anchors",)))


@deferred_f_from_coro_f
async def test_crawl_outcome_is_the_same_with_and_without_the_child(
    site: str, tmp_path: Path
) -> None:
    outcomes = []
    for processes in (0, 1):
        settings = crawl_settings(
            f"sqlite:{tmp_path / f'fp{processes}.sqlite'}", NEARDUP_FINGERPRINT_PROCESSES=processes
        )
        result = await crawl(site, settings)
        assert_drop_outcome(result)
        outcomes.append({path: exc.verdict for path, exc in result.dropped.items()})  # type: ignore[attr-defined]
    in_thread, in_child = outcomes
    assert {p: (v.duplicate_of, v.similarity) for p, v in in_thread.items()} == {
        p: (v.duplicate_of, v.similarity) for p, v in in_child.items()
    }


def test_dedup_with_child_processes_keeps_the_output(tmp_path: Path) -> None:
    source, (here, children) = dedup_outputs(
        tmp_path, ["--batch", "16", "--processes", "0"], ["--batch", "16", "--processes", "2"]
    )
    assert here == children
    refused = neardup("dedup", str(source), "--processes", "1", "--method", "rarewords")
    assert refused.returncode == 2 and "without the index" in refused.stderr


def test_check_process_gives_the_in_process_verdicts_and_survives_a_crash(
    tmp_path: Path,
) -> None:
    docs = corpus_with_copies(seed=4)
    config = NearDupConfig(backend=f"sqlite:{tmp_path / 'child.sqlite'}")
    assert can_check_in_child(config)
    assert can_check_in_child(config.replace(backend="http://127.0.0.1:9200"))
    assert can_check_in_child(config.replace(backend="http://127.0.0.1:9200", pages_index="p"))
    assert not can_check_in_child(config.replace(backend="http://127.0.0.1:9200",
                                                 methods=("rarewords",)))
    assert not can_check_in_child(config.replace(pages_index="neardup-pages"))
    local = Deduplicator(MemoryIndex(), config)
    checker = CheckProcess(config)
    try:
        assert checker.open() == 0
        queued = [checker.submit(doc) for doc in docs]  # all queued at once, checked in order
        remote = [checker.result(doc, pending) for doc, pending in zip(docs, queued, strict=True)]
        assert outcome(remote) == outcome([local.process(doc) for doc in docs])
        with pytest.raises(FingerprintCrash, match="poison"):
            checker.result(Document("poison", html=_KillsTheChild()), None)  # type: ignore[arg-type]
        after = checker.result(Document(docs[0].doc_id + "-again", text=docs[0].text), None)
        assert after.status == "ok"  # restarted on the same file
    finally:
        checker.close()


def test_ctrl_c_leaves_the_check_process_to_the_crawler(tmp_path: Path) -> None:
    """SIGINT reaches the whole process group; the child must keep going so that the crawler's
    own shutdown closes the index with its last writes committed."""
    config = NearDupConfig(backend=f"sqlite:{tmp_path / 'fp.sqlite'}")
    checker = CheckProcess(config)
    try:
        checker.open()
        docs = corpus_with_copies(seed=6)[:12]
        for doc in docs:
            checker.result(doc, checker.submit(doc))
        child = checker.pid
        assert child is not None
        os.kill(child, signal.SIGINT)
        late = Document("late", text=docs[0].text)
        assert checker.result(late, checker.submit(late)).duplicate_of == docs[0].doc_id
    finally:
        checker.close()
    reopened = CheckProcess(config)
    try:
        assert reopened.open() >= 1  # committed at close, not lost
    finally:
        reopened.close()


def test_pages_queued_behind_a_poison_page_are_checked_again(tmp_path: Path) -> None:
    """A dying child fails the whole queue behind it; only the page that kills it twice is an
    error, the others get their verdicts from the restarted child."""
    checker = CheckProcess(NearDupConfig(backend=f"sqlite:{tmp_path / 'fp.sqlite'}"))
    workers = FingerprintWorkers(CONFIG, processes=1)
    try:
        checker.open()
        docs = corpus_with_copies(seed=8)[:6]
        poison = Document("poison", html=_KillsTheChild())  # type: ignore[arg-type]
        queue = [*docs[:2], poison, *docs[2:]]
        queued = [checker.submit(doc) for doc in queue]
        verdicts = []
        for doc, pending in zip(queue, queued, strict=True):
            if doc is poison:
                with pytest.raises(FingerprintCrash, match="poison"):
                    checker.result(doc, pending)
            else:
                verdicts.append(checker.result(doc, pending))
        assert [v.doc_id for v in verdicts] == [d.doc_id for d in docs]
        assert all(v.status == "ok" for v in verdicts)
        started = [workers.submit(doc) for doc in queue]
        for doc, pending in zip(queue, started, strict=True):
            if doc is poison:
                with pytest.raises(FingerprintCrash, match="poison"):
                    workers.result(doc, pending)
            else:
                assert workers.result(doc, pending).doc_id == doc.doc_id
    finally:
        checker.close()
        workers.close()


def test_a_poison_page_stops_only_itself_in_a_batch_on_elasticsearch(
    workers: FingerprintWorkers, es_url: str, es_index_names: dict[str, str]
) -> None:
    """Pages waiting together are checked as one batch (one msearch); the one that kills its
    fingerprint process twice gets its error, and the pages before and after it get the
    verdicts of checking them one at a time without it."""
    config = NearDupConfig(backend=es_url).replace(**es_index_names)
    docs = corpus_with_copies(seed=3)[:40]
    poison = Document("poison", html=_KillsTheChild())  # type: ignore[arg-type]
    pages = [*docs[:15], poison, *docs[15:]]
    session = IndexSession(config, workers)
    session.open()
    try:
        outcomes = session.check_many([(doc, workers.submit(doc)) for doc in pages])
    finally:
        session.close()
    assert isinstance(outcomes[15], FingerprintCrash), outcomes[15]
    checked = [o for n, o in enumerate(outcomes) if n != 15]
    assert all(isinstance(o, Checked) for o in checked)
    alone = Deduplicator(MemoryIndex(), config.replace(backend="memory"))
    assert outcome(o.verdict for o in checked if isinstance(o, Checked)) == outcome(
        alone.process(doc) for doc in docs)
    assert session.counts["batch/pages"] >= 2 * session.counts["batch/lookups"] >= 4


def _batch_sizes(calls: list[tuple[Any, ...]]) -> list[tuple[int, int]]:
    time.sleep(0.2)  # the calls after these wait in the pipe meanwhile
    return [(args[0], len(calls)) for args in calls]


@batched(_batch_sizes, limit=50)
def _sized(n: int) -> tuple[int, int]:
    return _batch_sizes([(n,)])[0]


def test_ordered_child_runs_the_waiting_calls_of_a_batched_function_together() -> None:
    """The Elasticsearch check's batches in the check process: what waits runs as one call,
    at most `limit`, in submission order; another function's call waits its turn."""
    child = OrderedChild()
    try:
        futures = [child.submit(_sized, n) for n in range(120)]
        pid = child.submit(os.getpid)
        after = child.submit(_sized, 120)
        results = [future.result(60) for future in futures]
        assert pid.result(60) == child.pid
        assert after.result(60) == (120, 1)
    finally:
        child.shutdown()
    assert [n for n, _ in results] == list(range(120))
    sizes = [size for _, size in results]
    assert 1 < max(sizes) <= 50  # batched, never past the limit
