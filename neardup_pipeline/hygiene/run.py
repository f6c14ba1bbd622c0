"""One hygiene run: read the content index in order, check each new document against the
persistent fingerprint index, write the marks window by window behind a checkpoint. With
`--finish`, the fingerprints `--slice` runs staged are taken up (staged.py); a `--slice` run
itself is stage.py's."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from functools import partial

from elasticsearch import ApiError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.hygiene.checkpoint import (
    FINISHED,
    RUNNING,
    WRITING,
    Checkpoint,
    CheckpointStore,
    apply_undo,
    undo_record,
)
from neardup_pipeline.hygiene.connect import connect
from neardup_pipeline.hygiene.fields import Item, item_of, refuse_unreadable
from neardup_pipeline.hygiene.judge import Judge
from neardup_pipeline.hygiene.options import HygieneOptions, RunResult, check_options
from neardup_pipeline.hygiene.reader import PointInTime, count_documents
from neardup_pipeline.hygiene.recording import RecordingIndex
from neardup_pipeline.hygiene.stage import stage_slice
from neardup_pipeline.hygiene.staged import StagedFingerprints, slices_to_take_up
from neardup_pipeline.hygiene.workers import ReadPlan, windows
from neardup_pipeline.hygiene.writer import InPlaceWriter, MarkWriter, SideIndexWriter
from neardup_pipeline.index.base import FingerprintIndex
from neardup_pipeline.index.elastic.connection import Connection, describe
from neardup_pipeline.index.elastic.store import ElasticIndex
from neardup_pipeline.index.memory import MemoryIndex
from neardup_pipeline.verdict.deduplicator import Deduplicator

NEVER_FLUSH = 1 << 40  # the window's fingerprint writes wait for its commit (checkpoint.py)


def run_hygiene(
    options: HygieneOptions,
    on_start: Callable[[int, int], None] = lambda total, done: None,
    on_read: Callable[[int], object] = lambda n: None,
) -> RunResult:
    """The run. `on_start(total, already_done)` once the index is counted; `on_read(n)` as
    documents are read (the progress bar)."""
    check_options(options)
    if options.slice_ is not None:
        return stage_slice(options, on_start, on_read)
    started = time.monotonic()
    connection = connect(options.url, options.config)
    result = RunResult()
    try:
        total = count_documents(connection, options.index)
        store = None if options.dry_run else CheckpointStore(
            connection, options.checkpoints, options.checkpoint_key)
        writer: MarkWriter = (SideIndexWriter(connection, options.into) if options.into
                              else InPlaceWriter(connection, options.index))
        slices = _slices_to_take_up(connection, options)
        interrupted: Checkpoint | None = None
        if store is not None:
            store.prepare()
            writer.prepare()
            interrupted = store.load()
            if interrupted is not None and interrupted.state == FINISHED:
                interrupted = None  # an incremental run: from the start, known pages skipped
        base = _fingerprint_index(connection, options)
        try:
            recording = RecordingIndex(base, dry_run=options.dry_run)
            judge = Judge(Deduplicator(recording, options.config), recording, options.batch)
            commit = _Committer(options, connection, store, writer, base, judge, result)
            position = commit.resume(interrupted)
            on_start(total, result.counts["read"])
            with PointInTime(connection, options.index) as pit:
                plan = ReadPlan(options.url, options.config, options.spec, pit.id,
                                options.fingerprints, tuple(position) if position else None,
                                None, options.page, options.staging if options.finish else None,
                                marks_in_place=not options.into)
                for n, window in enumerate(windows(connection, plan, options.processes,
                                                   options.window)):
                    if n == 0:
                        refuse_unreadable(window, options.spec)
                    result.read_now += len(window)
                    commit.window(window, list(window[-1].key))
                    on_read(len(window))
            commit.finish()
            result.problems = judge.problems
            if store is not None and options.finish:  # the slices' work is in the marks now
                StagedFingerprints(connection, options.staging, judge.dedup.fingerprinter).drop()
                store.delete(slices)
        except BaseException:
            _drop_uncommitted(base)
            raise
        finally:
            base.close()  # closes the client they share
    finally:
        connection.client.close()  # the fingerprint index shares it: closed after it
    result.seconds = time.monotonic() - started
    return result


class _Committer:
    """Judges windows and makes each durable behind the checkpoint (checkpoint.py)."""

    def __init__(self, options: HygieneOptions, connection: Connection,
                 store: CheckpointStore | None, writer: MarkWriter, base: FingerprintIndex,
                 judge: Judge, result: RunResult) -> None:
        self.options, self.connection, self.store = options, connection, store
        self.writer, self.base, self.judge, self.result = writer, base, judge, result
        self.position: list[int] | None = None
        self.earlier: dict[str, int] = {}  # counts of the run before this process resumed it

    def resume(self, checkpoint: Checkpoint | None) -> list[int] | None:
        """Continue a killed run: undo and check again the window it was sending; the
        position to read on from (None: the start)."""
        if checkpoint is None:
            return None
        self.result.resumed = True
        self.earlier = dict(checkpoint.counts)
        self.position = checkpoint.position
        if checkpoint.state == WRITING:
            apply_undo(self.connection, checkpoint.undo)
            items = _reread(self.connection, self.options, checkpoint.window)
            self.window(items, checkpoint.window_end or checkpoint.position or [])
        return self.position

    def window(self, items: list[Item], end: list[int]) -> None:
        """Check a window, then commit it: undo record and window, writes, position."""
        committed = self._count()  # what a resumption starts from, should this window fail
        marks = self.judge.window(items)
        self.judge.counts["read"] += len(items)
        self.judge.counts["marked"] += len(marks)
        if self.store is None:  # dry run: remembered for the report, nothing written
            for mark in marks:
                self.result.marks[mark.es_id] = mark
            self._count()
            return
        assert isinstance(self.base, ElasticIndex)
        writes = self.base.take_pending()
        if writes or marks:
            undo = undo_record(self.connection, writes)
            self.store.save(Checkpoint(WRITING, self.position, committed,
                                       [item.es_id for item in items], end, undo))
            self.base.requeue(writes)
            self.base.flush()
            self.judge.counts["gone"] += self.writer.write(marks)
        self.position = end
        self.store.save(Checkpoint(RUNNING, end, self._count()))

    def finish(self) -> None:
        if self.store is not None:
            self.writer.refresh()
            self.store.save(Checkpoint(FINISHED, None, self._count()))
        self._count()

    def _count(self) -> dict[str, int]:
        """The run's counts so far (those before a resumption included), also into the result."""
        counts = Counter(self.earlier) + self.judge.counts
        self.result.counts = counts
        return dict(counts)


def _drop_uncommitted(base: FingerprintIndex) -> None:
    """Forget the writes of a window that was not committed, so that closing the index does
    not send them: stored without the window's marks and checkpoint, they would make its
    documents look checked to the run that resumes (it checks the window again instead)."""
    if isinstance(base, ElasticIndex):
        base.take_pending()


def _reread(connection: Connection, options: HygieneOptions, es_ids: list[str]) -> list[Item]:
    """The documents of an interrupted window, read again by `_id`, in the window's order (a
    document deleted since is gone from it), every one to be checked again: none is `known`,
    since a write the killed run sent may still land after the undo (a server that was frozen
    runs its queued requests when it wakes), and a fingerprint stored that way has no marks."""
    client = connection.client
    items: list[Item] = []
    for start in range(0, len(es_ids), 500):
        try:
            response = connection.call(partial(
                client.mget, index=options.index, ids=es_ids[start : start + 500],
                source_includes=options.spec.source_fields()))
        except ApiError as exc:
            raise IndexFailure(f"reading the interrupted window failed: {describe(exc)}") \
                from exc
        items += [item_of(doc, options.spec) for doc in response.body["docs"] if doc.get("found")]
    return items


def _fingerprint_index(connection: Connection, options: HygieneOptions) -> FingerprintIndex:
    """The persistent fingerprint index (a dry run on a first run: an empty one in memory)."""
    client = connection.client
    if options.dry_run:
        try:
            exists = bool(connection.call(
                lambda: client.indices.exists(index=options.fingerprints)))
        except ApiError as exc:
            raise IndexFailure(f"cannot look for {options.fingerprints!r}: {describe(exc)}") \
                from exc
        if not exists:
            return MemoryIndex()
    # One writer: slices stage fingerprints elsewhere, and only this run records verdicts.
    return ElasticIndex(
        client, fingerprint_index=options.fingerprints, bulk_size=NEVER_FLUSH,
        location=connection.location, retry_seconds=connection.retry_seconds,
        ordered=False, manage_templates=connection.manage_templates)


def _slices_to_take_up(connection: Connection, options: HygieneOptions) -> list[str]:
    """`--finish`: the checkpoint keys of the slices whose staged fingerprints this run takes
    up, every one of them ended (else ConfigError); no `--finish`: none."""
    if not options.finish:
        return []
    runs = CheckpointStore(connection, options.checkpoints, options.checkpoint_key).runs()
    return slices_to_take_up({k: cp for k, cp in runs.items() if options.is_my_slice(k)})
