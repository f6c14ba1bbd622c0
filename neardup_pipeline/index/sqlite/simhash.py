"""Simhash lookups of the SQLite index: permuted tables beside the file, `simhash_rows` inside it.

Once the parameters are known, simhash keys get no band rows. `simhash_rows` keeps each
document's fingerprint under a never-reused row number (the durable log), and lookups go to
permuted sorted tables (sqlite/permuted.py) in `<file>.simhash/`: a simhash-only lookup returns
the documents within distance k, a lookup that also names other methods every document sharing a
simhash key (the other methods' verification may use them, as on every backend). The tables hold
rows up to their `upto`; rows above it (added since, or by another process) are read back into
the in-memory delta, rows removed below it are listed in `simhash_dead`. Tables that do not
match the file (another database, a restored backup) are rebuilt from `simhash_rows`, so the
database file alone is the truth. Simhash keys the tables cannot answer for (written before the
parameters were known, or not the layout's keys of the signature) are band rows, their documents
listed in `simhash_keyed` for the tables to adopt.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neardup_pipeline.index.base import IndexEntry
from neardup_pipeline.index.sqlite.bands import (
    LOOKUP_CHUNK,
    band_keys,
    delete_bands,
    doc_number,
    select_in,
    signed,
)
from neardup_pipeline.index.sqlite.permuted import PermutedTables
from neardup_pipeline.index.sqlite.signatures import unpack_signatures
from neardup_pipeline.methods.simhash import block_keys


class SimhashRows:
    """The permuted tables of one connection, kept in step with `simhash_rows`. The caller holds
    its lock around every call."""

    def __init__(self, db: sqlite3.Connection, tables: PermutedTables) -> None:
        self._db = db
        self.tables = tables
        self._seen = tables.upto  # highest simhash row read back from the database

    @classmethod
    def open(
        cls, db: sqlite3.Connection, path: str, params: Mapping[str, Any], merge_min: int
    ) -> SimhashRows | None:
        """The tables for the simhash layout of `params` (None without simhash), caught up with
        the file. Leaves writes for the caller to commit."""
        methods = params.get("methods")
        simhash = methods.get("simhash") if isinstance(methods, Mapping) else None
        if not isinstance(simhash, Mapping):
            return None
        tag = db.execute("SELECT value FROM params WHERE name = 'simhash_tables'").fetchone()
        if tag is None:  # names this database in the tables' manifest
            tag = (uuid.uuid4().hex,)
            db.execute("INSERT INTO params (name, value) VALUES ('simhash_tables', ?)", tag)
        directory = None if path == ":memory:" else Path(path).expanduser()
        tables = PermutedTables(
            int(simhash.get("blocks", 4)),
            int(simhash.get("k", 3)),
            directory.with_name(directory.name + ".simhash") if directory else None,
            tag=str(tag[0]),
            merge_min=merge_min,
        )
        issued = db.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'simhash_rows'"
        ).fetchone()
        if tables.upto > (int(issued[0]) if issued else 0):  # tables ahead of the file: stale
            tables.reset()
        for (row,) in db.execute(
            "SELECT row FROM simhash_dead WHERE row <= ?", (tables.upto,)
        ).fetchall():
            tables.remove(row)
        rows = cls(db, tables)
        rows.read_back()
        return rows

    def fingerprint(self, entry: IndexEntry) -> int | None:
        """The entry's simhash, when the tables can answer for it: its keys are exactly the
        layout's keys of its signature (anything else goes to `bands`)."""
        keys, signature = entry.keys.get("simhash"), entry.signatures.get("simhash")
        if keys is None or not isinstance(signature, str):
            return None
        try:
            fingerprint = int(signature, 16)
        except ValueError:
            return None
        if not 0 <= fingerprint < 1 << 64:
            return None
        expected = block_keys(fingerprint, self.tables.blocks, self.tables.k)
        return fingerprint if sorted(keys) == sorted(expected) else None

    def add(self, entry: IndexEntry, fingerprint: int | None, *, replaced: bool = True) -> None:
        """Store the entry's fingerprint as a new row, its old row (if `replaced`) tombstoned. A
        doc id new to `docs` has no row: they are written together."""
        for (old,) in self._db.execute(
            "DELETE FROM simhash_rows WHERE doc_id = ? RETURNING row", (entry.doc_id,)
        ).fetchall() if replaced else ():
            if old <= self.tables.upto:
                self._db.execute("INSERT OR IGNORE INTO simhash_dead (row) VALUES (?)", (old,))
            self.tables.remove(old)
        if fingerprint is not None:
            (row,) = self._db.execute(
                "INSERT INTO simhash_rows (doc_id, fp) VALUES (?, ?) RETURNING row",
                (entry.doc_id, signed(fingerprint)),
            ).fetchone()
            self.tables.add(row, fingerprint)

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        """Exact neighbours for a simhash-only lookup, else every row sharing a simhash key."""
        tables = self.tables
        pairs, fingerprint = tables.decode_keys(keys["simhash"])
        alone = not any(values for method, values in keys.items() if method != "simhash")
        rows = tables.near(fingerprint) if alone and fingerprint is not None else tables.sharing(
            pairs
        )
        return {doc_id for (doc_id,) in select_in(
            self._db, "SELECT doc_id FROM simhash_rows WHERE row IN ({})", rows
        )}

    def read_back(self) -> None:
        """Read back simhash rows other connections committed since we last looked."""
        found = self._db.execute(
            "SELECT row, fp FROM simhash_rows WHERE row > ? ORDER BY row", (self._seen,)
        ).fetchall()
        if not found:
            return
        rows = np.array([r for r, _ in found], dtype=np.int64)
        fingerprints = np.array([f for _, f in found], dtype=np.int64).view(np.uint64)
        fresh = np.array([not self.tables.in_delta(r) for r in rows.tolist()], dtype=bool)
        rows, fingerprints = rows[fresh], fingerprints[fresh]
        if rows.size >= self.tables.merge_threshold():  # a rebuild: sort in one go
            self.tables.merge(rows, fingerprints)
        else:
            self.tables.add_many(rows, fingerprints)
        self._seen = int(found[-1][0])

    def adopt_keyed(self) -> bool:
        """Move simhash keys written before the layout was known into the tables. Returns
        whether some simhash keys stay band rows (the tables cannot answer for them)."""
        ids = [r[0] for r in self._db.execute("SELECT doc_id FROM simhash_keyed").fetchall()]
        for doc_id in ids:
            row = self._db.execute(
                "SELECT signatures, meta FROM docs WHERE doc_id = ?", (doc_id,)
            ).fetchone()
            if row is None:
                continue
            entry = IndexEntry(doc_id, unpack_signatures(row[0]),
                               json.loads(row[1]).get("_keys", {}))
            fingerprint = self.fingerprint(entry)
            if fingerprint is not None:
                others = band_keys({m: k for m, k in entry.keys.items() if m != "simhash"})
                simhash = band_keys({"simhash": entry.keys["simhash"]})
                if (doc := doc_number(self._db, doc_id)) is not None:
                    delete_bands(self._db, doc, list(simhash - others))  # shared rows stay
                self._db.execute("DELETE FROM simhash_keyed WHERE doc_id = ?", (doc_id,))
                self.add(entry, fingerprint)
        return self.any_keyed()

    def any_keyed(self) -> bool:
        """Whether some document's simhash keys are band rows."""
        return self._db.execute("SELECT 1 FROM simhash_keyed LIMIT 1").fetchone() is not None

    def merge(self, commit: Callable[[], None]) -> None:
        """Fold the delta into new sorted tables. Committed rows only (a crash must not leave
        the tables ahead of the file), every committed row below the new `upto` included."""
        commit()
        self.read_back()
        gone = self.tables.tombstones()
        self.tables.merge()
        for start in range(0, len(gone), LOOKUP_CHUNK):
            chunk = gone[start : start + LOOKUP_CHUNK]
            self._db.execute(
                f"DELETE FROM simhash_dead WHERE row IN ({','.join('?' * len(chunk))})", chunk
            )
        commit()
