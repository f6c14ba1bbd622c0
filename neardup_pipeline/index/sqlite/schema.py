"""The SQLite index file: its tables, connection settings, and the check that it is this layout.

`docs` holds each entry's signatures (sqlite/signatures.py) and metadata (JSON); `memberships`
each document's cluster and similarity to the cluster's original, so grouping candidates reads
no signatures;
`bands` and `doc_numbers` the lookup keys (sqlite/bands.py); `df`, `df_docs` and `df_count`
document frequency (sqlite/df.py); `simhash_rows`, `simhash_dead` and `simhash_keyed` the
simhash fingerprints behind the permuted tables (sqlite/simhash.py); `cluster_links`,
`cluster_canonicals` and `declarations` the cluster store (sqlite/clusters.py); `params` the
fingerprint parameters and the band key hash.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from neardup_pipeline.errors import ConfigError, IndexFailure
from neardup_pipeline.index.sqlite.bands import BAND_HASH
from neardup_pipeline.index.sqlite.failures import BUSY_TIMEOUT, translate
from neardup_pipeline.index.sqlite.spec import BACKEND_NAMES

# A `docs` row is a few KB: on 32 KB pages a page holds a dozen whole rows, where 4 KB pages
# leave about half of each page unused (measured on a 2,334-page file: 3,945 bytes a page
# against 5,835 after VACUUM).
PAGE_BYTES = 32768
DOCS_LAYOUT = "signatures blob 1"  # how `docs` rows hold an entry (sqlite/signatures.py)

SCHEMA = """
CREATE TABLE IF NOT EXISTS params (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    doc_id TEXT PRIMARY KEY,
    signatures BLOB NOT NULL,
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
CREATE TABLE IF NOT EXISTS cluster_links (name TEXT PRIMARY KEY, parent TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cluster_canonicals (
    root TEXT PRIMARY KEY,
    rank TEXT NOT NULL,
    doc_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS declarations (
    url TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    PRIMARY KEY (url, doc_id)
) WITHOUT ROWID;
"""
# Page cache per connection (SQLite's default is 2 MB): the key B-tree's inserts land at random
# pages, and at 10,000 pages of a crawl a 2 MB cache sends half of them to the OS for a page.
CACHE_KIB = 65_536
# WAL pages before a checkpoint copies them into the file (SQLite's default: 1,000 = 4 MB). Each
# checkpoint syncs the file; at a crawl's write rate the default synced every few commits.
CHECKPOINT_PAGES = 10_000


def require_folder(path: Path) -> None:
    """The index file's folder must exist: made on demand, a mistyped folder would start a new,
    empty index without a word, and nothing would be compared with the pages already seen."""
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(
            f"the folder of SQLite index {str(path)!r} {what} ({BACKEND_NAMES}): create the "
            "folder, or correct the path")


def connect(path: str) -> sqlite3.Connection:
    """An open connection to the index file at `path` (or ":memory:"), its tables created.

    Raises IndexFailure for a file SQLite cannot read (IndexDamaged), one another process holds
    locked (IndexLocked), a full disk (IndexDiskFull), or one written in another layout."""
    location = path if path == ":memory:" else str(Path(path).expanduser())
    if path != ":memory:":
        require_folder(Path(location))
    try:
        db = sqlite3.connect(
            location, check_same_thread=False, isolation_level="DEFERRED", timeout=BUSY_TIMEOUT
        )
    except sqlite3.DatabaseError as exc:
        raise _cannot_open(exc, location) from exc
    try:
        db.execute(f"PRAGMA page_size={PAGE_BYTES}")  # a new file's; an existing one keeps its own
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
        _create(db, path)
    except (sqlite3.DatabaseError, OSError) as exc:
        db.close()
        if isinstance(exc, OSError) and translate(exc, location) is None:
            raise
        raise _cannot_open(exc, location) from exc
    except BaseException:
        db.close()
        raise
    return db


def _cannot_open(exc: BaseException, path: str) -> IndexFailure:
    """The project's error for a file that cannot be opened: damaged, locked, disk full."""
    return translate(exc, path) or IndexFailure(f"cannot open SQLite index {path!r}: {exc}")


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that reads the index file at `path` and writes nothing beside it.

    A read-only connection to a WAL file creates `-wal` and `-shm` files it cannot remove. When
    no `-wal` file exists, no connection is writing the file (the last to close removes it), so
    it is opened immutable: read straight from the file, without those two. When one exists, a
    writer is at work (or left it behind) and its WAL holds pages the file lacks: read through
    it, read-only."""
    uri = path.resolve().as_uri()
    writer_at_work = path.with_name(path.name + "-wal").exists()
    return sqlite3.connect(f"{uri}?mode=ro" if writer_at_work else f"{uri}?immutable=1",
                           uri=True)


def _create(db: sqlite3.Connection, path: str) -> None:
    """Create the tables and record the band key hash, or refuse a file of another layout.

    A new file is created under the write lock, checked again inside it, so two processes
    opening it at once create it once; an existing one needs no lock (another connection may
    hold the write lock for a while)."""
    found = _band_hash(db)
    if found is None:
        db.execute("BEGIN IMMEDIATE")
        try:
            found = _band_hash(db)
            if found is None:
                if _holds_entries(db):
                    raise IndexFailure(
                        f"SQLite index {path!r} was written in an older layout this version "
                        "cannot read; index into a new file"
                    )
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO params (name, value) VALUES ('bands', ?)", (BAND_HASH,))
                db.execute("INSERT INTO params (name, value) VALUES ('docs', ?)", (DOCS_LAYOUT,))
                found = BAND_HASH
            db.commit()
        except BaseException:
            db.rollback()
            raise
    if found != BAND_HASH:
        raise IndexFailure(
            f"SQLite index {path!r} has lookup keys hashed with {found!r}, not {BAND_HASH!r}; "
            "index into a new file"
        )
    row = db.execute("SELECT value FROM params WHERE name = 'docs'").fetchone()
    if row is None and not _holds_entries(db):  # made empty by an earlier version
        db.execute("INSERT OR IGNORE INTO params (name, value) VALUES ('docs', ?)",
                   (DOCS_LAYOUT,))
        row = (DOCS_LAYOUT,)
    if (row[0] if row else None) != DOCS_LAYOUT:
        raise IndexFailure(
            f"SQLite index {path!r} stores its entries in an older layout this version cannot "
            "read; rebuild it as a new file from the pages: `neardup dedup PAGES.jsonl -o "
            "OUT.jsonl --backend sqlite:NEW.sqlite` (PAGES.jsonl: the crawl's feed or any pages "
            "as dedup reads them), or crawl again into a new file"
        )
    db.executescript(SCHEMA)  # a table missing from a file of this layout is created empty
    db.commit()


def _band_hash(db: sqlite3.Connection) -> str | None:
    """The band key hash the file records (None: a new file, or one of an older layout)."""
    if not _has_table(db, "params"):
        return None
    row = db.execute("SELECT value FROM params WHERE name = 'bands'").fetchone()
    return None if row is None else str(row[0])


def _holds_entries(db: sqlite3.Connection) -> bool:
    """Whether the file holds entries: a file without the band hash that does is older."""
    if _has_table(db, "keys"):
        return True
    if not _has_table(db, "docs"):
        return False
    return db.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone() is not None
