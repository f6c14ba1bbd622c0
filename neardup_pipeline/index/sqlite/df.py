"""Document frequency (the rarewords method) in the SQLite index file.

`df` holds a count per word hash (as a signed 64-bit integer), `df_docs` each counted document's
distinct words as one packed blob, so a re-add subtracts the old words first, and `df_count` the
number of counted documents. All change in the writer's transaction: SQLite serialises writers,
so two processes never lose a count. The caller holds its lock and commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import numpy as np

from neardup_pipeline.index.sqlite.bands import select_in


def add_document_frequencies(
    db: sqlite3.Connection, doc_id: str, word_hashes: Iterable[int]
) -> None:
    """Count the document's distinct words, replacing the words it was counted with before."""
    words = np.unique(np.fromiter((int(w) for w in word_hashes), dtype=np.uint64))
    new = words.view(np.int64).tolist()
    # A write first (DELETE ... RETURNING): the transaction holds the write lock before it reads
    # the old words, so no other process can change them in between.
    old = db.execute("DELETE FROM df_docs WHERE doc_id = ? RETURNING words", (doc_id,)).fetchall()
    if not old:  # a document new to DF: COUNT(*) would scan the table on every lookup
        db.execute(
            "INSERT INTO df_count (id, n) VALUES (0, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1"
        )
    else:
        gone = np.frombuffer(old[0][0], dtype="<i8").tolist()
        db.executemany("UPDATE df SET n = n - 1 WHERE word = ?", _rows(gone))
        db.execute("DELETE FROM df WHERE n <= 0")
    db.executemany(
        "INSERT INTO df (word, n) VALUES (?, 1) ON CONFLICT (word) DO UPDATE SET n = n + 1",
        _rows(new),
    )
    db.execute(
        "INSERT INTO df_docs (doc_id, words) VALUES (?, ?)",
        (doc_id, words.view(np.int64).astype("<i8").tobytes()),
    )


def document_frequencies(
    db: sqlite3.Connection, word_hashes: Iterable[int], exclude: str | None = None
) -> dict[int, int]:
    """DF of every given word among the counted documents, `exclude` left out."""
    wanted = list(dict.fromkeys(int(w) for w in word_hashes))
    signed = np.array(wanted, dtype=np.uint64).view(np.int64).tolist()
    found: dict[int, int] = dict(select_in(db, "SELECT word, n FROM df WHERE word IN ({})", signed))
    own: set[int] = set()
    if exclude is not None:
        row = db.execute("SELECT words FROM df_docs WHERE doc_id = ?", (exclude,)).fetchone()
        if row is not None:
            own = set(np.frombuffer(row[0], dtype="<i8").tolist())
    return {w: found.get(s, 0) - (s in own) for w, s in zip(wanted, signed, strict=True)}


def document_count(db: sqlite3.Connection, exclude: str | None = None) -> int:
    """Documents counted in DF, `exclude` left out."""
    row = db.execute("SELECT n FROM df_count WHERE id = 0").fetchone()
    n = int(row[0]) if row else 0
    if exclude is not None and db.execute(
        "SELECT 1 FROM df_docs WHERE doc_id = ?", (exclude,)
    ).fetchone():
        n -= 1
    return n


def _rows(values: list[int]) -> list[tuple[int]]:
    return [(v,) for v in values]
