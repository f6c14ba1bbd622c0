"""The passage index in one SQLite file: built once from the sources (`neardup reuse index`),
then queried by any number of runs (`neardup reuse --index`), and read by `neardup report` for
the sources' texts.

`fingerprints` maps each winnowed hash to its (source, word position); `sources` keeps each
source's id, its word and shingle hashes and word spans (what alignment reads) and its text
(zlib), so that a query reads no source file. Hashes are stored as signed 64-bit integers
(SQLite's).
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from neardup_pipeline.errors import IndexFailure, IndexParamsError
from neardup_pipeline.index.sqlite.failures import (
    BUSY_TIMEOUT,
    sqlite_errors,
    translate,
    translated,
)
from neardup_pipeline.reuse.index import Postings
from neardup_pipeline.reuse.tokens import I64Array, Tokens
from neardup_pipeline.sketch.rabin import U64Array

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reuse_params (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reuse_sources (
    num INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    language TEXT,
    words BLOB NOT NULL,
    shingles BLOB NOT NULL,
    spans BLOB NOT NULL,
    text BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS reuse_fingerprints (
    hash INTEGER NOT NULL,
    source INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (hash, source, position)
) WITHOUT ROWID;
"""
_PARAMS_KEY = "fingerprint_params"
_BATCH = 500  # hashes per SELECT (SQLite allows 999 or more bound values)


class SqlitePassageIndex:
    """Sources and their fingerprints in an SQLite file; `create=False` opens an existing one
    read-only (a query never writes beside it). sqlite3's errors leave as the project's
    (index/sqlite/failures.py): a full disk, a file locked by another process, a damaged file."""

    AFRESH = "build it again with `neardup reuse index SOURCES.jsonl -o FILE`"

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise IndexFailure(f"no reuse index at {self.path} (build one with "
                               "`neardup reuse index SOURCES.jsonl -o FILE`)")
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT)
                self._db.executescript(_SCHEMA)
            else:
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                           timeout=BUSY_TIMEOUT)
            self._db.execute("SELECT 1 FROM reuse_sources LIMIT 1").fetchall()
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(reuse_sources)")}
        except (sqlite3.DatabaseError, OSError) as exc:
            if "file is not a database" in str(exc) or "no such table" in str(exc):
                raise IndexFailure(f"{self.path} is not a neardup reuse index: {exc}") from exc
            failure = translate(exc, str(self.path), self.AFRESH)
            if failure is None:
                raise
            raise failure from exc
        if "words" not in columns:
            self._db.close()
            raise IndexFailure(f"{self.path} is a reuse index of an earlier format (no word "
                               "hashes): build it again with `neardup reuse index`")
        self._read_only = not create
        self._languages: set[str | None] | None = None
        self._cache: dict[int, tuple[str, Tokens]] = {}

    @translated
    def ensure_params(self, params: Mapping[str, object]) -> None:
        wanted = json.dumps(dict(params), sort_keys=True)
        row = self._db.execute("SELECT value FROM reuse_params WHERE name = ?",
                               (_PARAMS_KEY,)).fetchone()
        if row is None and self._read_only:
            raise IndexFailure(f"{self.path} holds no sources yet (build it with "
                               "`neardup reuse index SOURCES.jsonl -o FILE`)")
        if row is None:
            self._db.execute("INSERT INTO reuse_params VALUES (?, ?)", (_PARAMS_KEY, wanted))
        elif row[0] != wanted:
            raise IndexParamsError(f"{self.path} was built with {row[0]}, not {wanted}: "
                                   "query it with the same settings, or rebuild it")

    @translated
    def add(self, doc_id: str, tokens: Tokens, fingerprints: I64Array, text: str) -> bool:
        spans = np.stack([tokens.starts, tokens.ends]).astype(np.int64)
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO reuse_sources (id, language, words, shingles, spans, text) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (doc_id, tokens.language, tokens.hashes.tobytes(), tokens.shingles.tobytes(),
             spans.tobytes(),
             zlib.compress(text.encode("utf-8"))),
        )
        if cursor.rowcount == 0:
            return False
        self._languages = None
        number = cursor.lastrowid
        hashes = tokens.shingles[fingerprints].view(np.int64)
        self._db.executemany("INSERT OR IGNORE INTO reuse_fingerprints VALUES (?, ?, ?)",
                             ((h, number, p) for h, p in zip(hashes.tolist(),
                                                             fingerprints.tolist(), strict=True)))
        return True

    @translated
    def languages(self) -> set[str | None]:
        if self._languages is None:
            rows = self._db.execute("SELECT DISTINCT language FROM reuse_sources")
            self._languages = {row[0] for row in rows}
        return self._languages

    @translated
    def postings(self, hashes: U64Array, language: str | None) -> Postings:
        signed = hashes.view(np.int64).tolist()
        where: dict[int, list[int]] = {}
        for n, h in enumerate(signed):
            where.setdefault(h, []).append(n)
        query: list[int] = []
        source: list[int] = []
        position: list[int] = []
        distinct = list(where)
        for at in range(0, len(distinct), _BATCH):
            chunk = distinct[at : at + _BATCH]
            rows = self._db.execute(
                "SELECT f.hash, f.source, f.position FROM reuse_fingerprints f "
                "JOIN reuse_sources s ON s.num = f.source WHERE s.language IS ? AND f.hash IN "
                f"({','.join('?' * len(chunk))})", [language, *chunk])
            for h, s, p in rows:
                for n in where[h]:
                    query.append(n)
                    source.append(s)
                    position.append(p)
        return Postings(np.array(query, dtype=np.int64), np.array(source, dtype=np.int64),
                        np.array(position, dtype=np.int64))

    @translated
    def source(self, number: int) -> tuple[str, Tokens]:
        found = self._cache.get(number)
        if found is None:
            row = self._db.execute("SELECT id, language, words, shingles, spans FROM "
                                   "reuse_sources WHERE num = ?", (number,)).fetchone()
            spans = np.frombuffer(row[4], dtype=np.int64).reshape(2, -1)
            tokens = Tokens(np.frombuffer(row[2], dtype=np.uint64),
                            np.frombuffer(row[3], dtype=np.uint64), spans[0], spans[1], row[1])
            found = self._cache[number] = (row[0], tokens)
            if len(self._cache) > 10_000:  # a run over many suspects: start again
                self._cache = {number: found}
        return found

    def texts(self, ids: set[str] | None = None) -> Iterator[tuple[str, str]]:
        """(id, text) of the stored sources, all or those of `ids`."""
        with sqlite_errors(str(self.path), self.AFRESH):
            for doc_id, text in self._db.execute(
                    "SELECT id, text FROM reuse_sources ORDER BY num"):
                if ids is None or doc_id in ids:
                    yield doc_id, zlib.decompress(text).decode("utf-8")

    @translated
    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM reuse_sources").fetchone()[0])

    @translated
    def close(self) -> None:
        try:
            self._db.commit()
        finally:
            self._db.close()

    def __enter__(self) -> SqlitePassageIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
