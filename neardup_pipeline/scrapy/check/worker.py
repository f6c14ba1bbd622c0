"""The pipeline's one worker thread: blocking index work off the reactor, in page order.

One thread keeps index operations in the order pages arrived, so read-after-write holds without
locking; the reactor awaits each call as a Deferred and never blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar, cast

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads
from twisted.internet.defer import Deferred
from twisted.python.threadpool import ThreadPool

T = TypeVar("T")


class WorkerThread:
    """A one-thread pool, stopped at close or, failing that, when the reactor shuts down."""

    def __init__(self) -> None:
        self._pool: ThreadPool | None = None
        self._shutdown_trigger: Any = None

    def start(self) -> None:
        from twisted.internet import reactor

        self._pool = ThreadPool(minthreads=1, maxthreads=1, name="neardup")
        self._pool.start()
        # Stops the pool if the reactor shuts down before the spider closes; removed in `stop`,
        # since stopping a pool twice raises AlreadyQuit at shutdown.
        core: Any = reactor  # IReactorCore's zope-style stubs confuse mypy
        self._shutdown_trigger = core.addSystemEventTrigger("during", "shutdown", self._pool.stop)

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """`func(*args)` on the worker thread, awaited from the reactor."""
        from twisted.internet import reactor

        assert self._pool is not None
        deferred = threads.deferToThreadPool(reactor, self._pool, func, *args)
        return cast(T, await maybe_deferred_to_future(deferred))

    def stop(self) -> None:
        if self._shutdown_trigger is not None:
            from twisted.internet import reactor

            core: Any = reactor
            core.removeSystemEventTrigger(self._shutdown_trigger)
            self._shutdown_trigger = None
        if self._pool is not None:
            self._pool.stop()
            self._pool = None


async def on_reactor(future: Future[T]) -> T:
    """Await a concurrent future from the reactor: its result is delivered by callFromThread,
    by the thread that resolves it (no worker-thread hop)."""
    from twisted.internet import reactor

    core: Any = reactor
    deferred: Deferred[T] = Deferred()

    def deliver(done: Future[T]) -> None:
        error = done.exception()
        if error is None:
            core.callFromThread(deferred.callback, done.result())
        else:
            core.callFromThread(deferred.errback, error)

    future.add_done_callback(deliver)
    return cast(T, await maybe_deferred_to_future(deferred))
