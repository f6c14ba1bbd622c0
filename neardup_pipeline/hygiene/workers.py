"""Reading and fingerprinting in child processes, one slice each, merged back into one order.

Each child reads its slice of the point in time in the run's order, leaves out what earlier
runs checked (known.py), takes what slices staged (staged.py) and fingerprints the rest: the
CPU work. The parent merges the slices by
sort key (every slice is in the same order, so the merge is the whole index's order) and does
every lookup and verdict itself, in that order: the clusters are those of one process."""

from __future__ import annotations

import heapq
import multiprocessing
import queue
from collections.abc import Iterator
from dataclasses import dataclass, replace
from multiprocessing.process import BaseProcess
from typing import Any

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.hygiene.connect import connect
from neardup_pipeline.hygiene.fields import FieldSpec, Item, item_of
from neardup_pipeline.hygiene.known import with_known
from neardup_pipeline.hygiene.reader import read_pages
from neardup_pipeline.hygiene.staged import StagedFingerprints
from neardup_pipeline.index.elastic.connection import Connection

QUEUE_PAGES = 4  # pages a child reads ahead of the parent: bounds memory
_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class ReadPlan:
    """What a reader reads: one slice of a point in time, after a position (picklable)."""

    url: str
    config: NearDupConfig
    spec: FieldSpec
    pit_id: str
    fingerprint_index: str
    after: tuple[int, ...] | None = None
    slice_: tuple[int, int] | None = None
    page: int = 500
    staged: str | None = None  # the staging index to take fingerprints from (`--finish`)
    marks_in_place: bool = False  # the content index holds the marks (no `--into`)


def read_items(
    connection: Connection, plan: ReadPlan, fingerprinter: Fingerprinter | None = None
) -> Iterator[list[Item]]:
    """The plan's documents page by page, with their staged fingerprints (`plan.staged`);
    `fingerprinter`: the other new ones fingerprinted here."""
    staged = None if plan.staged is None else StagedFingerprints(
        connection, plan.staged, fingerprinter or Fingerprinter(plan.config))
    for hits in read_pages(connection, plan.pit_id, plan.spec, page=plan.page, after=plan.after,
                           slice_=plan.slice_):
        items = with_known(connection, plan.fingerprint_index,
                           [item_of(hit, plan.spec) for hit in hits], plan.marks_in_place)
        if staged is not None:
            items = staged.fill(items)
        if fingerprinter is not None:
            items = [_fingerprinted(fingerprinter, item) for item in items]
        yield items


def _fingerprinted(fingerprinter: Fingerprinter, item: Item) -> Item:
    if item.doc is None or item.known or item.fingerprint is not None:
        return item
    try:
        fp = fingerprinter.fingerprint(item.doc)
    except Exception:  # never expected; the parent fingerprints it again and reports there
        return item
    return replace(item, fingerprint=replace(fp, text=""))  # the verdict needs no text


def _child(plan: ReadPlan, out: Any) -> None:
    """A reader process: its slice's pages onto `out`, then None (or the error's text)."""
    try:
        connection = connect(plan.url, plan.config)
        try:
            fingerprinter = Fingerprinter(plan.config)
            for items in read_items(connection, plan, fingerprinter):
                out.put(items)
        finally:
            connection.client.close()
    except BaseException as exc:  # the parent stops the run with it
        out.put(f"{type(exc).__name__}: {exc}")
    out.put(None)


class SliceReaders:
    """`processes` child readers over slices of one point in time (within `--slice I/N`:
    slices I, I + N, ... of N x processes, which together are slice I of N)."""

    def __init__(self, plan: ReadPlan, processes: int) -> None:
        context = multiprocessing.get_context("spawn")  # no inherited client sockets or threads
        base, of = plan.slice_ or (0, 1)
        self._queues: list[Any] = []
        self._children: list[BaseProcess] = []
        for n in range(processes):
            child_plan = replace(plan, slice_=(base + n * of, of * processes))
            out = context.Queue(maxsize=QUEUE_PAGES)
            child = context.Process(target=_child, args=(child_plan, out), daemon=True,
                                    name=f"neardup-hygiene-reader-{n}")
            child.start()
            self._queues.append(out)
            self._children.append(child)

    def items(self) -> Iterator[Item]:
        """Every slice's items, merged into the run's order."""
        streams = [self._stream(n) for n in range(len(self._children))]
        return heapq.merge(*streams, key=lambda item: item.key)

    def _stream(self, n: int) -> Iterator[Item]:
        out, child = self._queues[n], self._children[n]
        while True:
            try:
                got = out.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if not child.is_alive() and out.empty():
                    raise IndexFailure(f"reader process {n} died (exit code {child.exitcode})") \
                        from None
                continue
            if got is None:
                return
            if isinstance(got, str):
                raise IndexFailure(f"reader process {n}: {got}")
            yield from got

    def close(self) -> None:
        for child in self._children:
            if child.is_alive():
                child.terminate()
            child.join(timeout=5)
        for out in self._queues:
            out.close()
            out.cancel_join_thread()


def windows(connection: Connection, plan: ReadPlan, processes: int, size: int,
            fingerprinter: Fingerprinter | None = None) -> Iterator[list[Item]]:
    """The plan's documents in the run's order, `size` at a time: read (and fingerprinted) by
    `processes` children, or else in this process (`fingerprinter`: fingerprinted here too)."""
    readers = SliceReaders(plan, processes) if processes else None
    try:
        items: Iterator[Item] = (
            readers.items() if readers is not None
            else (item for page in read_items(connection, plan, fingerprinter) for item in page))
        window: list[Item] = []
        for item in items:
            window.append(item)
            if len(window) >= size:
                yield window
                window = []
        if window:
            yield window
    finally:
        if readers is not None:
            readers.close()
