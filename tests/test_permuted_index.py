"""Permuted simhash tables against brute force, on their own and inside the SQLite backend."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from neardup_pipeline import Deduplicator, NearDupConfig
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index import MemoryIndex, SqliteIndex
from neardup_pipeline.index.sqlite.permuted import PermutedTables
from neardup_pipeline.methods.simhash import block_keys, block_layout
from tests.documents import near_copy_groups
from tests.index_entries import entry
from tests.verdicts import outcome

LAYOUTS = [(4, 3), (6, 3), (5, 2)]


def flip(fingerprint: int, bits: int, rng: random.Random) -> int:
    """`fingerprint` at Hamming distance exactly `bits`."""
    for bit in rng.sample(range(64), bits):
        fingerprint ^= 1 << bit
    return fingerprint


def corpus(rng: random.Random, n: int, k: int) -> dict[int, int]:
    """Random rows plus near copies of earlier ones at every distance 0..k+1."""
    fps: dict[int, int] = {}
    for row in range(1, n + 1):
        if row < n // 4 or rng.random() < 0.4:
            fps[row] = rng.getrandbits(64)
        else:
            fps[row] = flip(fps[rng.randrange(1, row)], rng.randint(0, k + 1), rng)
    return fps


def brute_near(fps: dict[int, int], query: int, k: int) -> list[int]:
    return sorted(row for row, fp in fps.items() if (fp ^ query).bit_count() <= k)


def brute_sharing(fps: dict[int, int], query: int, blocks: int, k: int) -> list[int]:
    """Rows sharing a block key: agreeing with the query on every block of one combination."""
    masks = [
        sum(((1 << width) - 1) << shift for shift, width in combo)
        for combo in block_layout(blocks, k)
    ]
    return sorted(
        r for r, fp in fps.items() if any((fp ^ query) & mask == 0 for mask in masks)
    )


def check_against_brute(
    tables: PermutedTables, fps: dict[int, int], rng: random.Random, queries: int = 60
) -> None:
    blocks, k = tables.blocks, tables.k
    stored = list(fps.values())
    for n in range(queries):
        # every exact distance 0..k+1 from a stored fingerprint, and random misses
        query = flip(rng.choice(stored), n % (k + 2), rng) if n % 5 else rng.getrandbits(64)
        assert tables.near(query) == brute_near(fps, query, k)
        pairs, spelled = tables.decode_keys(block_keys(query, blocks, k))
        assert spelled == query
        assert tables.sharing(pairs) == brute_sharing(fps, query, blocks, k)
        for distance in range(k + 1):
            assert tables.near(query, distance) == brute_near(fps, query, distance)


@pytest.mark.parametrize(("blocks", "k"), LAYOUTS)
def test_delta_merged_and_mixed_match_brute_force(blocks: int, k: int) -> None:
    rng = random.Random(blocks * 10 + k)
    fps = corpus(rng, 900, k)
    tables = PermutedTables(blocks, k, merge_min=1 << 30)
    for row, fp in fps.items():
        tables.add(row, fp)
    check_against_brute(tables, fps, rng)  # all in the delta
    tables.merge()
    assert tables.pending == 0 and tables.stored == len(fps)
    check_against_brute(tables, fps, rng)  # all in the sorted tables
    more = corpus(rng, 300, k)
    for row, fp in more.items():
        fps[row + 1000] = fp
        tables.add(row + 1000, fp)
    for row in rng.sample(sorted(fps), 120):  # tombstones in the tables, drops from the delta
        tables.remove(row)
        del fps[row]
    assert len(tables) == len(fps)
    check_against_brute(tables, fps, rng)  # mixed
    tables.merge()
    check_against_brute(tables, fps, rng)


def test_exact_boundary_k_and_k_plus_one() -> None:
    rng = random.Random(7)
    base = rng.getrandbits(64)
    tables = PermutedTables(4, 3)
    for distance in range(6):
        tables.add(distance + 1, flip(base, distance, rng))
    tables.merge()
    assert tables.near(base) == [1, 2, 3, 4]  # distances 0, 1, 2, 3 - not 4 or 5
    assert tables.near(base, 0) == [1]
    with pytest.raises(ValueError):
        tables.near(base, 4)


def test_keys_of_another_layout_spell_nothing() -> None:
    tables = PermutedTables(4, 3)
    assert tables.decode_keys(block_keys(0x9E37_79B9_7F4A_7C15, 6, 3))[1] is None
    assert tables.decode_keys(["0:ffff", "1:0"])[1] is None  # incomplete
    assert tables.decode_keys(["0:1", "1:0", "2:0", "3:0", "3:1"])[1] is None  # conflicting
    assert tables.decode_keys(["junk", "9:1", "0:0001"]) == ([], None)  # not canonical keys


def test_tables_persist_and_reopen_memory_mapped(tmp_path: Path) -> None:
    rng = random.Random(3)
    fps = corpus(rng, 2000, 3)
    tables = PermutedTables(4, 3, tmp_path / "t", tag="db1", merge_min=100)
    tables.add_many(list(fps), list(fps.values()))
    tables.merge()
    tables.remove(5)
    del fps[5]
    tables.merge()
    tables.close()
    reopened = PermutedTables(4, 3, tmp_path / "t", tag="db1")
    assert reopened.stored == len(fps) and reopened.upto == 2000
    assert sum(1 for _ in (tmp_path / "t").glob("*.npy")) == 2 * 4  # old generation removed
    assert reopened.nbytes() == len(fps) * 4 * (8 + 4)  # 4 tables x (uint64 + uint32 row)
    check_against_brute(reopened, fps, rng, queries=60)
    assert PermutedTables(4, 3, tmp_path / "t", tag="other-db").stored == 0
    assert PermutedTables(6, 3, tmp_path / "t", tag="db1").stored == 0


# ---------------------------------------------------------------------- inside SQLite

PARAMS = Fingerprinter(NearDupConfig(methods=("simhash",))).params()


def open_sqlite(path: Path, merge_min: int = 64) -> SqliteIndex:
    index = SqliteIndex(path, merge_min=merge_min)
    index.ensure_params(PARAMS)
    return index


def check_sqlite(index: SqliteIndex, fps: dict[str, int], rng: random.Random) -> None:
    by_row = {n: fp for n, fp in enumerate(fps.values())}
    ids = list(fps)
    for n in range(80):
        query = flip(rng.choice(list(fps.values())), n % 5, rng)
        near = {ids[r] for r in brute_near(by_row, query, 3)}
        assert index.candidates({"simhash": block_keys(query)}) == near
        sharing = {ids[r] for r in brute_sharing(by_row, query, 4, 3)}
        both = {"simhash": block_keys(query), "minhash": ["none"]}
        assert index.candidates(both) == sharing  # other methods asked too: key semantics


def test_sqlite_answers_simhash_from_the_tables_and_survives_reopening(tmp_path: Path) -> None:
    rng = random.Random(11)
    path = tmp_path / "fp.sqlite"
    fps = {f"doc-{r}": fp for r, fp in corpus(rng, 400, 3).items()}
    index = open_sqlite(path)
    for doc_id, fp in fps.items():
        index.add(entry(doc_id, fp))
    check_sqlite(index, fps, rng)  # merged in add (merge_min 64) and a delta: both answer
    assert (tmp_path / "fp.sqlite.simhash" / "manifest.json").exists()
    keyed = sqlite3.connect(path).execute("SELECT COUNT(*) FROM bands").fetchone()[0]
    assert keyed == 0  # no simhash key rows: the tables answer
    for doc_id in ["doc-1", "doc-2", "doc-399"]:  # re-adds: tombstones and delta drops
        fps[doc_id] = rng.getrandbits(64)
        index.add(entry(doc_id, fps[doc_id]))
    index.close()
    reopened = open_sqlite(path, merge_min=10_000)  # no merge now: the delta comes from SQL
    check_sqlite(reopened, fps, rng)
    assert reopened.count() == len(fps)
    fps["late"] = rng.getrandbits(64)
    reopened.add(entry("late", fps["late"]))
    reopened.close()
    again = open_sqlite(path, merge_min=10_000)
    assert again.candidates({"simhash": block_keys(fps["late"] ^ 1)}) == {"late"}
    check_sqlite(again, fps, rng)
    again.close()


def test_sqlite_ignores_tables_of_another_database(tmp_path: Path) -> None:
    path = tmp_path / "fp.sqlite"
    first = open_sqlite(path, merge_min=4)
    for n in range(20):
        first.add(entry(f"old-{n}", n * 0x0101_0101_0101_0101))
    first.close()
    path.unlink()  # the database is gone, its tables beside it are not
    second = open_sqlite(path, merge_min=4)
    second.add(entry("new", 0))
    assert second.candidates({"simhash": block_keys(0)}) == {"new"}
    second.close()


def test_sqlite_two_connections_see_each_others_commits(tmp_path: Path) -> None:
    path = tmp_path / "fp.sqlite"
    a, b = open_sqlite(path), open_sqlite(path)
    a.add(entry("from-a", 0xABCD))
    a.flush()
    assert b.candidates({"simhash": block_keys(0xABCD ^ 0b11)}) == {"from-a"}
    b.add(entry("from-a", 0xFFFF_0000))  # re-added by the other process
    b.flush()
    assert a.candidates({"simhash": block_keys(0xABCD)}) == set()
    assert a.candidates({"simhash": block_keys(0xFFFF_0000)}) == {"from-a"}
    a.close()
    b.close()


def test_sqlite_opened_before_another_recorded_the_parameters_uses_the_tables(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fp.sqlite"
    early, recorder = SqliteIndex(path), SqliteIndex(path)
    recorder.ensure_params(PARAMS)
    early.ensure_params(PARAMS)  # finds them recorded: opens its tables all the same
    early.add(entry("a", 0x1234))
    early.add(entry("far", 0x1234 ^ 0xF000_0000_0000_000F))  # shares keys, 8 bits away
    assert early.candidates({"simhash": block_keys(0x1234)}) == {"a"}  # within k: the tables
    early.close()
    recorder.close()
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM bands").fetchone()[0] == 0


def test_sqlite_adopts_simhash_keys_written_before_the_parameters(tmp_path: Path) -> None:
    path = tmp_path / "fp.sqlite"
    index = SqliteIndex(path)
    index.add(entry("early", 0x1234))
    assert index.candidates({"simhash": block_keys(0x1235)}) == {"early"}
    index.ensure_params(PARAMS)
    index.add(entry("later", 0x1234))
    assert index.candidates({"simhash": block_keys(0x1236)}) == {"early", "later"}
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM bands").fetchone()[0] == 0
    index.close()


@pytest.mark.parametrize("methods", [("simhash",), ("auto",)])
def test_sqlite_verdicts_equal_the_memory_backend(tmp_path: Path, methods: tuple[str, ...]) -> None:
    groups = near_copy_groups(5, vocabulary=300, originals=60, words=120)
    docs = [doc for group in groups for doc in group]
    config = NearDupConfig(methods=methods)
    expected = outcome(map(Deduplicator(MemoryIndex(), config).process, docs))
    index = SqliteIndex(tmp_path / "fp.sqlite", merge_min=16)
    got = outcome(map(Deduplicator(index, config).process, docs))
    index.close()
    assert got == expected
    assert sum(row[2] is not None for row in expected) > 20  # duplicates found
