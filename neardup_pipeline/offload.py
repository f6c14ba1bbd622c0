"""Fingerprinting in child processes, so a crawler's own process keeps its core for Scrapy.

HTML parsing, normalisation and signatures are CPU work under the GIL: in the crawler's process
they compete with the reactor thread for one interpreter. A child process computes the same
fingerprint on another core; the parent keeps every index operation (candidates, verification,
writes), in page order. Only methods whose signature needs nothing but the document can run there
(simhash, minhash, bag); rarewords and anchors read corpus state the parent holds.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from .config import NearDupConfig
from .fingerprint import Document, Fingerprint, Fingerprinter

logger = logging.getLogger(__name__)

# Methods whose signature is a function of the document alone.
SELF_CONTAINED_METHODS = frozenset({"simhash", "minhash", "bag"})


class FingerprintCrash(RuntimeError):
    """The child process died while fingerprinting one document (it is restarted)."""


def can_offload(config: NearDupConfig) -> bool:
    """Whether every configured method can be fingerprinted away from the index."""
    return set(config.method_names) <= SELF_CONTAINED_METHODS


class FingerprintWorkers:
    """A pool of child processes, each with its own Fingerprinter for one configuration."""

    def __init__(self, config: NearDupConfig, processes: int = 1) -> None:
        if not can_offload(config):
            raise ValueError(
                f"methods {','.join(config.method_names)} need the index to fingerprint; "
                f"only {', '.join(sorted(SELF_CONTAINED_METHODS))} can run in a child process"
            )
        self.config = config
        self.processes = processes
        self._pool = self._start()

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

    def fingerprint(self, doc: Document) -> Fingerprint:
        """The document's fingerprint, computed in a child; FingerprintCrash if the child died."""
        try:
            return self._pool.submit(_fingerprint, doc).result()
        except BrokenProcessPool as exc:
            logger.error("neardup: a fingerprint process died on %s; restarting it", doc.doc_id)
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start()
            raise FingerprintCrash(f"fingerprint process died on {doc.doc_id}") from exc

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
                logger.error("neardup: a fingerprint process died in a batch; restarting it")
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._start()
                raise FingerprintCrash("fingerprint process died in a batch") from exc

        return results

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_FINGERPRINTER: Fingerprinter | None = None


def _init_child(config: NearDupConfig) -> None:
    global _FINGERPRINTER
    _FINGERPRINTER = Fingerprinter(config)


def _ping() -> bool:
    return _FINGERPRINTER is not None


def _fingerprint(doc: Document) -> Fingerprint:
    assert _FINGERPRINTER is not None, "child not initialised"
    return _FINGERPRINTER.fingerprint(doc)


def _fingerprint_all(docs: list[Document]) -> list[Fingerprint]:
    return [_fingerprint(doc) for doc in docs]
