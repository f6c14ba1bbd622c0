"""A local SQLite spool for what the shared index could not take while it was unavailable.

Two kinds of rows, replayed in order when the server answers again (this crawl or a later one):
- `fingerprints`: pages that passed `unchecked` (their encoded signatures and keys). Replay checks
  each against the index as it then is (a late duplicate is logged and counted; its item is long
  gone) and records it, so later pages are compared with it.
- `actions`: bulk actions still buffered when the crawl closed with the server gone; replay sends
  them as they are.
The parameters digest of the fingerprints is kept: a spool written with other settings is refused,
never replayed into an index it does not fit. SQLite in WAL mode: a crash loses no committed row.
The file is created when the first row is spooled: a crawl that never needed it leaves nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.utils.project import data_path

from neardup_pipeline.errors import ConfigError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fingerprints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_id TEXT NOT NULL, url TEXT,
    body TEXT NOT NULL, spooled REAL NOT NULL);
CREATE TABLE IF NOT EXISTS actions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL, spooled REAL NOT NULL);
"""


@dataclass(frozen=True)
class SpooledPage:
    """One unchecked page: what its fingerprint was, in stored (JSON) form."""

    seq: int
    doc_id: str
    url: str | None
    signatures: dict[str, Any]
    keys: dict[str, list[str]]
    language: str | None
    word_count: int
    content_hash: str


def spool_location(path: str | Path) -> Path:
    """Where a configured spool path lies: a relative one in Scrapy's project data folder
    (`.scrapy/`, like HTTPCACHE_DIR), never in whatever folder the crawl was started from."""
    return Path(data_path(path))


def params_digest(params: Mapping[str, Any]) -> str:
    """A short digest of fingerprint parameters (a spool fits only an index with the same)."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


class Spool:
    """Fingerprints and bulk actions waiting for the shared index; one writer thread at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._digest: str | None = None  # the bound parameters, written with the first row
        if self.path.exists():  # an earlier crawl's spool, to replay
            self._open()

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            if self._digest is not None:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('params', ?)", (self._digest,))
            db.commit()
            self._db = db
        return self._db

    def bind(self, params: Mapping[str, Any]) -> None:
        """Record the parameters of the fingerprints spooled here; refuse a spool of others."""
        digest = self._digest = params_digest(params)
        if self._db is None:
            return  # nothing spooled yet: recorded when the file is created
        row = self._db.execute("SELECT value FROM meta WHERE key = 'params'").fetchone()
        if row is not None and row[0] != digest and self.pending():
            raise ConfigError(
                f"the spool {self.path} holds fingerprints made with other settings "
                f"(digest {row[0]}, now {digest}): replay it with those settings or remove it"
            )
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('params', ?)", (digest,))
        self._db.commit()

    def add_page(
        self,
        doc_id: str,
        url: str | None,
        signatures: Mapping[str, Any],
        keys: Mapping[str, list[str]],
        *,
        language: str | None = None,
        word_count: int = 0,
        content_hash: str = "",
    ) -> None:
        body = json.dumps({"signatures": signatures, "keys": keys, "language": language,
                           "word_count": word_count, "content_hash": content_hash})
        db = self._open()
        with db:
            db.execute(
                "INSERT INTO fingerprints (doc_id, url, body, spooled) VALUES (?, ?, ?, ?)",
                (doc_id, url, body, time.time()),
            )

    def add_actions(self, actions: list[dict[str, Any]]) -> None:
        db = self._open()
        with db:
            db.executemany(
                "INSERT INTO actions (body, spooled) VALUES (?, ?)",
                [(json.dumps(a), time.time()) for a in actions],
            )

    def pages(self) -> Iterator[SpooledPage]:
        """Spooled pages in the order they were seen (a snapshot: rows added later wait)."""
        if self._db is None:
            return
        rows = self._db.execute(
            "SELECT seq, doc_id, url, body FROM fingerprints ORDER BY seq"
        ).fetchall()
        for seq, doc_id, url, body in rows:
            data = json.loads(body)
            yield SpooledPage(int(seq), str(doc_id), url, dict(data["signatures"]),
                              {k: list(v) for k, v in data["keys"].items()}, data.get("language"),
                              int(data.get("word_count") or 0), str(data.get("content_hash", "")))

    def actions(self) -> list[tuple[int, dict[str, Any]]]:
        if self._db is None:
            return []
        rows = self._db.execute("SELECT seq, body FROM actions ORDER BY seq").fetchall()
        return [(int(seq), json.loads(body)) for seq, body in rows]

    def remove_pages(self, seqs: list[int]) -> None:
        if self._db is None or not seqs:
            return
        with self._db:
            self._db.executemany("DELETE FROM fingerprints WHERE seq = ?", [(s,) for s in seqs])

    def remove_actions(self, seqs: list[int]) -> None:
        if self._db is None or not seqs:
            return
        with self._db:
            self._db.executemany("DELETE FROM actions WHERE seq = ?", [(s,) for s in seqs])

    def pending(self) -> int:
        """Rows waiting (pages + actions)."""
        if self._db is None:
            return 0
        pages = self._db.execute("SELECT COUNT(*) FROM fingerprints").fetchone()[0]
        actions = self._db.execute("SELECT COUNT(*) FROM actions").fetchone()[0]
        return int(pages) + int(actions)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
