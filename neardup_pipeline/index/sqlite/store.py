"""Embedded, persistent index in one SQLite file (the default backend: no server).

Document frequency (rarewords): `df` holds a count per word hash (as a signed 64-bit integer)
and `df_docs` each counted document's distinct words as one packed blob, so a re-add subtracts
the old words first. Both change in the writer's transaction: SQLite serialises writers, so two
processes never lose a count.

Lookup keys live in `bands` as (64-bit hash of method and key, document number): one B-tree of
small integer rows, no index by document (a replaced entry's rows are deleted by its old keys,
which its metadata keeps; see `band_key` for why 64 bits suffice). `doc_numbers` maps numbers
to doc ids; a document is numbered when it first has band rows. Signatures and metadata as JSON
beside the document row; each document's cluster, and its similarity to the cluster's original,
in the small `memberships` table as well, so a lookup groups its candidates by cluster without
reading signatures (verdict.py verifies a cluster through its original first). Writes are
committed in batches (and at flush/close); lookups on the same connection see uncommitted
writes, so read-after-write holds without a commit per page. A file written with the former
`keys` table (text keys and doc ids, each row stored twice) has its rows moved into `bands`
when opened, once.

Simhash (once the parameters are known): no key rows. `simhash_rows` keeps each document's
fingerprint under a never-reused row number (the durable log), and lookups go to permuted sorted
tables (index/permuted.py) in `<file>.simhash/` beside the database: a simhash-only lookup returns
the documents within distance k, a lookup that also names other methods every document sharing a
simhash key (the other methods' verification may use them, as on every backend). The tables hold
rows up to their `upto`; rows above it (added since, or by another process: `PRAGMA data_version`
tells) are read back into the in-memory delta, rows removed below it are listed in
`simhash_dead`. Tables that do not match the file (another database, a restored backup) are
rebuilt from `simhash_rows`, so the database file alone is the truth. Simhash keys the tables
cannot answer for (written before the parameters were known, or not the layout's keys of the
signature) are band rows, their documents listed in `simhash_keyed` for the tables to adopt.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import xxhash

from neardup_pipeline.errors import IndexFailure, IndexParamsError
from neardup_pipeline.index.base import (
    IndexEntry,
    Membership,
    membership_from,
    membership_of,
    params_mismatch,
)
from neardup_pipeline.index.sqlite.permuted import PermutedTables
from neardup_pipeline.methods.simhash import block_keys

_SCHEMA = """
CREATE TABLE IF NOT EXISTS params (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    doc_id TEXT PRIMARY KEY,
    signatures TEXT NOT NULL,
    meta TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS memberships (
    doc_id TEXT PRIMARY KEY,
    cluster TEXT NOT NULL,
    to_original TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS doc_numbers (n INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS bands (
    key INTEGER NOT NULL,
    doc INTEGER NOT NULL,
    PRIMARY KEY (key, doc)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS simhash_keyed (doc_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS df (word INTEGER PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS df_docs (doc_id TEXT PRIMARY KEY, words BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS df_count (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS simhash_rows (
    row INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL UNIQUE,
    fp INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS simhash_dead (row INTEGER PRIMARY KEY);
"""
V = TypeVar("V")
_BAND_HASH = "xxh3_64"  # recorded in params: the `bands` keys of a file depend on it
_LOOKUP_CHUNK = 500  # stays below SQLite's bound-parameter limit
# Page cache per connection (SQLite's default is 2 MB): the key B-tree's inserts land at random
# pages, and at 10,000 pages of a crawl a 2 MB cache sends half of them to the OS for a page.
_CACHE_KIB = 65_536
# WAL pages before a checkpoint copies them into the file (SQLite's default: 1,000 = 4 MB). Each
# checkpoint syncs the file; at a crawl's write rate the default synced every few commits.
_CHECKPOINT_PAGES = 10_000
# Kept between lookups: entries up to this many bytes of stored JSON (a 4,096-word bag is 44 KB,
# a typical page's 4 KB), and this many memberships.
_RECENT_ENTRY_BYTES = 32 * 1024 * 1024
_RECENT_MEMBERSHIPS = 16_384


class SqliteIndex:
    """Fingerprints in a SQLite file, safe to use from the pipeline's worker thread."""

    def __init__(
        self,
        path: str | Path,
        *,
        commit_every: int = 1000,
        commit_seconds: float = 2.0,
        merge_min: int = 10_000,
    ):
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
            self._db.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
            self._db.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_PAGES}")
            self._db.executescript(_SCHEMA)
            self._db.commit()
            _fill_memberships(self._db)
            _migrate_keys(self._db)
        except sqlite3.DatabaseError as exc:
            raise IndexFailure(f"cannot open SQLite index {self.path!r}: {exc}") from exc
        self._lock = threading.Lock()
        self._pending = 0
        self._last_commit = time.monotonic()
        self._commit_every = commit_every
        self._commit_seconds = commit_seconds
        self._merge_min = merge_min
        self._tables: PermutedTables | None = None  # simhash lookups, once the layout is known
        self._keyed_simhash = False  # some simhash keys live in `bands` (see simhash_keyed)
        self._seen = 0  # highest simhash row read back from the database
        # Entries and memberships read or written lately: a long crawl's lookups fetch the same
        # originals page after page. Valid while no other connection commits (data_version).
        self._entry_cache: _Recent[IndexEntry] = _Recent(_RECENT_ENTRY_BYTES)
        self._membership_cache: _Recent[Membership] = _Recent(_RECENT_MEMBERSHIPS)
        self._data_version = -1  # as of the last _refresh
        self._checked_in_write = False  # _refresh ran while holding the open write transaction
        row = self._db.execute("SELECT value FROM params WHERE name = 'fingerprint'").fetchone()
        if row is not None:
            with self._lock:
                self._open_tables(json.loads(row[0]))

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        with self._lock:
            row = self._db.execute("SELECT value FROM params WHERE name = 'fingerprint'").fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO params (name, value) VALUES ('fingerprint', ?)",
                    (json.dumps(params, sort_keys=True),),
                )
                self._commit()
                self._open_tables(params)
                return
        diff = params_mismatch(json.loads(row[0]), params)
        if diff is not None:
            raise IndexParamsError(
                f"SQLite index {self.path!r} was built with other parameters ({diff}); "
                "use a new index file or the same settings"
            )
        with self._lock:  # recorded by another connection since this one opened: no tables yet
            self._open_tables(json.loads(row[0]))

    def add(self, entry: IndexEntry) -> None:
        with self._write_lock():
            fingerprint = self._table_fingerprint(entry)
            keyed = entry.keys if fingerprint is None else {
                method: keys for method, keys in entry.keys.items() if method != "simhash"
            }
            bands = _band_keys(keyed)
            signatures, meta = json.dumps(entry.signatures), json.dumps(_keys_meta(entry))
            # A new doc id (the common case) costs this one statement; a known one is replaced.
            new = self._db.execute(
                "INSERT INTO docs (doc_id, signatures, meta) VALUES (?, ?, ?)"
                " ON CONFLICT (doc_id) DO NOTHING",
                (entry.doc_id, signatures, meta),
            ).rowcount == 1
            self._refresh()  # the INSERT took the write lock: no other commit until ours
            self._checked_in_write = True
            doc, bands = (None, bands) if new else self._replace(
                entry.doc_id, signatures, meta, bands
            )
            if fingerprint is None and "simhash" in entry.keys:
                self._db.execute(
                    "INSERT OR IGNORE INTO simhash_keyed (doc_id) VALUES (?)", (entry.doc_id,)
                )
                self._keyed_simhash = True
            membership = membership_of(entry)
            self._db.execute(
                "INSERT OR REPLACE INTO memberships (doc_id, cluster, to_original)"
                " VALUES (?, ?, ?)",
                (entry.doc_id, membership.cluster,
                 _json_or_null(entry.meta.get("to_original"))),
            )
            if self._tables is not None:
                self._table_add(entry, fingerprint, replaced=not new)
            self._write_bands(entry.doc_id, doc, bands)
            self._entry_cache.put(entry.doc_id, IndexEntry(
                entry.doc_id, dict(entry.signatures), {m: list(k) for m, k in entry.keys.items()},
                dict(entry.meta),
            ), len(signatures) + len(meta))
            self._membership_cache.put(entry.doc_id, membership)
            self._pending += 1
            if (
                self._pending >= self._commit_every
                or time.monotonic() - self._last_commit > self._commit_seconds
            ):
                self._commit()
            if self._tables is not None and self._tables.needs_merge():
                self._merge()

    def _replace(
        self, doc_id: str, signatures: str, meta: str, bands: set[int]
    ) -> tuple[int | None, set[int]]:
        """Overwrite a stored entry and delete the band rows of its old keys the new `bands` lack.
        Returns the document's number (None: it has none yet) and the band rows still to insert.
        Lock and write lock held, caches current."""
        cached = self._entry_cache.get(doc_id)
        if cached is not None:
            old_keys = cached.keys
        else:
            (old_meta,) = self._db.execute(
                "SELECT meta FROM docs WHERE doc_id = ?", (doc_id,)
            ).fetchone()
            old_keys = json.loads(old_meta).get("_keys", {})
        if "simhash" in old_keys and not self._db.execute(
            "DELETE FROM simhash_keyed WHERE doc_id = ? RETURNING 1", (doc_id,)
        ).fetchall():  # its simhash keys were the tables' (simhash_rows), not band rows
            old_keys = {method: keys for method, keys in old_keys.items() if method != "simhash"}
        self._db.execute(
            "UPDATE docs SET signatures = ?, meta = ? WHERE doc_id = ?", (signatures, meta, doc_id)
        )
        old = _band_keys(old_keys)
        if not old and not bands:  # no rows before, none now: its number, if any, is not needed
            return None, bands
        doc = self._doc_number(doc_id)
        if doc is None:  # no rows before
            return None, bands
        _delete_bands(self._db, doc, list(old - bands))
        return doc, bands - old

    def _write_bands(self, doc_id: str, doc: int | None, bands: set[int]) -> None:
        """Insert a document's band rows, numbering it first when it has no number yet."""
        if not bands:
            return
        if doc is None:
            (doc,) = self._db.execute(
                "INSERT INTO doc_numbers (doc_id) VALUES (?) RETURNING n", (doc_id,)
            ).fetchone()
        _insert_bands(self._db, doc, list(bands))

    def _doc_number(self, doc_id: str) -> int | None:
        """A stored document's number in `bands`, if it has one."""
        row = self._db.execute("SELECT n FROM doc_numbers WHERE doc_id = ?", (doc_id,)).fetchone()
        return None if row is None else int(row[0])

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        found: set[str] = set()
        with self._lock:
            self._refresh()
            if self._tables is not None and "simhash" in keys:
                found |= self._table_candidates(keys)
                if not self._keyed_simhash:
                    keys = {m: v for m, v in keys.items() if m != "simhash"}
            found.update(_sharing(self._db, list(_band_keys(keys))))  # every method at once
        return found

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        return self._read_through(
            self._entry_cache, "SELECT doc_id, signatures, meta FROM docs WHERE doc_id IN ({})",
            ids, _entry_row,
        )

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        """Each id's membership from its own small table: grouping a lookup's candidates reads
        neither signatures nor the metadata JSON (a column after them in `docs` would be read
        through the signatures' overflow pages)."""
        return self._read_through(
            self._membership_cache,
            "SELECT doc_id, cluster, to_original FROM memberships WHERE doc_id IN ({})",
            ids, _membership_row,
        )

    def _read_through(
        self, cache: _Recent[V], sql: str, ids: Iterable[str],
        decode: Callable[[Any], tuple[V, int]],
    ) -> dict[str, V]:
        """The ids' values held in `cache`, the others read by `sql` (doc_id first, one "{}"
        for the id marks) through `decode` (value, cache weight) and kept; unknown ids left
        out."""
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            self._refresh()
            result = cache.pick(wanted)
            for row in _select_in(self._db, sql, [i for i in wanted if i not in result]):
                value, weight = decode(row)
                result[row[0]] = cache.put(row[0], value, weight)
        return result

    def _refresh(self) -> None:
        """Catch up with other connections' commits, when `PRAGMA data_version` says there were
        any: forget the cached entries and memberships (their writes may have replaced them),
        read back their simhash rows. Lock held.

        Not asked again inside a write transaction that has asked once: while this connection
        holds the write lock no other can commit, and its own commits leave data_version as it
        is. One query per lookup call otherwise, and none at all between a page's add and the
        next commit.
        """
        if self._checked_in_write and self._db.in_transaction:
            return
        version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
        if version == self._data_version:
            return
        self._data_version = version
        self._entry_cache.clear()
        self._membership_cache.clear()
        if self._tables is not None:
            self._read_back()
            if not self._keyed_simhash:  # another process may have written an odd entry
                self._keyed_simhash = self._db.execute(
                    "SELECT 1 FROM simhash_keyed LIMIT 1"
                ).fetchone() is not None

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """The lock, for a call that writes. A failed write may have ended the transaction
        (SQLite rolls back on some errors), so the next call asks data_version again."""
        with self._lock:
            try:
                yield
            except BaseException:
                self._checked_in_write = False
                raise

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        words = np.unique(np.fromiter((int(w) for w in word_hashes), dtype=np.uint64))
        new = words.view(np.int64).tolist()
        with self._write_lock():
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
            found.update(_select_in(self._db, "SELECT word, n FROM df WHERE word IN ({})", signed))
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
            if self._tables is not None and self._tables.needs_merge():
                self._merge()

    def close(self) -> None:
        with self._lock:
            self._commit()
            if self._tables is not None:
                # the next open replays at most merge_min rows from SQL into the delta
                if self._tables.pending >= self._tables.merge_min:
                    self._merge()
                self._tables.close()
            self._db.close()

    # ------------------------------------------------------------------ simhash tables

    def _open_tables(self, params: Mapping[str, Any]) -> None:
        """Permuted tables for the simhash layout of `params` (none without simhash)."""
        methods = params.get("methods")
        simhash = methods.get("simhash") if isinstance(methods, Mapping) else None
        if not isinstance(simhash, Mapping) or self._tables is not None:
            return
        tag = self._db.execute("SELECT value FROM params WHERE name = 'simhash_tables'").fetchone()
        if tag is None:  # names this database in the tables' manifest
            tag = (uuid.uuid4().hex,)
            self._db.execute("INSERT INTO params (name, value) VALUES ('simhash_tables', ?)", tag)
        directory = None if self.path == ":memory:" else Path(self.path).expanduser()
        tables = PermutedTables(
            int(simhash.get("blocks", 4)),
            int(simhash.get("k", 3)),
            directory.with_name(directory.name + ".simhash") if directory else None,
            tag=str(tag[0]),
            merge_min=self._merge_min,
        )
        issued = self._db.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'simhash_rows'"
        ).fetchone()
        if tables.upto > (int(issued[0]) if issued else 0):  # tables ahead of the file: stale
            tables.reset()
        self._tables = tables
        for (row,) in self._db.execute(
            "SELECT row FROM simhash_dead WHERE row <= ?", (tables.upto,)
        ).fetchall():
            tables.remove(row)
        self._seen = tables.upto
        self._read_back()
        self._adopt_keyed()
        self._commit()

    def _table_fingerprint(self, entry: IndexEntry) -> int | None:
        """The entry's simhash, when the tables can answer for it: its keys are exactly the
        layout's keys of its signature (anything else goes to `bands`, looked up as before)."""
        tables = self._tables
        keys, signature = entry.keys.get("simhash"), entry.signatures.get("simhash")
        if tables is None or keys is None or not isinstance(signature, str):
            return None
        try:
            fingerprint = int(signature, 16)
        except ValueError:
            return None
        if not 0 <= fingerprint < 1 << 64:
            return None
        expected = block_keys(fingerprint, tables.blocks, tables.k)
        return fingerprint if sorted(keys) == sorted(expected) else None

    def _table_add(
        self, entry: IndexEntry, fingerprint: int | None, *, replaced: bool = True
    ) -> None:
        """Store the entry's fingerprint as a new row, its old row (if `replaced`) tombstoned. A
        doc id new to `docs` has no row: they are written together."""
        assert self._tables is not None
        for (old,) in self._db.execute(
            "DELETE FROM simhash_rows WHERE doc_id = ? RETURNING row", (entry.doc_id,)
        ).fetchall() if replaced else ():
            if old <= self._tables.upto:
                self._db.execute("INSERT OR IGNORE INTO simhash_dead (row) VALUES (?)", (old,))
            self._tables.remove(old)
        if fingerprint is not None:
            (row,) = self._db.execute(
                "INSERT INTO simhash_rows (doc_id, fp) VALUES (?, ?) RETURNING row",
                (entry.doc_id, _signed(fingerprint)),
            ).fetchone()
            self._tables.add(row, fingerprint)

    def _table_candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        """Exact neighbours for a simhash-only lookup, else every row sharing a simhash key."""
        tables = self._tables
        assert tables is not None
        pairs, fingerprint = tables.decode_keys(keys["simhash"])
        alone = not any(values for method, values in keys.items() if method != "simhash")
        rows = tables.near(fingerprint) if alone and fingerprint is not None else tables.sharing(
            pairs
        )
        return {doc_id for (doc_id,) in _select_in(
            self._db, "SELECT doc_id FROM simhash_rows WHERE row IN ({})", rows
        )}

    def _read_back(self) -> None:
        """Read back simhash rows other connections committed since we last looked."""
        assert self._tables is not None
        found = self._db.execute(
            "SELECT row, fp FROM simhash_rows WHERE row > ? ORDER BY row", (self._seen,)
        ).fetchall()
        if not found:
            return
        rows = np.array([r for r, _ in found], dtype=np.int64)
        fingerprints = np.array([f for _, f in found], dtype=np.int64).view(np.uint64)
        fresh = np.array([not self._tables.in_delta(r) for r in rows.tolist()], dtype=bool)
        rows, fingerprints = rows[fresh], fingerprints[fresh]
        if rows.size >= self._tables.merge_threshold():  # a rebuild: sort in one go
            self._tables.merge(rows, fingerprints)
        else:
            self._tables.add_many(rows, fingerprints)
        self._seen = int(found[-1][0])

    def _adopt_keyed(self) -> None:
        """Move simhash keys written before the layout was known into the tables."""
        assert self._tables is not None
        ids = [r[0] for r in self._db.execute("SELECT doc_id FROM simhash_keyed").fetchall()]
        for doc_id in ids:
            row = self._db.execute(
                "SELECT signatures, meta FROM docs WHERE doc_id = ?", (doc_id,)
            ).fetchone()
            if row is None:
                continue
            entry = IndexEntry(doc_id, json.loads(row[0]), json.loads(row[1]).get("_keys", {}))
            fingerprint = self._table_fingerprint(entry)
            if fingerprint is not None:
                others = _band_keys({m: k for m, k in entry.keys.items() if m != "simhash"})
                simhash = _band_keys({"simhash": entry.keys["simhash"]})
                if (doc := self._doc_number(doc_id)) is not None:
                    _delete_bands(self._db, doc, list(simhash - others))  # shared rows stay
                self._db.execute("DELETE FROM simhash_keyed WHERE doc_id = ?", (doc_id,))
                self._table_add(entry, fingerprint)
        self._keyed_simhash = self._db.execute(
            "SELECT 1 FROM simhash_keyed LIMIT 1"
        ).fetchone() is not None

    def _merge(self) -> None:
        """Fold the delta into new sorted tables. Committed rows only (a crash must not leave
        the tables ahead of the file), every committed row below the new `upto` included."""
        assert self._tables is not None
        self._commit()
        self._read_back()
        gone = self._tables.tombstones()
        self._tables.merge()
        for start in range(0, len(gone), _LOOKUP_CHUNK):
            chunk = gone[start : start + _LOOKUP_CHUNK]
            self._db.execute(
                f"DELETE FROM simhash_dead WHERE row IN ({','.join('?' * len(chunk))})", chunk
            )
        self._commit()

    def _commit(self) -> None:
        self._checked_in_write = False  # first: a failed commit may leave no transaction open
        self._db.commit()
        self._pending = 0
        self._last_commit = time.monotonic()


def _chunks(values: Sequence[Any], size: int = _LOOKUP_CHUNK) -> Iterator[Sequence[Any]]:
    """`values` in slices of `size`, to stay below SQLite's bound-parameter limit."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _select_in(
    db: sqlite3.Connection, sql: str, values: Sequence[Any], *leading: Any
) -> Iterator[Any]:
    """Rows of `sql`, whose `IN ({})` takes `values`, in chunks below SQLite's bound-parameter
    limit; `leading` parameters come before each chunk."""
    for chunk in _chunks(values):
        yield from db.execute(sql.format(",".join("?" * len(chunk))), (*leading, *chunk))


def _sharing(db: sqlite3.Connection, keys: Sequence[int]) -> Iterator[str]:
    """Ids of the band rows of `keys`, repeats included (the caller's set drops them: DISTINCT
    measured slower). The keys as a VALUES list driving the join measured faster than
    `key IN (...)`, which SQLite first copies into an ephemeral index."""
    for chunk in _chunks(keys):
        for (doc_id,) in db.execute(
            "SELECT doc_numbers.doc_id FROM (VALUES " + ",".join(["(?)"] * len(chunk)) + ")"
            " AS wanted CROSS JOIN bands ON bands.key = wanted.column1"
            " CROSS JOIN doc_numbers ON doc_numbers.n = bands.doc",
            chunk,
        ):
            yield doc_id


def _insert_bands(db: sqlite3.Connection, doc: int, keys: Sequence[int]) -> None:
    """Band rows of one document: one INSERT over a VALUES list, measured faster than
    executemany's statement run per row."""
    for chunk in _chunks(keys, _LOOKUP_CHUNK - 1):
        db.execute(
            "INSERT OR IGNORE INTO bands (key, doc) SELECT column1, ? FROM (VALUES "
            + ",".join(["(?)"] * len(chunk)) + ")",
            (doc, *chunk),
        )


def _delete_bands(db: sqlite3.Connection, doc: int, keys: Sequence[int]) -> None:
    """Band rows of one document, found by primary key: there is no index by document."""
    for chunk in _chunks(keys, _LOOKUP_CHUNK - 1):
        db.execute(
            "DELETE FROM bands WHERE doc = ? AND key IN (" + ",".join("?" * len(chunk)) + ")",
            (doc, *chunk),
        )


def band_key(method: str, key: str) -> int:
    """The `bands` row key of one lookup key: 64 bits of xxh3 over the method and the key (NUL
    between: no method name holds one), as SQLite's signed INTEGER, 8 bytes in place of both
    texts.

    64 bits suffice: a lookup key meets another key's value among n stored ones with
    probability about n / 2**64 (5e-11 at a billion keys), and such a collision only adds a
    candidate, which verification judges on its signatures like any other. xxh3_64's output is
    fixed by its specification (xxHash 0.8), so a file's keys stay valid across versions; the
    params row `bands` names the hash, and a file naming another is refused.
    """
    return _signed(xxhash.xxh3_64_intdigest(f"{method}\0{key}".encode("utf-8", "surrogatepass")))


def _band_keys(keys: Mapping[str, Iterable[str]]) -> set[int]:
    """The distinct band keys of every method's keys (an entry's, or a lookup's)."""
    return {band_key(method, key) for method, values in keys.items() for key in values}


def _signed(value: int) -> int:
    """A 64-bit fingerprint as SQLite's signed INTEGER."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _rows(values: list[int]) -> list[tuple[int]]:
    return [(v,) for v in values]


class _Recent(dict[str, V]):
    """Values by key up to a total weight (1 each unless told); the oldest written goes first."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self._weights: dict[str, int] = {}
        self._total = 0

    def put(self, key: str, value: V, weight: int = 1) -> V:
        self._drop(key)
        while self and self._total + weight > self.limit:
            self._drop(next(iter(self)))
        self[key] = value
        self._weights[key] = weight
        self._total += weight
        return value

    def pick(self, keys: Iterable[str]) -> dict[str, V]:
        """The values held for `keys`."""
        return {key: value for key in keys if (value := self.get(key)) is not None}

    def clear(self) -> None:
        super().clear()
        self._weights.clear()
        self._total = 0

    def _drop(self, key: str) -> None:
        if self.pop(key, None) is not None:
            self._total -= self._weights.pop(key)


def _entry_row(row: Any) -> tuple[IndexEntry, int]:
    """A `docs` row as an entry, weighed by its stored JSON's size."""
    doc_id, signatures, meta = row
    meta_obj = json.loads(meta)
    keys = meta_obj.pop("_keys", {})
    return IndexEntry(doc_id, json.loads(signatures), keys, meta_obj), len(signatures) + len(meta)


def _membership_row(row: Any) -> tuple[Membership, int]:
    """A `memberships` row as a membership (weight 1)."""
    doc_id, cluster, to_original = row
    return membership_from(doc_id, cluster, json.loads(to_original) if to_original else None), 1


def _upgrade_once(
    db: sqlite3.Connection, name: str, value: str, upgrade: Callable[[sqlite3.Connection], None]
) -> str:
    """The params row `name`'s value. A file without it is upgraded first: `upgrade(db)` and the
    row written with `value`, in one transaction under the write lock, checked again inside it
    (another process opening the file at the same time upgrades it once)."""
    done = "SELECT value FROM params WHERE name = ?"
    row = db.execute(done, (name,)).fetchone()
    if row is not None:
        return str(row[0])
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute(done, (name,)).fetchone()
        if row is None:  # another process may have been first
            upgrade(db)
            db.execute("INSERT INTO params (name, value) VALUES (?, ?)", (name, value))
            row = (value,)
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return str(row[0])


def _fill_memberships(db: sqlite3.Connection) -> None:
    """Fill `memberships` of a file written before it existed from the documents' metadata,
    once (a params row marks it done), under the write lock."""
    _upgrade_once(db, "memberships", "1", _copy_memberships)


def _copy_memberships(db: sqlite3.Connection) -> None:
    db.execute(
        "INSERT OR IGNORE INTO memberships (doc_id, cluster, to_original)"
        " SELECT doc_id, COALESCE(json_extract(meta, '$.cluster'), doc_id),"
        " json_extract(meta, '$.to_original') FROM docs"
    )


def _migrate_keys(db: sqlite3.Connection) -> None:
    """Move a file's rows of the former `keys` table (method and key as text, every row stored
    twice with its doc-id index) into `bands`, once, under the write lock; the params row
    `bands` names the key hash and marks it done. Its simhash rows go to `bands` too, their
    documents listed in `simhash_keyed`: the tables adopt them when they open."""
    found = _upgrade_once(db, "bands", _BAND_HASH, _move_keys)
    if found != _BAND_HASH:
        raise sqlite3.DatabaseError(f"lookup keys hashed with {found!r}, not {_BAND_HASH!r}")


def _move_keys(db: sqlite3.Connection) -> None:
    """The former `keys` table's rows into `bands`, then the table dropped (its index too).
    Inside the caller's transaction."""
    old = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'keys'"
    if db.execute(old).fetchone() is None:
        return
    db.create_function("band_key", 2, band_key, deterministic=True)
    db.execute("INSERT OR IGNORE INTO doc_numbers (doc_id) SELECT doc_id FROM docs")
    db.execute(  # rows of a doc id `docs` lacks (none should exist) are left behind
        "INSERT OR IGNORE INTO bands (key, doc) SELECT band_key(keys.method, keys.key),"
        " doc_numbers.n FROM keys JOIN doc_numbers ON doc_numbers.doc_id = keys.doc_id"
    )
    db.execute(
        "INSERT OR IGNORE INTO simhash_keyed (doc_id) SELECT doc_id FROM keys"
        " WHERE method = 'simhash'"
    )
    db.execute("DROP TABLE keys")


def _json_or_null(value: object) -> str | None:
    return None if value is None else json.dumps(value)


def _keys_meta(entry: IndexEntry) -> dict[str, Any]:
    """Metadata with the entry's keys kept beside it, so get() returns the entry whole."""
    return {**entry.meta, "_keys": entry.keys}
