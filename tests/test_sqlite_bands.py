"""The SQLite backend's band table (hashed lookup keys, no doc-id index): the same candidates as
the reference MemoryIndex, no stale rows after a replacement, files of another layout refused,
and caches that follow other connections' commits. Real SQLite files throughout."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from neardup_pipeline import NearDupConfig
from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index import IndexEntry, MemoryIndex, SqliteIndex
from neardup_pipeline.index.base import Membership, memberships
from neardup_pipeline.index.sqlite.bands import band_key
from neardup_pipeline.methods.simhash import block_keys

PARAMS = Fingerprinter(NearDupConfig(methods=("simhash", "bag"))).params()

def keyed(doc_id: str, fingerprint: int | None = None, **keys: Sequence[str]) -> IndexEntry:
    """An entry with the given keys; with a fingerprint, its simhash signature and the layout's
    block keys (the tables' kind) unless `simhash` keys are given (odd ones: band rows)."""
    signatures: dict[str, object] = {"bag": f"sig-{doc_id}"}
    all_keys = {method: list(values) for method, values in keys.items()}
    if fingerprint is not None:
        signatures["simhash"] = f"{fingerprint:016x}"
        all_keys.setdefault("simhash", block_keys(fingerprint))
    return IndexEntry(doc_id, signatures, all_keys, {"cluster": doc_id})


def random_entries(rng: random.Random, n: int) -> list[IndexEntry]:
    """Entries drawing keys from small pools (so many share keys), a quarter of them re-adding
    an earlier id with other keys; a tenth with odd simhash keys, some with none, some with
    simhash keys only (no band rows)."""
    bag = [f"{band}:{rng.getrandbits(64):016x}" for band in range(21) for _ in range(12)]
    minhash = [f"{band}:{rng.getrandbits(32):08x}" for band in range(15) for _ in range(8)]
    base = [rng.getrandbits(64) for _ in range(30)]
    entries = []
    for i in range(n):
        doc_id = f"doc-{rng.randrange(i)}" if i > 10 and rng.random() < 0.25 else f"doc-{i}"
        keys: dict[str, list[str]] = {}
        if rng.random() < 0.9:
            keys["bag"] = rng.sample(bag, 21)
        if rng.random() < 0.5:
            keys["minhash"] = rng.sample(minhash, rng.randint(1, 15))
        fingerprint = None
        if not keys or rng.random() < 0.8:
            fingerprint = rng.choice(base) ^ (1 << rng.randrange(64))
            if rng.random() < 0.1:  # not the layout's keys of its signature: band rows
                keys["simhash"] = [*block_keys(fingerprint)[:2], f"9:{rng.getrandbits(8):x}"]
        entries.append(keyed(doc_id, fingerprint, **keys))
    return entries


def random_queries(
    rng: random.Random, entries: Sequence[IndexEntry], n: int
) -> list[dict[str, list[str]]]:
    """Lookups mixing stored keys and unknown ones; every one names the bag, so a simhash key is
    looked up as a key (a simhash-only lookup asks the tables for neighbours instead)."""
    queries = []
    with_bag = [entry for entry in entries if "bag" in entry.keys]
    for _ in range(n):
        source = rng.choice(with_bag).keys
        query = {"bag": [*rng.sample(source["bag"], 5), f"0:{rng.getrandbits(64):016x}"]}
        for method in ("minhash", "simhash"):
            if method in source and rng.random() < 0.6:
                query[method] = list(source[method])
        queries.append(query)
    return queries


def band_rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM bands").fetchone()[0])


def expected_band_rows(entries: Iterable[IndexEntry]) -> int:
    """Rows the current entries need: every key but the simhash keys the tables answer."""
    latest = {entry.doc_id: entry for entry in entries}
    total = 0
    for entry in latest.values():
        keys = {
            (method, key) for method, values in entry.keys.items() for key in values
            if method != "simhash" or values != block_keys(int(entry.signatures["simhash"], 16))
        }
        total += len(keys)
    return total


def assert_same_as(index: SqliteIndex, oracle: MemoryIndex,
                   queries: Sequence[Mapping[str, Sequence[str]]]) -> None:
    """Candidates and stored entries exactly as the reference implementation has them."""
    for query in queries:
        assert index.candidates(query) == oracle.candidates(query), query
    ids = [f"doc-{i}" for i in range(500)]
    assert {i: (e.signatures, e.meta, e.keys.get("simhash")) for i, e in index.get(ids).items()} \
        == {i: (e.signatures, e.meta, e.keys.get("simhash")) for i, e in oracle.get(ids).items()}


def assert_file_holds(path: Path, entries: Iterable[IndexEntry], oracle: MemoryIndex,
                      queries: Sequence[Mapping[str, Sequence[str]]]) -> None:
    """The closed file at `path`: one band row per entry's key, and, opened again, the
    reference implementation's candidates, entries and count."""
    assert band_rows(path) == expected_band_rows(entries)
    reopened = SqliteIndex(path)
    assert_same_as(reopened, oracle, queries)
    assert reopened.count() == oracle.count()
    reopened.close()


def test_a_replaced_entry_is_no_candidate_for_its_old_keys(tmp_path: Path) -> None:
    path = tmp_path / "fp.sqlite"
    index = SqliteIndex(path)
    index.ensure_params(PARAMS)
    index.add(keyed("a", 0x1234, bag=["1:aa", "2:bb"], minhash=["m1"]))
    index.add(keyed("b", 0x1234, bag=["1:aa"]))
    index.add(keyed("a", 0xFFFF_FFFF_FFFF_0000, bag=["2:bb", "3:cc"]))  # old keys from the cache
    assert index.candidates({"bag": ["1:aa"]}) == {"b"}
    assert index.candidates({"minhash": ["m1"]}) == set()
    assert index.candidates({"bag": ["2:bb"]}) == index.candidates({"bag": ["3:cc"]}) == {"a"}
    assert index.candidates({"simhash": block_keys(0x1234), "bag": []}) == {"b"}
    index.close()
    assert band_rows(path) == 3  # b's one, a's two: nothing left of a's first keys
    index = SqliteIndex(path)  # a fresh cache: the old keys are read from the stored entry
    odd = block_keys(0xFFFF_FFFF_FFFF_0000)[:3]  # not all the layout's keys: band rows
    index.add(keyed("a", 0xFFFF_FFFF_FFFF_0000, bag=["4:dd"], simhash=odd))  # were the tables'
    assert index.candidates({"bag": ["2:bb"]}) == index.candidates({"bag": ["3:cc"]}) == set()
    assert index.candidates({"bag": ["4:dd"]}) == {"a"}
    assert index.candidates({"simhash": odd[2:], "bag": ["x"]}) == {"a"}
    index.add(keyed("a", 0x1234, bag=["4:dd"]))  # and back to the tables' kind
    assert index.candidates({"simhash": odd, "bag": ["x"]}) == set()
    assert index.candidates({"simhash": block_keys(0x1234), "bag": ["x"]}) == {"a", "b"}
    index.close()
    assert band_rows(path) == 2
    assert SqliteIndex(path).count() == 2


def test_candidates_are_those_of_the_memory_index(tmp_path: Path) -> None:
    """Random entries and replacements: exactly the ids sharing a key, as MemoryIndex finds them
    (a band-key collision would add one), in the writing connection, after reopening and from
    a second connection; the band table holds exactly the rows the current entries need."""
    rng = random.Random(3)
    entries = random_entries(rng, 400)
    oracle, path = MemoryIndex(), tmp_path / "fp.sqlite"
    index = SqliteIndex(path, commit_every=50, merge_min=64)
    index.ensure_params(PARAMS)
    for entry in entries:
        index.add(entry)
        oracle.add(entry)
    queries = random_queries(rng, entries, 300)
    assert_same_as(index, oracle, queries)
    assert len({len(index.candidates(q)) for q in queries}) > 5  # the lookups find some
    other = SqliteIndex(path)
    index.flush()
    assert_same_as(other, oracle, queries)
    index.close()
    other.close()
    assert_file_holds(path, entries, oracle, queries)


def test_band_keys_tell_methods_apart() -> None:
    assert band_key("bag", "1:ab") != band_key("minhash", "1:ab")
    assert band_key("bag", "1:ab") == band_key("bag", "1:ab")
    assert -(2**63) <= band_key("bag", "\ud800") < 2**63  # any text, a lone surrogate too


def test_simhash_keys_written_before_the_parameters_are_adopted(tmp_path: Path) -> None:
    """Before the parameters are known every simhash key is a band row; once they arrive, the
    tables take the keys that fit the layout, with the same candidates and entries throughout."""
    rng = random.Random(8)
    entries = random_entries(rng, 300)
    oracle, path = MemoryIndex(), tmp_path / "early.sqlite"
    index = SqliteIndex(path)
    for entry in entries:
        index.add(entry)
        oracle.add(entry)
    queries = random_queries(rng, entries, 200)
    assert_same_as(index, oracle, queries)
    index.ensure_params(PARAMS)
    assert_same_as(index, oracle, queries)
    changed = keyed("doc-0", 0x5555, bag=["1:after"])  # its old rows found by their keys
    for target in (index, oracle):
        target.add(changed)
    entries.append(changed)
    assert index.candidates({"bag": ["1:after"]}) == {"doc-0"}
    index.close()
    assert_file_holds(path, entries, oracle, queries)


def test_a_file_of_an_older_layout_is_refused(tmp_path: Path) -> None:
    """A file holding entries but no band key hash (lookup keys in a `keys` table) is named in
    the error, and left as it was."""
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE params (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE docs (doc_id TEXT PRIMARY KEY, signatures TEXT, meta TEXT)")
        db.execute("CREATE TABLE keys (method TEXT, key TEXT, doc_id TEXT)")
        db.execute("INSERT INTO docs VALUES ('a', '{}', '{}')")
    with pytest.raises(IndexFailure, match=r"old\.sqlite.*older layout"):
        SqliteIndex(path)
    with sqlite3.connect(path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "bands" not in tables


def test_a_file_whose_entries_hold_json_signatures_is_refused_with_the_rebuild(
        tmp_path: Path) -> None:
    """A file of the band layout written before signatures were kept as blobs: refused at open
    with the command that rebuilds it; an empty one of that layout is taken on."""
    path = tmp_path / "fp.sqlite"
    index = SqliteIndex(path)
    index.add(keyed("a", 0x1234, bag=["1:a"]))
    index.close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM params WHERE name = 'docs'")
    with pytest.raises(IndexFailure, match=r"older layout.*neardup dedup PAGES\.jsonl"):
        SqliteIndex(path)
    empty = tmp_path / "empty.sqlite"
    SqliteIndex(empty).close()
    with sqlite3.connect(empty) as db:
        db.execute("DELETE FROM params WHERE name = 'docs'")
    reopened = SqliteIndex(empty)
    reopened.add(keyed("b", 0x5678, bag=["1:b"]))
    assert reopened.get(["b"])["b"].signatures == keyed("b", 0x5678).signatures
    reopened.close()


def test_a_file_of_another_band_hash_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fp.sqlite"
    SqliteIndex(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE params SET value = 'blake2b' WHERE name = 'bands'")
    with pytest.raises(IndexFailure, match="blake2b"):
        SqliteIndex(path)


def test_caches_follow_a_commit_made_before_this_connection_writes(tmp_path: Path) -> None:
    """Another connection commits between this one's lookup and its next add. Inside the write
    transaction that add opens, lookups skip `PRAGMA data_version` (nobody else can commit
    then), so the add itself must have caught up: else the cached entry, membership and simhash
    rows of before that commit would be served until the next commit."""
    path = tmp_path / "shared.sqlite"
    first, second = SqliteIndex(path), SqliteIndex(path)
    for index in (first, second):
        index.ensure_params(PARAMS)
    try:
        second.add(keyed("x", 0x1111, bag=["1:old"]))
        second.flush()
        assert first.get(["x"])["x"].signatures["bag"] == "sig-x"  # now cached in `first`
        assert memberships(first, ["x"])["x"] == Membership("x")
        assert first.candidates({"bag": ["1:old"]}) == {"x"}
        replaced = IndexEntry("x", {"bag": "v2"}, {"bag": ["1:new"]}, {"cluster": "o"})
        second.add(replaced)
        second.add(keyed("z", 0xABCD_0000))  # simhash rows for the tables' delta
        second.flush()
        first.add(keyed("y", 0x2222, bag=["1:y"]))  # opens first's write transaction
        got = first.get(["x"])["x"]  # the keys are searched, not given back
        assert (got.signatures, got.meta) == (replaced.signatures, replaced.meta)
        assert memberships(first, ["x"])["x"] == Membership("o")
        assert first.candidates({"bag": ["1:old"]}) == set()
        assert first.candidates({"bag": ["1:new"]}) == {"x"}
        assert first.candidates({"simhash": block_keys(0xABCD_0001)}) == {"z"}
        first.add(keyed("x", 0x3333, bag=["1:third"]))  # replaces second's version, not the first
        first.flush()
        assert second.candidates({"bag": ["1:new"]}) == set()
        assert second.candidates({"bag": ["1:third"]}) == {"x"}
        assert second.get(["x"])["x"].signatures == {"bag": "sig-x", "simhash": "0000000000003333"}
    finally:
        first.close()
        second.close()
    assert band_rows(path) == 2  # x's and y's bag key (z's simhash keys are the tables')
