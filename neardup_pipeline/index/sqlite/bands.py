"""Lookup keys as rows of the `bands` table: (64-bit hash of method and key, document number).

One B-tree of small integer rows and no index by document: a replaced entry's rows are deleted
by its old keys, which its metadata keeps. `doc_numbers` maps numbers to doc ids; a document is
numbered when it first has band rows. The helpers here take the connection and run inside the
caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import xxhash

BAND_HASH = "xxh3_64"  # recorded in params: the `bands` keys of a file depend on it
LOOKUP_CHUNK = 500  # stays below SQLite's bound-parameter limit


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
    return signed(xxhash.xxh3_64_intdigest(f"{method}\0{key}".encode("utf-8", "surrogatepass")))


def band_keys(keys: Mapping[str, Iterable[str]]) -> set[int]:
    """The distinct band keys of every method's keys (an entry's, or a lookup's)."""
    return {band_key(method, key) for method, values in keys.items() for key in values}


def signed(value: int) -> int:
    """A 64-bit value as SQLite's signed INTEGER."""
    return value - (1 << 64) if value >= 1 << 63 else value


def chunks(values: Sequence[Any], size: int = LOOKUP_CHUNK) -> Iterator[Sequence[Any]]:
    """`values` in slices of `size`, to stay below SQLite's bound-parameter limit."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def select_in(
    db: sqlite3.Connection, sql: str, values: Sequence[Any], *leading: Any
) -> Iterator[Any]:
    """Rows of `sql`, whose `IN ({})` takes `values`, in chunks below SQLite's bound-parameter
    limit; `leading` parameters come before each chunk."""
    for chunk in chunks(values):
        yield from db.execute(sql.format(",".join("?" * len(chunk))), (*leading, *chunk))


def sharing(db: sqlite3.Connection, keys: Sequence[int]) -> Iterator[str]:
    """Ids of the band rows of `keys`, repeats included (the caller's set drops them: DISTINCT
    measured slower). The keys as a VALUES list driving the join measured faster than
    `key IN (...)`, which SQLite first copies into an ephemeral index."""
    for chunk in chunks(keys):
        for (doc_id,) in db.execute(
            "SELECT doc_numbers.doc_id FROM (VALUES " + ",".join(["(?)"] * len(chunk)) + ")"
            " AS wanted CROSS JOIN bands ON bands.key = wanted.column1"
            " CROSS JOIN doc_numbers ON doc_numbers.n = bands.doc",
            chunk,
        ):
            yield doc_id


def insert_bands(db: sqlite3.Connection, doc: int, keys: Sequence[int]) -> None:
    """Band rows of one document: one INSERT over a VALUES list, measured faster than
    executemany's statement run per row."""
    for chunk in chunks(keys, LOOKUP_CHUNK - 1):
        db.execute(
            "INSERT OR IGNORE INTO bands (key, doc) SELECT column1, ? FROM (VALUES "
            + ",".join(["(?)"] * len(chunk)) + ")",
            (doc, *chunk),
        )


def delete_bands(db: sqlite3.Connection, doc: int, keys: Sequence[int]) -> None:
    """Band rows of one document, found by primary key: there is no index by document."""
    for chunk in chunks(keys, LOOKUP_CHUNK - 1):
        db.execute(
            "DELETE FROM bands WHERE doc = ? AND key IN (" + ",".join("?" * len(chunk)) + ")",
            (doc, *chunk),
        )


def doc_number(db: sqlite3.Connection, doc_id: str) -> int | None:
    """A stored document's number in `bands`, if it has one."""
    row = db.execute("SELECT n FROM doc_numbers WHERE doc_id = ?", (doc_id,)).fetchone()
    return None if row is None else int(row[0])


def write_bands(db: sqlite3.Connection, doc_id: str, doc: int | None, keys: set[int]) -> None:
    """Insert a document's band rows, numbering it first when it has no number yet."""
    if not keys:
        return
    if doc is None:
        (doc,) = db.execute(
            "INSERT INTO doc_numbers (doc_id) VALUES (?) RETURNING n", (doc_id,)
        ).fetchone()
    insert_bands(db, doc, list(keys))
