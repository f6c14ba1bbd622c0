"""Simhash, Hamming distance and the pigeonhole block keys (Manku et al. 2007)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.index import MemoryIndex, open_index
from neardup_pipeline.index.base import IndexEntry
from neardup_pipeline.methods.registry import build_methods
from neardup_pipeline.methods.simhash import (
    SimhashMethod,
    block_keys,
    block_layout,
    hamming,
    simhash,
)
from neardup_pipeline.sketch.shingles import ShingleHasher, shingle_count
from neardup_pipeline.verdict.deduplicator import Deduplicator
from tests.corpora import postgresql_pages

u64 = st.integers(min_value=0, max_value=2**64 - 1)


def test_simhash_bit_is_set_where_the_weighted_sum_is_positive() -> None:
    hashes = np.array([0b1011, 0b0011, 0b0001], dtype=np.uint64)
    # bit0: 3 of 3 -> +3; bit1: 2 of 3 -> +1; bit3: 1 of 3 -> -1; others -3
    assert simhash(hashes) == 0b0011
    weights = np.array([5.0, 1.0, 1.0])
    assert simhash(hashes, weights) == 0b1011


def test_simhash_of_no_features_is_zero() -> None:
    assert simhash(np.empty(0, dtype=np.uint64)) == 0


def test_simhash_matches_a_plain_python_bit_loop() -> None:
    rng = np.random.default_rng(3)
    hashes = rng.integers(0, 2**63, size=500, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    expected = 0
    for bit in range(64):
        total = sum(1 if int(h) >> bit & 1 else -1 for h in hashes)
        if total > 0:
            expected |= 1 << bit
    assert simhash(hashes) == expected


@given(u64, u64)
def test_hamming_is_symmetric_and_zero_on_equal(a: int, b: int) -> None:
    assert hamming(a, b) == hamming(b, a)
    assert hamming(a, a) == 0
    assert 0 <= hamming(a, b) <= 64


@pytest.mark.parametrize(("blocks", "k", "keys"), [(4, 3, 4), (6, 3, 20), (8, 3, 56), (4, 0, 1)])
def test_block_layout_has_one_key_per_combination(blocks: int, k: int, keys: int) -> None:
    layout = block_layout(blocks, k)
    assert len(layout) == keys
    assert sum(width for _, width in layout[0]) >= 64 * (blocks - k) // blocks


def flip_bits(value: int, count: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), count):
        value ^= 1 << bit
    return value


@pytest.mark.parametrize(("blocks", "k"), [(4, 3), (6, 3), (5, 2)])
def test_pigeonhole_every_fingerprint_within_k_is_found(blocks: int, k: int) -> None:
    rng = random.Random(blocks * 100 + k)
    index = MemoryIndex()
    stored = [rng.getrandbits(64) for _ in range(2000)]
    for i, fp in enumerate(stored):
        index.add(IndexEntry(str(i), {}, {"simhash": block_keys(fp, blocks, k)}))
    for _ in range(3000):
        i = rng.randrange(len(stored))
        probe = flip_bits(stored[i], rng.randint(0, k), rng)
        assert str(i) in index.candidates({"simhash": block_keys(probe, blocks, k)})


def test_method_verdicts_follow_k() -> None:
    method = SimhashMethod(k=3)
    assert method.is_duplicate(0, 0b111)
    assert not method.is_duplicate(0, 0b1111)
    assert method.similarity(0, 0b1111) == pytest.approx(1 - 4 / 64)
    assert method.decode(method.encode(2**64 - 1)) == 2**64 - 1
    assert len(method.encode(1)) == 16


@pytest.mark.parametrize(("words", "size", "count"), [(0, 3, 0), (1, 3, 1), (3, 3, 1), (10, 3, 8)])
def test_shingle_count(words: int, size: int, count: int) -> None:
    assert shingle_count(words, size) == count
    hashes = ShingleHasher().shingle_hashes([f"w{i}" for i in range(words)], size)
    assert len(hashes) == count


@pytest.mark.parametrize("hash_name", ["rabin", "xxh64"])
def test_shingle_hashes_depend_on_order_and_content(hash_name: str) -> None:
    hasher = ShingleHasher(hash_name)  # type: ignore[arg-type]
    a = hasher.shingle_hashes(["a", "b", "c"], 3)
    assert len(set(hasher.shingle_hashes(["a", "b", "c", "a", "b", "c"], 3).tolist())) == 3
    assert a[0] != hasher.shingle_hashes(["c", "b", "a"], 3)[0]
    assert a[0] == ShingleHasher(hash_name).shingle_hashes(["a", "b", "c"], 3)[0]  # type: ignore[arg-type]


def test_more_lookup_blocks_find_the_same_pages_through_longer_keys(tmp_path: Path) -> None:
    """`simhash_blocks = 6` (Manku et al.'s 20 tables at k = 3): keys of 32 bits instead of
    16, so an index of many pages gives fewer chance candidates, and every real page's
    verdict is the default's, on memory and on SQLite (whose tables follow the blocks)."""
    config = NearDupConfig(methods=("simhash",), backend="memory")
    wide = config.replace(simhash_blocks=6)
    method = build_methods(wide)["simhash"]
    assert isinstance(method, SimhashMethod) and method.blocks == 6
    keys = method.keys(2**64 - 1)
    bits = {int(key.split(":")[1], 16).bit_length() for key in keys}  # of an all-ones value
    assert len(keys) == 20 and bits == {31, 32, 33}  # three of six blocks of 10-11 bits
    pages = postgresql_pages()
    half = len(pages) // 2  # the 15.18 pages, then the 15.20 ones: the first 150 of each
    docs = [Document(p.doc_id, html=p.html) for p in (*pages[:150], *pages[half:half + 150])]

    def verdicts(cfg: NearDupConfig) -> list[tuple[str | None, bool]]:
        with open_index(cfg.backend, cfg) as index:
            dedup = Deduplicator(index, cfg)
            return [(v.duplicate_of, v.is_duplicate) for v in map(dedup.process, docs)]

    expected = verdicts(config)
    assert sum(d for _, d in expected) > 20  # the two releases' copies
    assert verdicts(wide) == expected
    assert verdicts(wide.replace(backend=f"sqlite:{tmp_path / 'fp.sqlite'}")) == expected
    with pytest.raises(ConfigError, match="simhash_blocks"):
        config.replace(simhash_blocks=3)  # fewer than k + 1: the pigeonhole bound fails
    with pytest.raises(ConfigError, match="at most 64 keys"):
        config.replace(simhash_blocks=12)  # 220 keys a page
