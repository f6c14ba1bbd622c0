"""Packed signatures: bit packing and Elias-Fano exact for any input, the bag's stored string
exact for real pages and for the cases its layout escapes (long pages, frequent words)."""

from __future__ import annotations

import numpy as np
import pybase64
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.index.sqlite.signatures import pack_signatures, unpack_signatures
from neardup_pipeline.methods.bag_signature import (
    BagSignature,
    pack_signature,
    tf_weights,
    unpack_signature,
)
from neardup_pipeline.sketch import _sketch
from neardup_pipeline.sketch.packing import (
    elias_fano,
    elias_fano_decode,
    elias_fano_size,
    numpy_pack_bits,
    numpy_unpack_bits,
    pack_bits,
    unpack_bits,
)
from tests.corpora import DATA, postgresql_pages


@given(st.lists(st.integers(0, 2**32 - 1), max_size=3000))
def test_elias_fano_gives_back_any_sorted_values(values: list[int]) -> None:
    ordered = np.array(sorted(values), np.uint64)
    raw = elias_fano(ordered, 32)
    assert len(raw) == elias_fano_size(ordered.size, 32)
    assert np.array_equal(elias_fano_decode(raw, ordered.size, 32), ordered)


@given(st.integers(1, 40).flatmap(
    lambda width: st.tuples(st.just(width), st.lists(st.integers(0, 2**width - 1)))))
def test_bit_packing_gives_back_any_values(case: tuple[int, list[int]]) -> None:
    width, values = case
    array = np.array(values, np.uint64)
    assert np.array_equal(unpack_bits(pack_bits(array, width), width, array.size), array)


def assert_same(a: BagSignature, b: BagSignature) -> None:
    for name in ("words", "weights", "minimums", "order", "sequence", "subject", "region"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert getattr(a, name).dtype == getattr(b, name).dtype, name
    assert (a.site, a.region_words) == (b.site, b.region_words)


def test_real_pages_are_stored_exactly_and_smaller() -> None:
    fingerprinter = Fingerprinter(NearDupConfig())
    pages = [Document(p.doc_id, html=p.html) for p in postgresql_pages()[:40]]
    pages += [Document(path.name, html=path.read_bytes(), url=f"https://{path.stem}/")
              for path in sorted((DATA / "web-pages-multisite").glob("*.html"))]
    packed = plain = 0
    for doc in pages:
        signature = fingerprinter.fingerprint(doc).signatures["bag"]
        stored = pack_signature(signature)
        assert_same(unpack_signature(stored), signature)
        packed += len(stored) * 3 // 4
        # words as 4 bytes and counts as 1, minimums and codes as 2
        plain += 5 * signature.words.size + 2 * (signature.minimums.size + signature.order.size
                                                 + signature.region.size + signature.sequence.size)
    assert packed < 0.8 * plain


def test_codes_beyond_the_kept_words_and_large_counts_are_kept() -> None:
    """A long page keeps its smallest word keys; the codes of its other words and counts of
    15 and more (stored outside the nibbles) come back all the same."""
    rng = np.random.default_rng(7)
    words = np.unique(rng.integers(0, 2**32, 300, dtype=np.uint64))
    kept = words[:100]
    counts = rng.integers(1, 256, kept.size)
    beyond = (words[100:] >> np.uint64(16)).astype(np.uint16)
    sequence = np.concatenate([(kept >> np.uint64(16)).astype(np.uint16), beyond])
    rng.shuffle(sequence)
    signature = BagSignature(
        kept, tf_weights(counts), rng.integers(0, 2**16, 84, dtype=np.uint64),
        rng.integers(0, 2**16, 84, dtype=np.uint64), sequence,
        np.array([int(kept[3])], np.uint64), 12345, np.zeros(0, np.uint64), 0)
    assert_same(unpack_signature(pack_signature(signature)), signature)
    empty = BagSignature(*(np.zeros(0, np.uint64),) * 4)
    assert unpack_signature(pack_signature(empty)).words.size == 0


def test_a_string_of_another_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="not a packed bag signature"):
        unpack_signature("not base64!")
    with pytest.raises(ValueError, match="layout 2"):
        unpack_signature(pybase64.b64encode_as_string(bytes([2]) + bytes(60)))


@given(st.dictionaries(
    st.text(min_size=1, max_size=12),
    st.one_of(st.binary(max_size=64).map(pybase64.b64encode_as_string), st.text(max_size=30),
              st.integers(), st.dictionaries(st.text(max_size=5), st.text(max_size=20))),
    max_size=5))
def test_a_sqlite_row_gives_back_every_stored_signature_as_it_was(
        signatures: dict[str, object]) -> None:
    assert unpack_signatures(pack_signatures(signatures)) == signatures


def test_base64_signatures_are_kept_as_their_bytes() -> None:
    packed = pybase64.b64encode_as_string(bytes(range(256)) * 4)
    blob = pack_signatures({"bag": packed, "simhash": "00000000000000ff", "other": "sig-x"})
    assert len(blob) < len(packed) * 3 // 4 + 100


@given(st.integers(1, 64).flatmap(
    lambda width: st.tuples(st.just(width), st.lists(st.integers(0, 2**width - 1),
                                                     max_size=300))))
def test_the_compiled_bit_loops_agree_with_numpy(case: tuple[int, list[int]]) -> None:
    width, values = case
    array = np.array(values, np.uint64)
    raw = numpy_pack_bits(array, width)
    if array.size:
        assert _sketch.pack_bits(array, width) == raw
        assert np.array_equal(_sketch.unpack_bits(np.frombuffer(raw, np.uint8), width,
                                                  array.size), array)
    assert np.array_equal(numpy_unpack_bits(raw, width, array.size), array)


def test_the_compiled_unpacking_refuses_bits_that_end_early() -> None:
    with pytest.raises(ValueError, match="end early"):
        _sketch.unpack_bits(np.zeros(2, np.uint8), 9, 2)
