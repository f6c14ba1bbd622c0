"""Embedded, persistent index in one SQLite file (the default backend: no server).

Document frequency (rarewords): `df` holds a count per word hash (as a signed 64-bit integer)
and `df_docs` each counted document's distinct words as one packed blob, so a re-add subtracts
the old words first. Both change in the writer's transaction: SQLite serialises writers, so two
processes never lose a count.

Keys live in an indexed table (method, key) -> doc_id; signatures and metadata as JSON beside the
document row. Writes are committed in batches (and at flush/close); lookups on the same
connection see uncommitted writes, so read-after-write holds without a commit per page.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import IndexEntry, IndexError_, IndexParamsError, params_mismatch

_SCHEMA = """
CREATE TABLE IF NOT EXISTS params (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    doc_id TEXT PRIMARY KEY,
    signatures TEXT NOT NULL,
    meta TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS keys (
    method TEXT NOT NULL,
    key TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    PRIMARY KEY (method, key, doc_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS keys_by_doc ON keys (doc_id);
CREATE TABLE IF NOT EXISTS df (word INTEGER PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS df_docs (doc_id TEXT PRIMARY KEY, words BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS df_count (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
"""
_LOOKUP_CHUNK = 500  # stays below SQLite's bound-parameter limit


class SqliteIndex:
    """Fingerprints in a SQLite file, safe to use from the pipeline's worker thread."""

    def __init__(self, path: str | Path, *, commit_every: int = 1000, commit_seconds: float = 2.0):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(
                str(Path(self.path).expanduser()) if self.path != ":memory:" else self.path,
                check_same_thread=False,
                isolation_level="DEFERRED",
                timeout=30.0,
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise IndexError_(f"cannot open SQLite index {self.path!r}: {exc}") from exc
        self._lock = threading.Lock()
        self._pending = 0
        self._last_commit = time.monotonic()
        self._commit_every = commit_every
        self._commit_seconds = commit_seconds

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        with self._lock:
            row = self._db.execute("SELECT value FROM params WHERE name = 'fingerprint'").fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO params (name, value) VALUES ('fingerprint', ?)",
                    (json.dumps(params, sort_keys=True),),
                )
                self._db.commit()
                return
        diff = params_mismatch(json.loads(row[0]), params)
        if diff is not None:
            raise IndexParamsError(
                f"SQLite index {self.path!r} was built with other parameters ({diff}); "
                "use a new index file or the same settings"
            )

    def add(self, entry: IndexEntry) -> None:
        rows = [
            (method, key, entry.doc_id) for method, keys in entry.keys.items() for key in keys
        ]
        with self._lock:
            self._db.execute("DELETE FROM keys WHERE doc_id = ?", (entry.doc_id,))
            self._db.execute(
                "INSERT OR REPLACE INTO docs (doc_id, signatures, meta) VALUES (?, ?, ?)",
                (entry.doc_id, json.dumps(entry.signatures), json.dumps(_keys_meta(entry))),
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO keys (method, key, doc_id) VALUES (?, ?, ?)", rows
            )
            self._pending += 1
            if (
                self._pending >= self._commit_every
                or time.monotonic() - self._last_commit > self._commit_seconds
            ):
                self._commit()

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        found: set[str] = set()
        with self._lock:
            for method, method_keys in keys.items():
                unique = list(dict.fromkeys(method_keys))
                for start in range(0, len(unique), _LOOKUP_CHUNK):
                    chunk = unique[start : start + _LOOKUP_CHUNK]
                    marks = ",".join("?" * len(chunk))
                    found.update(
                        row[0]
                        for row in self._db.execute(
                            "SELECT DISTINCT doc_id FROM keys"
                            f" WHERE method = ? AND key IN ({marks})",
                            (method, *chunk),
                        )
                    )
        return found

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        wanted = list(dict.fromkeys(ids))
        result: dict[str, IndexEntry] = {}
        with self._lock:
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                chunk = wanted[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                for doc_id, signatures, meta in self._db.execute(
                    f"SELECT doc_id, signatures, meta FROM docs WHERE doc_id IN ({marks})", chunk
                ):
                    meta_obj = json.loads(meta)
                    keys = meta_obj.pop("_keys", {})
                    result[doc_id] = IndexEntry(doc_id, json.loads(signatures), keys, meta_obj)
        return result

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        words = np.unique(np.fromiter((int(w) for w in word_hashes), dtype=np.uint64))
        new = words.view(np.int64).tolist()
        with self._lock:
            # A write first (DELETE ... RETURNING): the transaction holds the write lock before
            # it reads the old words, so no other process can change them in between.
            old = self._db.execute(
                "DELETE FROM df_docs WHERE doc_id = ? RETURNING words", (doc_id,)
            ).fetchall()
            if not old:  # a document new to DF: COUNT(*) would scan the table on every lookup
                self._db.execute(
                    "INSERT INTO df_count (id, n) VALUES (0, 1)"
                    " ON CONFLICT (id) DO UPDATE SET n = n + 1"
                )
            else:
                gone = np.frombuffer(old[0][0], dtype="<i8").tolist()
                self._db.executemany("UPDATE df SET n = n - 1 WHERE word = ?", _rows(gone))
                self._db.execute("DELETE FROM df WHERE n <= 0")
            self._db.executemany(
                "INSERT INTO df (word, n) VALUES (?, 1) ON CONFLICT (word) DO UPDATE SET n = n + 1",
                _rows(new),
            )
            self._db.execute(
                "INSERT INTO df_docs (doc_id, words) VALUES (?, ?)",
                (doc_id, words.view(np.int64).astype("<i8").tobytes()),
            )
            self._pending += 1

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        wanted = list(dict.fromkeys(int(w) for w in word_hashes))
        signed = np.array(wanted, dtype=np.uint64).view(np.int64).tolist()
        found: dict[int, int] = {}
        with self._lock:
            for start in range(0, len(signed), _LOOKUP_CHUNK):
                chunk = signed[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                found.update(
                    self._db.execute(f"SELECT word, n FROM df WHERE word IN ({marks})", chunk)
                )
            own: set[int] = set()
            if exclude is not None:
                row = self._db.execute(
                    "SELECT words FROM df_docs WHERE doc_id = ?", (exclude,)
                ).fetchone()
                if row is not None:
                    own = set(np.frombuffer(row[0], dtype="<i8").tolist())
        return {w: found.get(s, 0) - (s in own) for w, s in zip(wanted, signed, strict=True)}

    def document_count(self, exclude: str | None = None) -> int:
        with self._lock:
            row = self._db.execute("SELECT n FROM df_count WHERE id = 0").fetchone()
            n = int(row[0]) if row else 0
            if exclude is not None and self._db.execute(
                "SELECT 1 FROM df_docs WHERE doc_id = ?", (exclude,)
            ).fetchone():
                n -= 1
        return n

    def flush(self) -> None:
        with self._lock:
            self._commit()

    def close(self) -> None:
        with self._lock:
            self._commit()
            self._db.close()

    def _commit(self) -> None:
        self._db.commit()
        self._pending = 0
        self._last_commit = time.monotonic()


def _rows(values: list[int]) -> list[tuple[int]]:
    return [(v,) for v in values]


def _keys_meta(entry: IndexEntry) -> dict[str, Any]:
    """Metadata with the entry's keys kept beside it, so get() returns the entry whole."""
    return {**entry.meta, "_keys": entry.keys}
