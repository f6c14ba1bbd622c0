"""Fingerprinting (and, with self-contained methods, the whole check) in child processes, so a
crawler's own process keeps its core for Scrapy.

HTML parsing, normalisation and signatures are CPU work under the GIL: in the crawler's process
they compete with the reactor thread for one interpreter. A child process computes the same
fingerprint on another core; the parent keeps every index operation (candidates, verification,
writes), in page order. Only methods whose signature needs nothing but the document can run there
(simhash, minhash, bag); rarewords and anchors read corpus state the parent holds.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import FingerprintCrash
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.parallel.child import OrderedChild
from neardup_pipeline.parallel.eligible import SELF_CONTAINED_METHODS as SELF_CONTAINED_METHODS
from neardup_pipeline.parallel.eligible import can_offload as can_offload
from neardup_pipeline.verdict.deduplicator import Deduplicator, Verdict

logger = logging.getLogger(__name__)
T = TypeVar("T")

Pool = TypeVar("Pool", ProcessPoolExecutor, OrderedChild)


class _ChildPool(Generic[Pool]):
    """Spawned child processes, restarted when one dies, with one retry rule for every task."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Pool = self._start()

    def _start(self) -> Pool:
        raise NotImplementedError

    def _submit(self, fn: Callable[[Document], T], doc: Document) -> Future[T] | None:
        """Start `fn(doc)` in a child now (thread-safe); None when the pool is broken (the
        waiting side restarts it)."""
        try:
            return self._pool.submit(fn, doc)
        except BrokenProcessPool:
            return None

    def _wait(self, fn: Callable[[Document], T], doc: Document, pending: Future[T] | None) -> T:
        """The result of `fn(doc)` that `pending` started (None: start it now). A dying child
        fails every task in flight: each is tried once more in the restarted pool, and only a
        document that kills that one too raises FingerprintCrash."""
        for last_try in (False, True):
            try:
                return (pending if pending is not None else self._pool.submit(fn, doc)).result()
            except BrokenProcessPool as exc:
                self._restart(f"a child process died on or near {doc.doc_id}")
                if last_try:
                    raise FingerprintCrash(f"child process died on {doc.doc_id}") from exc
                pending = None
        raise AssertionError("unreachable")

    def _restart(self, why: str) -> None:
        with self._lock:  # tasks in flight all see the same broken pool: restart it once
            try:
                self._pool.submit(_ping)  # a broken pool refuses at once
                return  # another task restarted it already
            except BrokenProcessPool:
                pass
            logger.error("neardup: %s; restarting it", why)
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start()
            self._restarted()

    def _restarted(self) -> None:
        """What a new pool needs before it takes tasks (nothing by default)."""


class FingerprintWorkers(_ChildPool[ProcessPoolExecutor]):
    """A pool of child processes, each with its own Fingerprinter for one configuration."""

    def __init__(self, config: NearDupConfig, processes: int = 1) -> None:
        if not can_offload(config):
            raise ValueError(
                f"methods {','.join(config.method_names)} need the index to fingerprint; "
                f"only {', '.join(sorted(SELF_CONTAINED_METHODS))} can run in a child process"
            )
        self.config = config
        self.processes = processes
        super().__init__()

    def _start(self) -> ProcessPoolExecutor:
        # spawn, not fork: the parent runs a reactor and threads that a forked child would copy
        # in whatever state they were in.
        return ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_child,
            initargs=(self.config,),
        )

    def warm_up(self) -> None:
        """Start the children now (imports take a second) rather than on the first page."""
        self._pool.submit(_ping).result()

    def submit(self, doc: Document) -> Future[Fingerprint] | None:
        """Start fingerprinting `doc` in a child now (thread-safe); `result` collects it."""
        return self._submit(_fingerprint, doc)

    def result(self, doc: Document, pending: Future[Fingerprint] | None) -> Fingerprint:
        """The fingerprint `submit` started (None: start it now), tried twice (see `_wait`)."""
        return self._wait(_fingerprint, doc, pending)

    def fingerprint(self, doc: Document) -> Fingerprint:
        """The document's fingerprint, computed in a child."""
        return self.result(doc, None)

    def submit_many(self, docs: Sequence[Document]) -> Callable[[], list[Fingerprint]]:
        """Start fingerprinting `docs` across the children; the returned call waits for them, in
        order (FingerprintCrash if a child died). Batch work overlaps the caller's index work."""
        chunk = max(1, len(docs) // (4 * self.processes))
        futures: list[Future[list[Fingerprint]]] = [
            self._pool.submit(_fingerprint_all, list(docs[i : i + chunk]))
            for i in range(0, len(docs), chunk)
        ]

        def results() -> list[Fingerprint]:
            try:
                return [fp for future in futures for fp in future.result()]
            except BrokenProcessPool as exc:
                self._restart("a fingerprint process died in a batch")
                raise FingerprintCrash("fingerprint process died in a batch") from exc

        return results

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_FINGERPRINTER: Fingerprinter | None = None


def _ignore_sigint() -> None:
    """Ctrl-C reaches the whole process group: the children leave the shutdown to the crawler,
    which closes them in order (the index's last writes committed) instead of losing them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _init_child(config: NearDupConfig) -> None:
    global _FINGERPRINTER
    _ignore_sigint()
    _FINGERPRINTER = Fingerprinter(config)


def _ping() -> bool:
    return _FINGERPRINTER is not None


def _fingerprint(doc: Document) -> Fingerprint:
    assert _FINGERPRINTER is not None, "child not initialised"
    return _FINGERPRINTER.fingerprint(doc)


def _fingerprint_all(docs: list[Document]) -> list[Fingerprint]:
    return [_fingerprint(doc) for doc in docs]


def can_check_in_child(config: NearDupConfig) -> bool:
    """Whether one child process can own the whole check: self-contained methods, and an
    embedded index (memory, SQLite; no Elasticsearch pages index to keep beside it) or an
    Elasticsearch server (the child opens its own client, pages index included)."""
    if not can_offload(config):
        return False
    if is_shared(config):
        return True
    embedded = config.backend == "memory" or config.backend.startswith("sqlite:")
    return embedded and not config.elastic.pages_index


def is_shared(config: NearDupConfig) -> bool:
    """Elasticsearch: an index that can go away while the crawl goes on."""
    return config.backend.startswith(("http://", "https://"))


@dataclass(frozen=True)
class ChildCalls:
    """What the check process runs (module-level functions, pickled by name): `open(config,
    *args)` once per child, `check(doc)` per page in order, `close()` at the end."""

    open: Callable[..., Any]
    check: Callable[[Document], Any]
    close: Callable[[], Any]


class CheckProcess(_ChildPool[OrderedChild]):
    """One child process that owns the check and its index.

    The crawler's process then only hands pages over and waits: fingerprinting, lookups and
    verification all run on another core, without the reactor's GIL. One worker executes its
    queue in order, so pages are checked in the order they were submitted (read-after-write
    holds as on one thread). A child that dies is restarted and opened again with the same
    arguments: on the same index file (a memory index starts empty again, writes not yet
    committed to SQLite are lost with it) or the same Elasticsearch index and spool.

    `calls` default to a Deduplicator on an embedded index; the pipeline gives its own for
    Elasticsearch (scrapy/check/remote.py). A restarted child opens with `reopen_config` when
    given (mid-crawl, Elasticsearch starts degraded if the server is away), and `reopened`
    receives what that open returned.
    """

    def __init__(self, config: NearDupConfig, calls: ChildCalls | None = None,
                 open_args: tuple[Any, ...] = (),
                 reopened: Callable[[Any], None] | None = None,
                 reopen_config: NearDupConfig | None = None) -> None:
        if not can_check_in_child(config):
            raise ValueError("the whole check runs in a child only with self-contained methods "
                             "and an embedded index or Elasticsearch")
        self.config = config
        self.calls = calls or EMBEDDED_CALLS
        self._open_args = open_args
        self._reopened = reopened
        self._reopen_config = reopen_config or config
        super().__init__()

    def _start(self) -> OrderedChild:
        return OrderedChild(initializer=_ignore_sigint)

    @property
    def pid(self) -> int | None:
        """The child's process id (it changes when the child is restarted)."""
        return self._pool.pid

    def _restarted(self) -> None:
        # the same index, opened again by the new child
        opened = self._open(self._reopen_config)
        if self._reopened is not None:
            self._reopened(opened)

    def open(self) -> Any:
        """Open the index in the child (its errors, e.g. other parameters, are raised here);
        with the embedded calls, the number of fingerprints it holds."""
        return self._open(self.config)

    def _open(self, config: NearDupConfig) -> Any:
        return self._pool.submit(self.calls.open, config, *self._open_args).result()

    def submit(self, doc: Document) -> Future[Any] | None:
        """Queue `doc` for checking now (thread-safe; checked in submission order)."""
        return self._submit(self.calls.check, doc)

    def result(self, doc: Document, pending: Future[Any] | None) -> Any:
        """The verdict `submit` queued (None: queue it now), tried twice (see `_wait`)."""
        return self._wait(self.calls.check, doc, pending)

    def close(self) -> Any:
        """Flush and close the index in the child, then stop it; what its close returned."""
        try:
            return self._pool.submit(self.calls.close).result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


_CHECKER: Deduplicator | None = None


def _checker_open(config: NearDupConfig) -> int:
    global _CHECKER
    from neardup_pipeline.index import open_index  # the child's own index connection

    index = open_index(config.backend, config)
    try:
        _CHECKER = Deduplicator(index, config)
    except BaseException:
        index.close()
        raise
    return index.count()


def _checker_process(doc: Document) -> Verdict:
    assert _CHECKER is not None, "index not opened in the child"
    return _CHECKER.process(doc)


def _checker_close() -> None:
    global _CHECKER
    if _CHECKER is not None:
        checker, _CHECKER = _CHECKER, None
        checker.index.close()


EMBEDDED_CALLS = ChildCalls(_checker_open, _checker_process, _checker_close)
