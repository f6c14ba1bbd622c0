"""One spawned child process that runs calls in submission order: a lean executor.

ProcessPoolExecutor costs the submitting process about 300 us of CPU per call (a manager thread,
its queues and wake-ups), which a crawler pays on the core its reactor needs. Here the caller
pickles the call and writes it to a non-blocking pipe itself; only what the pipe cannot take at
once (the child is behind) waits for a sender thread, so the caller never blocks. A reader thread
resolves the futures. A thread woken for every page would cost the reactor's core more than
the write itself.
One child and one pipe keep the calls in order, which the embedded index's read-after-write needs.

A child that dies fails every call in flight with BrokenProcessPool, as ProcessPoolExecutor does,
so callers keep one recovery rule for both.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import select
import struct
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from typing import Any, TypeVar, cast

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_STOP = b""  # asks the child to leave once the calls before it are done
# `batched` functions: how their waiting calls run together (filled as their modules import,
# in the child too, where a call's function is unpickled by importing its module)
_BATCHED: dict[Callable[..., Any], tuple[Callable[[list[tuple[Any, ...]]], list[Any]], int]] = {}


def _frame(payload: bytes) -> bytes:
    """multiprocessing.Connection's framing (4-byte big-endian length), so the child reads a
    message with recv_bytes."""
    return struct.pack("!i", len(payload)) + payload


class OrderedChild(Executor):
    """Runs `fn(*args)` in one spawned child, one call at a time, in submission order."""

    def __init__(self, initializer: Callable[[], None] | None = None) -> None:
        context = multiprocessing.get_context("spawn")  # no copy of the parent's threads
        calls_in, calls_out = context.Pipe(duplex=False)  # (reader, writer)
        replies_in, replies_out = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_serve, args=(calls_in, replies_out, initializer), name="neardup-child",
            daemon=True,
        )
        self._process.start()
        calls_in.close()  # the parent holds only its ends: the child's death reads as EOF here
        replies_out.close()
        self._calls: Connection = calls_out
        self._replies: Connection = replies_in
        self._fd = calls_out.fileno()
        os.set_blocking(self._fd, False)
        self._lock = threading.Lock()  # futures, sequence numbers, and the order of writes
        self._pending: dict[int, Future[Any]] = {}
        self._next = 0
        self._broken: str | None = None
        self._backlog: deque[bytes] = deque()  # bytes the pipe has not taken yet, in order
        self._stopping = False
        self._wake = threading.Condition(self._lock)
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
        try:
            payload = pickle.dumps((seq, fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable argument fails its own call only
            future.set_exception(exc)
            return future
        with self._lock:
            if self._broken is not None:
                raise BrokenProcessPool(self._broken)
            self._pending[seq] = future
            self._write(_frame(payload))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:  # no new calls; those queued still run unless cancelled
            if self._broken is None:
                self._broken = "the child process was shut down"
            if not self._stopping:
                self._stopping = True
                self._write(_frame(_STOP))
        if cancel_futures:
            self._fail_all("shut down", cancel=True)
        if wait:
            self._sender.join()
            self._process.join()
            self._reader.join()
            with contextlib.suppress(OSError):
                self._calls.close()
        elif cancel_futures:  # nothing left to wait for: a busy or hung child is stopped now
            self._process.kill()

    def _write(self, frame: bytes) -> None:
        """Write `frame` now if the pipe takes it; the rest goes to the sender thread. Lock held."""
        if not self._backlog:
            try:
                written = os.write(self._fd, frame)
            except BlockingIOError:
                written = 0
            except OSError:  # the child is gone: the reader fails the calls in flight
                return
            if written == len(frame):
                return
            frame = frame[written:]
        self._backlog.append(frame)
        self._wake.notify()

    def _send_loop(self) -> None:
        """Write what the pipe could not take at once, in order, waiting for room (not holding
        the lock while it waits)."""
        while True:
            with self._lock:
                while not self._backlog:
                    if self._stopping:  # the stop frame is written (or the child is gone)
                        return
                    self._wake.wait()
                chunk = self._backlog[0]
            try:
                select.select([], [self._fd], [], 1.0)
                written = os.write(self._fd, chunk)
            except BlockingIOError:
                continue
            except (OSError, ValueError):
                self._fail_all("the child process died")
                return
            with self._lock:
                if written == len(chunk):
                    self._backlog.popleft()
                else:
                    self._backlog[0] = chunk[written:]

    def _read_loop(self) -> None:
        while True:
            try:
                seq, ok, value = pickle.loads(self._replies.recv_bytes())
            except (EOFError, OSError):
                break
            self._resolve(seq, ok, value)
        self._fail_all("the child process died")  # (a clean stop leaves nothing pending)
        with self._lock:
            self._backlog.clear()
            self._stopping = True
            self._wake.notify()
        self._replies.close()

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


def batched(
    many: Callable[[list[tuple[Any, ...]]], list[Any]], limit: int = 200
) -> Callable[[F], F]:
    """Mark a child function whose calls may run together: the calls to it that wait in the
    pipe one after another (up to `limit`) are run as one `many(list of their args)`, which
    returns their results in order (each a result, never raising for one call)."""

    def mark(fn: F) -> F:
        _BATCHED[fn] = (many, limit)
        return fn

    return mark


def _serve(calls: Connection, replies: Connection, initializer: Callable[[], None] | None) -> None:
    """The child: run each call as it comes; reply (seq, ok, result or exception). Calls of a
    `batched` function that are waiting together run as one batch."""
    if initializer is not None:
        initializer()
    waiting: deque[bytes] = deque()
    while (data := waiting.popleft() if waiting else calls.recv_bytes()) != _STOP:
        seq, fn, args = pickle.loads(data)
        batch_of = _BATCHED.get(fn)
        if batch_of is None:
            _reply(replies, seq, *_run(fn, args))
            continue
        many, limit = batch_of
        group: list[tuple[int, tuple[Any, ...]]] = [(seq, args)]
        while len(group) < limit and calls.poll():
            data = calls.recv_bytes()
            if data != _STOP:
                call = pickle.loads(data)
                if call[1] is fn:
                    group.append((call[0], call[2]))
                    continue
            waiting.append(data)  # another call (or the stop): after this batch
            break
        ok, results = _run(many, ([args for _, args in group],))
        for index, (call_seq, _) in enumerate(group):
            _reply(replies, call_seq, ok, results[index] if ok else results)
    replies.close()


def _run(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    try:
        return True, fn(*args)
    except BaseException as exc:  # the caller sees the call's own exception
        return False, exc


def _reply(replies: Connection, seq: int, ok: bool, value: Any) -> None:
    try:
        payload = pickle.dumps((seq, ok, value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        payload = pickle.dumps((seq, False, RuntimeError(f"unpicklable result: {exc!r}")))
    replies.send_bytes(payload)
