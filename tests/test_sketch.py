"""The compiled loops of `_sketch` give the numpy code's values bit for bit: Rabin fingerprints of
words (against the byte loop) and of word shingles, MinHash minimums, the simhash vote, the
finaliser, distinct counts and weighted Jaccard, on arbitrary inputs (hypothesis) and on real
pages, so an index written with one is read with the other."""

from __future__ import annotations

import os
import sys
from datetime import timedelta

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_pipeline import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.methods import bag, minhash, rarewords, simhash
from neardup_pipeline.methods.minhash import hash_family, numpy_fmix64, numpy_min_hashes
from neardup_pipeline.sketch import rabin, shingles
from neardup_pipeline.sketch._sketch import (
    WordHashMemo,
    cached_hashes,
    distinct_counts,
    fmix64,
    min_hash_kernels,
    min_hashes,
    passage_keys,
    rabin_shingles,
    rabin_words,
    simhash64,
    weighted_jaccard,
)
from neardup_pipeline.sketch.shingles import ShingleHasher
from tests.corpora import postgresql_pages

EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "300"))
U64 = st.integers(0, 2**64 - 1)
A, B = hash_family(84, 20100531)


def test_the_methods_use_the_compiled_loops() -> None:
    assert minhash._sketch is not None and shingles._sketch is not None and rabin._sketch
    assert simhash._sketch is not None and rarewords._sketch is not None
    assert bag._sketch is not None


# Words as the tokenizer makes them: any characters but lone surrogates (never word characters).
_WORDS = st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=40), max_size=60)


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(_WORDS)
def test_rabin_words_equal_the_byte_loop(words: list[str]) -> None:
    hasher = rabin.RabinHasher()
    expected = [hasher.fingerprint(word.encode("utf-8")) for word in words]
    assert rabin_words(words, hasher.byte_table).tolist() == expected
    assert hasher.word_fingerprints(words) == expected


def test_rabin_words_of_real_words_and_edges() -> None:
    hasher = rabin.RabinHasher()
    text = b" ".join(page.html for page in postgresql_pages()[:40]).decode("utf-8", "replace")
    words = [*sorted(set(text.split())), "", "a", "\x00", "\U0010ffff", "\u00e9" * 300]
    expected = [hasher.fingerprint(word.encode("utf-8")) for word in words]
    assert rabin_words(words, hasher.byte_table).tolist() == expected
    with pytest.raises(TypeError):
        rabin_words([b"bytes"], hasher.byte_table)  # type: ignore[list-item]


def test_word_slice_table_multiplies_by_x64_byte_by_byte() -> None:
    """h * x^64 mod P is the XOR of one slice entry per byte of h (linearity over GF(2)): the same
    as T16's four steps, for a polynomial other than the default too."""
    values = np.random.default_rng(7).integers(0, 2**64 - 1, 2000, dtype=np.uint64,
                                                endpoint=True)
    for hasher in (rabin.RabinHasher(), rabin.RabinHasher(0x1B)):
        slices = hasher.word_slice_table
        assert slices.shape == (8, 256) and slices.dtype == np.uint64
        by_bytes = np.zeros_like(values)
        for j in range(8):
            by_bytes ^= slices[j][(values >> np.uint64(8 * j)) & np.uint64(0xFF)]
        assert np.array_equal(by_bytes, hasher.extend64(values, np.zeros_like(values)))
    with pytest.raises(ValueError, match="8 x 256"):
        rabin_shingles(values, 3, np.zeros((4, 256), dtype=np.uint64))


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(U64, max_size=300), st.integers(1, 12))
def test_rabin_shingles_equal_numpy(values: list[int], size: int) -> None:
    words = np.array(values, dtype=np.uint64)
    hasher = ShingleHasher("rabin")
    width = min(size, len(words))
    if width < 1:
        assert rabin_shingles(words, size, hasher._rabin.word_slice_table).size == 0
        return
    expected = hasher.numpy_shingles(words, width)
    assert np.array_equal(rabin_shingles(words, width, hasher._rabin.word_slice_table), expected)


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(U64, max_size=5000))
def test_min_hashes_equal_numpy(values: list[int]) -> None:
    data = np.array(values, dtype=np.uint64)
    expected = numpy_min_hashes(data, A, B)
    assert np.array_equal(min_hashes(data, A, B), expected)
    for kernel in min_hash_kernels():
        assert np.array_equal(min_hashes(data, A, B, kernel), expected), kernel


@pytest.mark.parametrize("permutations", [1, 3, 4, 5, 8, 23, 24, 25, 87, 88, 89, 100, 200])
def test_every_min_hash_kernel_at_permutation_counts_off_its_lanes(permutations: int) -> None:
    """The vector kernels take 8 or 4 permutations a register and 88 or 24 a pass: counts off
    those edges end in a partial register, a scalar tail or a second pass."""
    a, b = hash_family(permutations, permutations)
    rng = np.random.default_rng(permutations)
    for count in (0, 1, 2, 31, 1000):
        data = rng.integers(0, 2**64, count, dtype=np.uint64, endpoint=False)
        expected = numpy_min_hashes(data, a, b)
        for kernel in min_hash_kernels():
            assert np.array_equal(min_hashes(data, a, b, kernel), expected), (kernel, count)


def test_min_hash_kernels_are_named_and_checked() -> None:
    kernels = min_hash_kernels()
    assert kernels[0] == "scalar" and set(kernels) <= {"scalar", "avx2", "avx512"}
    with pytest.raises(ValueError, match="unknown MinHash kernel"):
        min_hashes(np.ones(3, dtype=np.uint64), A, B, "neon")
    with pytest.raises(ValueError, match="same length"):
        min_hashes(np.ones(3, dtype=np.uint64), A, B[:10])


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(U64, max_size=1200) | st.lists(st.sampled_from([0, 2**64 - 1, 1, 2**63]),
                                                 max_size=1200))
def test_simhash_vote_and_finaliser_equal_numpy(values: list[int]) -> None:
    """The vote counts eight bits a step in byte lanes, flushed every 255 hashes: long runs of
    all-ones hashes are what would overflow a lane."""
    data = np.array(values, dtype=np.uint64)
    expected = simhash.numpy_simhash(data)
    assert (simhash64(data) if data.size else 0) == expected == simhash.simhash(data)
    assert np.array_equal(fmix64(data), numpy_fmix64(data))


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(st.integers(0, 3) | st.integers(0, 2**16 - 1), max_size=700),
       st.sampled_from([1, 2, 3, 16, 64]))
def test_passage_keys_equal_numpy(codes: list[int], sample: int) -> None:
    """Few distinct codes make runs repeat, so pairs repeat: each key is kept once, where it
    first appears."""
    data = np.array(codes, dtype=np.uint16)
    expected = bag.numpy_passage_keys(data, sample)
    assert bag.passage_keys(data, sample) == expected
    if data.size >= 4:
        assert passage_keys(data, (1 << 64) // sample - 1, int(bag.PAIR_MIX), b"p:") == expected


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(st.integers(0, 40) | U64, max_size=600))
def test_distinct_counts_equal_numpy_unique(values: list[int]) -> None:
    data = np.array(values, dtype=np.uint64)
    words, counts = distinct_counts(np.sort(data))
    unique, unique_counts = np.unique(data, return_counts=True)
    assert np.array_equal(words, unique) and np.array_equal(counts, unique_counts)
    assert words.dtype == np.uint64 and counts.dtype == np.int64


BAG = st.dictionaries(st.integers(0, 60) | U64, st.integers(1, 5000).map(lambda n: n / 100))


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(BAG, BAG)
def test_weighted_jaccard_equals_numpy(first: dict[int, float], second: dict[int, float]) -> None:
    def arrays(bag: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
        keys = sorted(bag)
        return (np.array(keys, dtype=np.uint64),
                np.array([bag[k] for k in keys], dtype=np.float32))

    a, wa = arrays(first)
    b, wb = arrays(second)
    expected = rarewords.numpy_weighted_jaccard(a, wa, b, wb)
    assert weighted_jaccard(a, wa, b, wb) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert weighted_jaccard(a, wa, a, wa) == 1.0


def test_weighted_jaccard_refuses_a_weight_count_that_differs() -> None:
    words = np.array([1, 2], dtype=np.uint64)
    with pytest.raises(ValueError, match="one weight per hash"):
        weighted_jaccard(words, np.ones(1, np.float32), words, np.ones(2, np.float32))


def test_cached_hashes_reads_the_cache_or_says_none() -> None:
    cache = {"a": 1, "b": 2**64 - 1}
    assert cached_hashes(["b", "a", "b"], cache).tolist() == [2**64 - 1, 1, 2**64 - 1]
    assert cached_hashes(["a", "z"], cache) is None
    assert cached_hashes([], cache).size == 0


def test_word_hash_memo_finds_words_by_object_and_forgets_when_full() -> None:
    words = ["".join(["w", str(i)]) for i in range(300)]  # fresh objects
    memo = WordHashMemo(256)
    memo.add(words[:200], np.arange(200, dtype=np.uint64) * np.uint64(2**40))
    assert memo.lookup(words[:200]).tolist() == [i * 2**40 for i in range(200)]
    assert memo.lookup([*words[:3], words[250]]) is None  # a word never added
    twin = "".join(["w", "1"])  # equal to words[1], another object: the caller's dict decides
    assert twin == words[1] and memo.lookup([twin]) is None
    memo.add(words[:2], np.array([7, 7], dtype=np.uint64))  # a kept word keeps its value
    assert memo.lookup(words[:2]).tolist() == [0, 2**40]
    memo.add(words[200:], np.ones(100, dtype=np.uint64))  # past 256 words: all forgotten first
    assert len(memo) < 256 and memo.lookup(words[:200]) is None
    assert memo.lookup(words[-10:]).tolist() == [1] * 10
    with pytest.raises(ValueError, match="one hash per word"):
        memo.add(words[:2], np.ones(3, dtype=np.uint64))
    assert memo.lookup([]).size == 0


def test_word_hash_memo_holds_and_releases_its_words() -> None:
    word = "".join(["memo", "word"])
    before = sys.getrefcount(word)
    memo = WordHashMemo()
    memo.add([word, word], np.array([5, 6], dtype=np.uint64))
    assert sys.getrefcount(word) == before + 1 and memo.lookup([word]).tolist() == [5]
    memo.clear()
    assert sys.getrefcount(word) == before and memo.lookup([word]) is None
    memo.add([word], np.array([9], dtype=np.uint64))
    del memo
    assert sys.getrefcount(word) == before


def test_shingle_hasher_reads_the_memo_and_the_dict_alike() -> None:
    """A page's words by object (the memo), then equal words as other objects (the dict), then
    new words: the same hashes as the Rabin fingerprint of each word."""
    hasher = ShingleHasher("rabin")
    page = ["".join(["stem", str(i % 50)]) for i in range(400)]
    expected = [hasher._rabin.fingerprint(w.encode()) for w in page]
    assert hasher.word_hashes(page).tolist() == expected  # learnt
    assert hasher.word_hashes(list(page)).tolist() == expected  # memo
    copies = ["".join(["stem", str(i % 50)]) for i in range(400)]
    assert hasher.word_hashes(copies).tolist() == expected  # dict, then memo
    memo = hasher._store.by_object
    assert memo is not None and memo.lookup(copies) is not None


def test_word_hashes_are_shared_by_the_hashers_of_one_family() -> None:
    """A second hasher (the next Deduplicator of the process) finds the first one's words; the
    two families never read each other's hashes."""
    page = ["".join(["shared", str(i)]) for i in range(64)]  # fresh objects, new words
    first, second = ShingleHasher("rabin"), ShingleHasher("rabin")
    hashes = first.word_hashes(page).tolist()
    assert second._store is first._store and set(page) <= second._store.table.keys()
    memo = second._store.by_object
    assert memo is None or memo.lookup(page) is not None  # by object, no dict lookup
    assert second.word_hashes(list(page)).tolist() == hashes
    assert hashes == [first._rabin.fingerprint(w.encode()) for w in page]
    xxh = ShingleHasher("xxh64")
    assert xxh._store is not first._store
    assert xxh.word_hashes(page).tolist() == [xxhash.xxh64_intdigest(w.encode()) for w in page]
    assert first.word_hashes(page).tolist() == hashes


def test_min_hashes_of_nothing_are_all_ones() -> None:
    assert (min_hashes(np.empty(0, dtype=np.uint64), A, B) == np.uint64(2**64 - 1)).all()


def test_same_signatures_on_real_pages() -> None:
    fingerprinter = Fingerprinter(NearDupConfig(methods=("simhash", "minhash", "bag")))
    for page in postgresql_pages()[::50]:
        words = fingerprinter.normalizer.words(
            fingerprinter.text_of(Document(page.doc_id, html=page.html))[0]).words
        hasher = ShingleHasher("rabin")
        word_hashes = hasher.word_hashes(words)
        for size in (3, 10):
            compiled = hasher.shingle_hashes(words, size)
            assert np.array_equal(compiled, hasher.numpy_shingles(word_hashes, min(
                size, len(word_hashes))))
            assert np.array_equal(minhash.min_hashes(compiled, A, B),
                                  numpy_min_hashes(compiled, A, B))
            assert simhash.simhash(compiled) == simhash.numpy_simhash(compiled)
        codes = bag.word_codes(bag.word_keys(words, hasher), 2048)
        assert bag.passage_keys(codes, 16) == bag.numpy_passage_keys(codes, 16)
        assert np.array_equal(hasher.word_hashes(words), np.fromiter(
            map(hasher._store.table.__getitem__, words), dtype=np.uint64, count=len(words)))
