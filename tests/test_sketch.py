"""The compiled loops of `_sketch` give the numpy code's values bit for bit: Rabin fingerprints of
word shingles and MinHash minimums, on arbitrary 64-bit inputs (hypothesis) and on real pages,
so an index written with one is read with the other."""

from __future__ import annotations

import os
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.corpora import postgresql_pages
from neardup_pipeline import NearDupConfig, minhash, shingles
from neardup_pipeline._sketch import min_hashes, rabin_shingles
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.minhash import hash_family, numpy_min_hashes
from neardup_pipeline.shingles import ShingleHasher

EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "300"))
U64 = st.integers(0, 2**64 - 1)
A, B = hash_family(84, 20100531)


def test_the_methods_use_the_compiled_loops() -> None:
    assert minhash._sketch is not None and shingles._sketch is not None


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(U64, max_size=300), st.integers(1, 12))
def test_rabin_shingles_equal_numpy(values: list[int], size: int) -> None:
    words = np.array(values, dtype=np.uint64)
    hasher = ShingleHasher("rabin")
    width = min(size, len(words))
    if width < 1:
        assert rabin_shingles(words, size, hasher._rabin.word_shift_table).size == 0
        return
    expected = hasher.numpy_shingles(words, width)
    assert np.array_equal(rabin_shingles(words, width, hasher._rabin.word_shift_table), expected)


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(U64, max_size=5000))
def test_min_hashes_equal_numpy(values: list[int]) -> None:
    data = np.array(values, dtype=np.uint64)
    assert np.array_equal(min_hashes(data, A, B), numpy_min_hashes(data, A, B))


def test_min_hashes_of_nothing_are_all_ones() -> None:
    assert (min_hashes(np.empty(0, dtype=np.uint64), A, B) == np.uint64(2**64 - 1)).all()


@pytest.mark.shared_data
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
