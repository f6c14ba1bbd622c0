"""sqlite3's errors as the project's, naming the index file and what to do about it.

A caller sees `IndexDiskFull`, `IndexLocked` or `IndexDamaged` (all `IndexFailure`) rather than a
bare `sqlite3.OperationalError: database is locked`, which names neither the file nor the fix.
"""

from __future__ import annotations

import errno
import functools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from neardup_pipeline.errors import (
    IndexDamaged,
    IndexDiskFull,
    IndexFailure,
    IndexLocked,
)

# How long a connection waits for another process's write lock before IndexLocked: long enough
# for a writer's batch commit (every 2 s or 1,000 pages), short enough that a process holding
# the file for good is named within seconds.
BUSY_TIMEOUT = 5.0

F = TypeVar("F", bound=Callable[..., Any])

# SQLite's primary result codes (sqlite3.h).
_BUSY, _LOCKED, _CORRUPT, _FULL, _NOTADB, _IOERR = 5, 6, 11, 13, 26, 10


def translate(exc: BaseException, path: str, afresh: str | None = None) -> IndexFailure | None:
    """The project's error for `exc` met on the index file at `path`; None for an error that is
    not about the file (a bug, a bad statement). `afresh`: how to start again from nothing when
    the file is damaged (default: delete it and its side files)."""
    if isinstance(exc, IndexFailure):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return _full(path, str(exc))
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc)
    if primary == _FULL or "database or disk is full" in text:
        return _full(path, text)
    if primary in (_BUSY, _LOCKED) or "database is locked" in text:
        return IndexLocked(
            f"SQLite index {path} is locked by another process (waited {BUSY_TIMEOUT:g} s for "
            f"it: {text}); stop the other process using that file")
    if primary in (_CORRUPT, _NOTADB) or "file is not a database" in text or "malformed" in text:
        afresh = afresh or ("delete it (with its -wal and -shm files and .simhash folder) to "
                            "start afresh")
        return IndexDamaged(f"SQLite index {path} is damaged or truncated ({text}); restore it "
                            f"from a backup, or {afresh}")
    if primary == _IOERR:
        return IndexFailure(f"SQLite index {path}: disk I/O error ({text}); check the disk "
                            "holding it and its free space")
    if isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError):
        return IndexFailure(f"SQLite index {path}: {text}")
    return None


def _full(path: str, text: str) -> IndexDiskFull:
    return IndexDiskFull(f"the disk holding SQLite index {path} is full ({text}); free space "
                         "there (or move the index to a larger disk)")


@contextmanager
def sqlite_errors(path: str, afresh: str | None = None) -> Iterator[None]:
    """Raise the project's error, naming `path`, for a sqlite3 (or disk-full) error inside."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        failure = translate(exc, path, afresh)
        if failure is None:
            raise
        raise failure from exc


def translated(method: F) -> F:
    """A method of an object with a `path` whose sqlite3 errors come out as the project's (and
    an `AFRESH` class attribute, if it has one, for how to start a damaged file again)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with sqlite_errors(str(self.path), getattr(self, "AFRESH", None)):
            return method(self, *args, **kwargs)

    return cast(F, wrapper)
