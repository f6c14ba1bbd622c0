"""One spawned child process that runs calls in submission order: a lean executor.

ProcessPoolExecutor costs the submitting process about 300 us of CPU per call (a manager thread,
its queues and wake-ups), which a crawler pays on the core its reactor needs. Here a call is one
pickle on a sender thread and one pipe write; one reader thread resolves the futures: about 40 us.
One child and one pipe keep the calls in order, which the embedded index's read-after-write needs.

A child that dies fails every call in flight with BrokenProcessPool, as ProcessPoolExecutor does,
so callers keep one recovery rule for both.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import pickle
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from typing import Any, TypeVar, cast

logger = logging.getLogger(__name__)
T = TypeVar("T")

_STOP = b""  # asks the child to leave once the calls before it are done


class OrderedChild(Executor):
    """Runs `fn(*args)` in one spawned child, one call at a time, in submission order."""

    def __init__(self, initializer: Callable[[], None] | None = None) -> None:
        context = multiprocessing.get_context("spawn")  # no copy of the parent's threads
        ours, theirs = context.Pipe(duplex=True)
        self._process = context.Process(
            target=_serve, args=(theirs, initializer), name="neardup-child", daemon=True
        )
        self._process.start()
        theirs.close()  # the parent holds only its end: the child's death reads as EOF here
        self._conn: Connection = ours
        self._lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._next = 0
        self._broken: str | None = None
        self._outbox: queue.SimpleQueue[tuple[int, Callable[..., Any], tuple[Any, ...]] | None]
        self._outbox = queue.SimpleQueue()
        # A full pipe blocks a writer: the sender thread takes that wait, never the caller.
        self._sender = threading.Thread(target=self._send_loop, name="neardup-send", daemon=True)
        self._reader = threading.Thread(target=self._read_loop, name="neardup-read", daemon=True)
        self._sender.start()
        self._reader.start()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if kwargs:
            raise TypeError("OrderedChild.submit takes positional arguments only")
        future: Future[T] = Future()
        with self._lock:
            if self._broken is not None:
                raise BrokenProcessPool(self._broken)
            seq = self._next
            self._next += 1
            self._pending[seq] = future
        self._outbox.put((seq, fn, args))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:  # no new calls; those queued still run unless cancelled
            if self._broken is None:
                self._broken = "the child process was shut down"
        if cancel_futures:
            self._fail_all("shut down", cancel=True)
        self._outbox.put(None)
        if wait:
            self._sender.join()
            self._process.join()
            self._reader.join()
        elif cancel_futures:  # nothing left to wait for: a busy or hung child is stopped now
            self._process.kill()

    def _send_loop(self) -> None:
        while (call := self._outbox.get()) is not None:
            seq, fn, args = call
            try:
                payload = pickle.dumps((seq, fn, args), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an unpicklable argument fails its own call only
                self._resolve(seq, False, exc)
                continue
            try:
                self._conn.send_bytes(payload)
            except OSError:
                self._fail_all("the child process died")
                return
        with contextlib.suppress(OSError):
            self._conn.send_bytes(_STOP)

    def _read_loop(self) -> None:
        while True:
            try:
                seq, ok, value = pickle.loads(self._conn.recv_bytes())
            except (EOFError, OSError):
                break
            self._resolve(seq, ok, value)
        self._fail_all("the child process died")  # (a clean stop leaves nothing pending)
        self._conn.close()

    def _resolve(self, seq: int, ok: bool, value: Any) -> None:
        with self._lock:
            future = self._pending.pop(seq, None)
        if future is None or not future.set_running_or_notify_cancel():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(cast(BaseException, value))

    def _fail_all(self, why: str, cancel: bool = False) -> None:
        with self._lock:
            if self._broken is None:
                self._broken = why
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if cancel:
                future.cancel()
            elif future.set_running_or_notify_cancel():
                future.set_exception(BrokenProcessPool(why))


def _serve(conn: Connection, initializer: Callable[[], None] | None) -> None:
    """The child: run each call as it comes; reply (seq, ok, result or exception)."""
    if initializer is not None:
        initializer()
    while (data := conn.recv_bytes()) != _STOP:
        seq, fn, args = pickle.loads(data)
        try:
            reply = (seq, True, fn(*args))
        except BaseException as exc:  # the caller sees the call's own exception
            reply = (seq, False, exc)
        try:
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            payload = pickle.dumps((seq, False, RuntimeError(f"unpicklable result: {exc!r}")))
        conn.send_bytes(payload)
    conn.close()
