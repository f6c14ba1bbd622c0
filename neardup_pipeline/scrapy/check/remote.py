"""The Elasticsearch check inside the check process: IndexSession and degraded mode (with the
spool) in the child, so the crawler's process only hands pages over and waits.

The child takes the pages queued for it as one batch (`batched`: one msearch, one mget and one
write-log record for them all), with the verdicts of one page at a time. What the crawler's
process must see travels back with the verdicts: whether the server is away (`unavailable`),
the check's counts (a snapshot, with the first verdict of each batch) and the log records made
in the child (re-emitted by the crawler's logging, so its handlers, levels and Scrapy's log
counts see them as if made there). Child process only, apart from the value types and
`emit_records`.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.parallel.child import batched
from neardup_pipeline.parallel.offload import ChildCalls
from neardup_pipeline.scrapy.check.base import Checked, Outcome
from neardup_pipeline.scrapy.check.degraded import DegradedMode, degraded_mode
from neardup_pipeline.scrapy.check.session import IndexSession

MAX_BATCH = 200  # pages checked together at most (one msearch request: lookup.MSEARCH_CHUNK)
# Loggers whose records the child sends back: the pipeline's and the Elasticsearch client's.
FORWARDED_LOGGERS = ("neardup_pipeline", "elasticsearch", "elastic_transport", "urllib3")

Record = dict[str, Any]  # a LogRecord's attributes, message formatted, traceback as text


@dataclass(frozen=True)
class Reply:
    """A page's outcome and what the crawler's process must know with it. `counts` and
    `records` are None when nothing changed since the reply before."""

    outcome: Checked | Exception
    unavailable: bool
    counts: dict[str, int] | None = None
    records: list[Record] | None = None


@dataclass(frozen=True)
class Opened:
    """The child's open: fingerprints stored (None: started degraded), or the error that
    stopped it; and what it logged."""

    stored: int | None
    error: Exception | None
    unavailable: bool
    counts: dict[str, int]
    records: list[Record] | None


@dataclass(frozen=True)
class Closed:
    """The child's close: the final counts, what it logged, and the error of a failed close."""

    counts: dict[str, int]
    records: list[Record] | None
    error: Exception | None = None


def forwarded_levels() -> dict[str, tuple[int, int]]:
    """For each forwarded logger, its own level (NOTSET: none set, so the index's open may
    quiet it as in one process) and the lowest level the crawler's logging would emit: the
    child makes records from there (never a DEBUG record per request that nobody reads)."""
    levels = {}
    for name in FORWARDED_LOGGERS:
        logger = logging.getLogger(name)
        handlers: list[int] = []
        node: logging.Logger | None = logger
        while node is not None:
            handlers += [handler.level for handler in node.handlers]
            node = node.parent if node.propagate else None
        floor = min(handlers) if handlers else logging.WARNING  # logging.lastResort
        levels[name] = (logger.level, max(logger.getEffectiveLevel(), floor))
    return levels


def emit_records(records: Sequence[Record] | None) -> None:
    """Crawler's process: hand the child's records to the loggers of the same names."""
    for attributes in records or ():
        record = logging.makeLogRecord(attributes)
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)


class _Capture(logging.Handler):
    """Keeps the child's records, ready to pickle, until the next reply takes them."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[Record] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            attributes = {key: value for key, value in vars(record).items()
                          if value is None or isinstance(value, (str, int, float, bool))}
            attributes["msg"] = record.getMessage()
            attributes["args"] = None
            attributes.pop("message", None)
            if record.exc_info:
                attributes["exc_text"] = logging.Formatter().formatException(record.exc_info)
            self.records.append(attributes)
        except Exception:
            self.handleError(record)

    def take(self) -> list[Record] | None:
        records, self.records = self.records, []
        return records or None


_CAPTURE = _Capture()
_SESSION: IndexSession | None = None
_CHECK: DegradedMode | None = None


def _capture_logs(levels: Mapping[str, tuple[int, int]]) -> None:
    """Send the forwarded loggers' records to the capture, each from the level the crawler
    emits; a logger keeps no level of its own unless it had one in the crawler."""
    for name, (own, emitted) in levels.items():
        logger = logging.getLogger(name)
        logger.setLevel(own)
        logger.propagate = False
        if not any(isinstance(h, _Forward) for h in logger.handlers):
            logger.addHandler(_Forward(emitted))
    logging.getLogger().setLevel(min(emitted for _, emitted in levels.values()))


class _Forward(logging.Handler):
    """One forwarded logger's records from its level on, to the capture."""

    def emit(self, record: logging.LogRecord) -> None:
        _CAPTURE.handle(record)


def _sendable(exc: Exception) -> Exception:
    """The exception itself when it survives pickling, else an IndexFailure that says it."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return IndexFailure(f"{type(exc).__name__}: {exc}")
    return exc


def _counts() -> dict[str, int]:
    assert _SESSION is not None
    _SESSION.snapshot()
    return dict(_SESSION.counts_view)


def open_check(config: NearDupConfig, levels: Mapping[str, tuple[int, int]]) -> Opened:
    """Open the index and replay the spool (degraded mode, as on the worker thread)."""
    global _SESSION, _CHECK
    _capture_logs(levels)
    session = IndexSession(config, None)  # fingerprinted here, in this child
    check = degraded_mode(session, config)
    try:
        stored = check.open()
    except Exception as exc:
        return Opened(None, _sendable(exc), False, {}, _CAPTURE.take())
    _SESSION, _CHECK = session, check
    return Opened(stored, None, check.unavailable, _counts(), _CAPTURE.take())


def check_pages(pages: list[tuple[Document]]) -> list[Reply]:
    """The queued pages, in order, in batches (DegradedMode.check_many)."""
    assert _CHECK is not None, "index not opened in the child"
    outcomes: Sequence[Outcome]
    try:
        outcomes = _CHECK.check_many([(doc, None) for (doc,) in pages])
    except Exception as exc:  # each page raises it in the crawler
        outcomes = [exc] * len(pages)
    unavailable = _CHECK.unavailable
    replies = [Reply(o if isinstance(o, Checked) else _sendable(o), unavailable)
               for o in outcomes]
    replies[0] = Reply(replies[0].outcome, unavailable, _counts(), _CAPTURE.take())
    return replies


@batched(check_pages, limit=MAX_BATCH)
def check_page(doc: Document) -> Reply:
    """One page (a batch of one; the queued pages go to `check_pages` together)."""
    return check_pages([(doc,)])[0]


def close_check() -> Closed:
    """Last replay, flush, close (what the server cannot take stays spooled)."""
    global _SESSION, _CHECK
    if _CHECK is None or _SESSION is None:
        return Closed({}, _CAPTURE.take())
    error: Exception | None = None
    try:
        _CHECK.close()
    except Exception as exc:
        error = _sendable(exc)
    counts = _counts()
    _SESSION = _CHECK = None
    return Closed(counts, _CAPTURE.take(), error)


ELASTIC_CALLS = ChildCalls(open_check, check_page, close_check)
