"""OrderedChild: calls run in one real spawned child, in order; a death fails what was in flight."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from neardup_pipeline.parallel.child import OrderedChild


def _append(path: str, value: int) -> int:
    with open(path, "a", encoding="utf-8") as out:
        out.write(f"{value}\n")
    return value * 2


def _fail(message: str) -> None:
    raise ValueError(message)


def _die(code: int) -> None:
    os._exit(code)


def _size(data: bytes) -> int:
    return len(data)


@pytest.fixture
def child() -> Iterator[OrderedChild]:
    executor = OrderedChild()
    yield executor
    executor.shutdown(wait=False, cancel_futures=True)


def test_calls_run_in_the_child_in_submission_order(child: OrderedChild, tmp_path: Path) -> None:
    log = str(tmp_path / "order.txt")
    futures = [child.submit(_append, log, i) for i in range(200)]
    assert [f.result(timeout=30) for f in futures] == [2 * i for i in range(200)]
    assert (tmp_path / "order.txt").read_text().split() == [str(i) for i in range(200)]
    assert child.submit(os.getpid).result(timeout=30) == child.pid != os.getpid()


def test_submits_from_many_threads_all_complete(child: OrderedChild) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def work(base: int) -> None:
        got = [child.submit(abs, -(base + i)).result(timeout=30) for i in range(50)]
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=work, args=(1000 * t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == sorted(1000 * t + i for t in range(4) for i in range(50))


def test_an_exception_reaches_its_caller_and_the_child_goes_on(child: OrderedChild) -> None:
    with pytest.raises(ValueError, match="bad page"):
        child.submit(_fail, "bad page").result(timeout=30)
    assert child.submit(abs, -3).result(timeout=30) == 3


def test_an_unpicklable_argument_fails_its_own_call_only(child: OrderedChild) -> None:
    refused = child.submit(abs, threading.Lock())  # locks cannot be pickled
    after = child.submit(abs, -4)
    with pytest.raises(TypeError):
        refused.result(timeout=30)
    assert after.result(timeout=30) == 4


def test_a_dead_child_fails_every_call_in_flight_and_refuses_new_ones(
    child: OrderedChild,
) -> None:
    before = child.submit(abs, -1)
    dying = child.submit(_die, 3)
    queued = [child.submit(abs, -i) for i in range(5)]
    assert before.result(timeout=30) == 1
    for future in (dying, *queued):
        with pytest.raises(BrokenProcessPool):
            future.result(timeout=30)
    with pytest.raises(BrokenProcessPool):
        child.submit(abs, -1)


def test_shutdown_waits_for_the_calls_already_queued(tmp_path: Path) -> None:
    executor = OrderedChild()
    log = str(tmp_path / "late.txt")
    futures = [executor.submit(_append, log, i) for i in range(20)]
    executor.shutdown(wait=True)
    assert all(f.done() for f in futures)
    assert (tmp_path / "late.txt").read_text().split() == [str(i) for i in range(20)]
    with pytest.raises(BrokenProcessPool):
        executor.submit(abs, 1)


def test_a_busy_child_never_blocks_the_caller(child: OrderedChild) -> None:
    """The pipe holds 64 KB: 40 MB submitted while the child sleeps wait in the backlog, and
    are written in order once it reads again."""
    child.submit(time.sleep, 2.0)
    started = time.monotonic()
    payloads = [bytes([i]) * 1_000_000 for i in range(40)]
    futures = [child.submit(_size, payload) for payload in payloads]
    assert time.monotonic() - started < 1.5  # submitted while the child still sleeps
    assert [f.result(timeout=60) for f in futures] == [1_000_000] * 40
    assert child.submit(abs, -7).result(timeout=30) == 7
