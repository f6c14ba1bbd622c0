"""Embedded, persistent index in one SQLite file (the default backend: no server).

Each entry's signatures (one blob, sqlite/signatures.py) and metadata (JSON) are stored in
`docs`, its lookup keys as band rows
(sqlite/bands.py), its cluster and similarity to the cluster's original in the small
`memberships` table as well, so a lookup groups its candidates by cluster without reading
signatures (verdict.py verifies a cluster through its original first). Simhash keys, once the
parameters are known, go to permuted tables instead (sqlite/simhash.py). Writes are committed in
batches (and at flush/close); lookups on the same connection see uncommitted writes, so
read-after-write holds without a commit per page. Several processes may share one file.
sqlite3's errors leave as the project's (sqlite/failures.py): a full disk, a file locked by
another process, a damaged file.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pybase64

from neardup_pipeline.errors import IndexParamsError
from neardup_pipeline.index.base import (
    ClosesOnExit,
    IndexEntry,
    Membership,
    close_at_exit,
    closed_before_exit,
    layout_changed,
    membership_from,
    membership_of,
    params_mismatch,
)
from neardup_pipeline.index.sqlite import df
from neardup_pipeline.index.sqlite.bands import (
    band_keys,
    delete_bands,
    doc_number,
    select_in,
    sharing,
    write_bands,
)
from neardup_pipeline.index.sqlite.cache import RECENT_ENTRY_BYTES, RECENT_MEMBERSHIPS, Recent
from neardup_pipeline.index.sqlite.clusters import SqliteClusters
from neardup_pipeline.index.sqlite.failures import sqlite_errors, translated
from neardup_pipeline.index.sqlite.schema import connect
from neardup_pipeline.index.sqlite.signatures import pack_signatures, unpack_signatures
from neardup_pipeline.index.sqlite.simhash import SimhashRows

V = TypeVar("V")


class SqliteIndex(ClosesOnExit):
    """Fingerprints in a SQLite file, safe to use from the pipeline's worker thread.

    Closed by a `with` block, by `close`, or else at interpreter exit: what it was given is
    committed even when its owner forgets to close it."""

    def __init__(
        self,
        path: str | Path,
        *,
        commit_every: int = 1000,
        commit_seconds: float = 2.0,
        merge_min: int = 10_000,
    ):
        self.path = str(path)
        self._db = connect(self.path)
        self._lock = threading.Lock()
        self._pending = 0
        self._last_commit = time.monotonic()
        self._commit_every = commit_every
        self._commit_seconds = commit_seconds
        self._merge_min = merge_min
        self._simhash: SimhashRows | None = None  # simhash lookups, once the layout is known
        self._keyed_simhash = False  # some simhash keys live in `bands` (see simhash_keyed)
        # Entries and memberships read or written lately: a long crawl's lookups fetch the same
        # originals page after page. Valid while no other connection commits (data_version).
        self._entry_cache: Recent[IndexEntry] = Recent(RECENT_ENTRY_BYTES)
        self._membership_cache: Recent[Membership] = Recent(RECENT_MEMBERSHIPS)
        self._data_version = -1  # as of the last _refresh
        self._checked_in_write = False  # _refresh ran while holding the open write transaction
        self._closed = False
        self.clusters = SqliteClusters(self._db, self._lock, self._count_write, self.path)
        try:
            with sqlite_errors(self.path):
                row = self._db.execute(
                    "SELECT value FROM params WHERE name = 'fingerprint'"
                ).fetchone()
                if row is not None:
                    with self._lock:
                        self._open_simhash(json.loads(row[0]))
        except BaseException:
            self._db.close()
            raise
        close_at_exit(self)

    @translated
    def ensure_params(self, params: Mapping[str, Any]) -> None:
        with self._lock:
            row = self._db.execute("SELECT value FROM params WHERE name = 'fingerprint'").fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO params (name, value) VALUES ('fingerprint', ?)",
                    (json.dumps(params, sort_keys=True),),
                )
                self._commit()
                self._open_simhash(params)
                return
        built = json.loads(row[0])
        diff = params_mismatch(built, params)
        if diff is not None and layout_changed(built, params):
            raise IndexParamsError(
                f"SQLite index {self.path!r} stores its fingerprints in a layout this version "
                f"does not read ({diff}); rebuild it as a new file from the pages: "
                f"`neardup dedup PAGES.jsonl -o OUT.jsonl --backend sqlite:NEW.sqlite` "
                "(PAGES.jsonl: the crawl's feed or any pages as dedup reads them), or crawl "
                "again into a new file"
            )
        if diff is not None:
            raise IndexParamsError(
                f"SQLite index {self.path!r} was built with other parameters ({diff}); "
                "use a new index file or the same settings"
            )
        with self._lock:  # recorded by another connection since this one opened: no tables yet
            self._open_simhash(json.loads(row[0]))

    @translated
    def add(self, entry: IndexEntry) -> None:
        with self._write_lock():
            simhash = self._simhash
            fingerprint = simhash.fingerprint(entry) if simhash is not None else None
            keyed = entry.keys if fingerprint is None else {
                method: keys for method, keys in entry.keys.items() if method != "simhash"
            }
            bands = band_keys(keyed)
            signatures = pack_signatures(entry.signatures)
            meta = json.dumps(_stored_meta(entry, band_keys({
                method: keys for method, keys in entry.keys.items() if method != "simhash"})))
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
            if simhash is not None:
                simhash.add(entry, fingerprint, replaced=not new)
            write_bands(self._db, entry.doc_id, doc, bands)
            self._entry_cache.put(entry.doc_id, IndexEntry(  # as a read of its row returns it
                entry.doc_id, dict(entry.signatures),
                {m: list(k) for m, k in entry.keys.items() if m == "simhash"}, dict(entry.meta),
            ), len(signatures) + len(meta))
            self._membership_cache.put(entry.doc_id, membership)
            self._pending += 1
            if (
                self._pending >= self._commit_every
                or time.monotonic() - self._last_commit > self._commit_seconds
            ):
                self._commit()
            if simhash is not None and simhash.tables.needs_merge():
                simhash.merge(self._commit)

    def _replace(
        self, doc_id: str, signatures: bytes, meta: str, bands: set[int]
    ) -> tuple[int | None, set[int]]:
        """Overwrite a stored entry and delete the band rows of its old keys the new `bands` lack.
        Returns the document's number (None: it has none yet) and the band rows still to insert.
        Lock and write lock held, caches current."""
        (old_meta,) = self._db.execute(
            "SELECT meta FROM docs WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        stored = json.loads(old_meta)
        old = unpacked_bands(stored.get(BANDS_META, ""))
        simhash_keys = stored.get(KEYS_META, {}).get("simhash")
        if simhash_keys and self._db.execute(
            "DELETE FROM simhash_keyed WHERE doc_id = ? RETURNING 1", (doc_id,)
        ).fetchall():  # its simhash keys were band rows, not the tables' (simhash_rows)
            old |= band_keys({"simhash": simhash_keys})
        self._db.execute(
            "UPDATE docs SET signatures = ?, meta = ? WHERE doc_id = ?", (signatures, meta, doc_id)
        )
        if not old and not bands:  # no rows before, none now: its number, if any, is not needed
            return None, bands
        doc = doc_number(self._db, doc_id)
        if doc is None:  # no rows before
            return None, bands
        delete_bands(self._db, doc, list(old - bands))
        return doc, bands - old

    @translated
    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        found: set[str] = set()
        with self._lock:
            self._refresh()
            if self._simhash is not None and "simhash" in keys:
                found |= self._simhash.candidates(keys)
                if not self._keyed_simhash:
                    keys = {m: v for m, v in keys.items() if m != "simhash"}
            found.update(sharing(self._db, list(band_keys(keys))))  # every method at once
        return found

    @translated
    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        return self._read_through(
            self._entry_cache, "SELECT doc_id, signatures, meta FROM docs WHERE doc_id IN ({})",
            ids, _entry_row,
        )

    @translated
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
        self, cache: Recent[V], sql: str, ids: Iterable[str],
        decode: Callable[[Any], tuple[V, int]],
    ) -> dict[str, V]:
        """The ids' values held in `cache`, the others read by `sql` (doc_id first, one "{}"
        for the id marks) through `decode` (value, cache weight) and kept; unknown ids left
        out."""
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            self._refresh()
            result = cache.pick(wanted)
            for row in select_in(self._db, sql, [i for i in wanted if i not in result]):
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
        if self._simhash is not None:
            self._simhash.read_back()
            if not self._keyed_simhash:  # another process may have written an odd entry
                self._keyed_simhash = self._simhash.any_keyed()

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

    def _count_write(self) -> None:
        """A cluster store write (lock held): committed with the index's next batch."""
        self._pending += 1

    @translated
    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    @translated
    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        words = list(word_hashes)
        with self._write_lock():
            df.add_document_frequencies(self._db, doc_id, words)
            self._pending += 1

    @translated
    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        with self._lock:
            return df.document_frequencies(self._db, word_hashes, exclude)

    @translated
    def document_count(self, exclude: str | None = None) -> int:
        with self._lock:
            return df.document_count(self._db, exclude)

    @translated
    def flush(self) -> None:
        with self._lock:
            self._commit()
            if self._simhash is not None and self._simhash.tables.needs_merge():
                self._simhash.merge(self._commit)

    @translated
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            closed_before_exit(self)
            self._commit()
            if self._simhash is not None:
                tables = self._simhash.tables
                # the next open replays at most merge_min rows from SQL into the delta
                if tables.pending >= tables.merge_min:
                    self._simhash.merge(self._commit)
                tables.close()
            self._db.close()

    def _open_simhash(self, params: Mapping[str, Any]) -> None:
        """Simhash tables for the layout of `params` (none without simhash), once. Lock held."""
        if self._simhash is not None:
            return
        simhash = SimhashRows.open(self._db, self.path, params, self._merge_min)
        if simhash is None:
            return
        self._simhash = simhash
        self._keyed_simhash = simhash.adopt_keyed()
        self._commit()

    def _commit(self) -> None:
        self._checked_in_write = False  # first: a failed commit may leave no transaction open
        self._db.commit()
        self._pending = 0
        self._last_commit = time.monotonic()


def _entry_row(row: Any) -> tuple[IndexEntry, int]:
    """A `docs` row as an entry, weighed by its stored JSON's size."""
    doc_id, signatures, meta = row
    meta_obj = json.loads(meta)
    keys = meta_obj.pop(KEYS_META, {})
    meta_obj.pop(BANDS_META, None)
    return IndexEntry(doc_id, unpack_signatures(signatures), keys, meta_obj), \
        len(signatures) + len(meta)


def _membership_row(row: Any) -> tuple[Membership, int]:
    """A `memberships` row as a membership (weight 1)."""
    doc_id, cluster, to_original = row
    return membership_from(doc_id, cluster, json.loads(to_original) if to_original else None), 1


def _json_or_null(value: object) -> str | None:
    return None if value is None else json.dumps(value)


# What a `docs` row's meta holds beside the entry's own: its band rows (their 64-bit values,
# base64), so that a replaced entry's rows are found, and its simhash keys, which the tables
# (sqlite/simhash.py) may take over. Other keys are not kept: the methods make them again from
# the signatures (the deduplicator's `keyed`).
BANDS_META = "_bands"
KEYS_META = "_keys"


def _stored_meta(entry: IndexEntry, bands: set[int]) -> dict[str, Any]:
    meta = {**entry.meta, BANDS_META: packed_bands(bands)}
    if "simhash" in entry.keys:
        meta[KEYS_META] = {"simhash": entry.keys["simhash"]}
    return meta


def packed_bands(bands: set[int]) -> str:
    return pybase64.b64encode_as_string(np.array(sorted(bands), "<i8").tobytes())


def unpacked_bands(text: str) -> set[int]:
    return set(np.frombuffer(pybase64.b64decode(text), "<i8").tolist())
