"""A `--slice I/N` run: slice I of the content index read, its new documents fingerprinted and
staged for the `--finish` run that judges them all in one order (staged.py says why).

It writes nothing else: no marks, no fingerprint entries. What it stages is the same when staged
twice, so its checkpoint is a position: killed, it starts again after the last window staged,
and a document staged before (same content, same settings) is not fingerprinted again.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.hygiene.checkpoint import FINISHED, RUNNING, Checkpoint, CheckpointStore
from neardup_pipeline.hygiene.connect import connect
from neardup_pipeline.hygiene.fields import Item
from neardup_pipeline.hygiene.options import HygieneOptions, RunResult
from neardup_pipeline.hygiene.reader import PointInTime, count_documents
from neardup_pipeline.hygiene.staged import StagedFingerprints
from neardup_pipeline.hygiene.workers import ReadPlan, windows


def stage_slice(
    options: HygieneOptions,
    on_start: Callable[[int, int], None],
    on_read: Callable[[int], object],
) -> RunResult:
    """Stage slice `options.slice_`'s fingerprints. Counts: read, staged, staged_before,
    unchanged, bad_field."""
    assert options.slice_ is not None
    started = time.monotonic()
    connection = connect(options.url, options.config)
    result = RunResult()
    try:
        part, of = options.slice_
        total = count_documents(connection, options.index)
        store = CheckpointStore(connection, options.checkpoints, options.checkpoint_key)
        store.prepare()
        previous = store.load()
        position = None
        if previous is not None and previous.state == RUNNING:
            result.resumed, position = True, previous.position
            result.counts.update(previous.counts)
        fingerprinter = Fingerprinter(options.config)
        staged = StagedFingerprints(connection, options.staging, fingerprinter)
        staged.prepare()
        on_start(-(-total // of), result.counts["read"])  # about a slice's share
        with PointInTime(connection, options.index) as pit:
            plan = ReadPlan(options.url, options.config, options.spec, pit.id,
                            options.fingerprints, tuple(position) if position else None,
                            options.slice_, options.page, options.staging,
                            marks_in_place=not options.into)
            for window in windows(connection, plan, options.processes, options.window,
                                  fingerprinter):
                result.counts.update(_counts(window))
                result.counts["staged"] += staged.put(window)
                result.read_now += len(window)
                store.save(Checkpoint(RUNNING, list(window[-1].key), dict(result.counts),
                                      slice_=(part, of)))
                on_read(len(window))
        store.save(Checkpoint(FINISHED, None, dict(result.counts), slice_=(part, of)))
    finally:
        connection.client.close()
    result.seconds = time.monotonic() - started
    return result


def _counts(window: list[Item]) -> Counter[str]:
    counts: Counter[str] = Counter(read=len(window))
    for item in window:
        if item.known:
            counts["unchanged"] += 1
        elif item.doc is None:
            counts["bad_field"] += 1
        elif item.staged:
            counts["staged_before"] += 1
    return counts
