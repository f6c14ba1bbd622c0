"""The bag method's signature and the packed string every backend stores it as.

What is kept of each hash is what verification needs, no more: a word as the top WORD_BITS of
its 64-bit hash, a minimum as its top MINIMUM_BITS (b-bit minwise hashing), a word code as the
top 16 bits. Two pages of a few thousand distinct words each share a 32-bit word key by chance
about once in a thousand comparisons, which moves a weighted Jaccard by one word's weight; two
unequal minimums agree once in 65,536.

The packed layout, little-endian after a fixed header: the sorted word keys Elias-Fano coded,
the term counts as 4-bit nibbles (15: the count is in the byte list that follows), the three
sets of minimums as 16 bits, the subject's word keys as 32 bits, and the word codes in text
order as indices into the word keys (a word's code is its key's top 16 bits), each in as few
bits as the number of words needs; a code no word key has (beyond a long page's kept words)
is listed after them. Each step is exact: the signature read back equals the one written.
"""

from __future__ import annotations

import binascii
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pybase64

from neardup_pipeline.methods.reword import Codes
from neardup_pipeline.sketch.packing import (
    bit_width,
    elias_fano,
    elias_fano_decode,
    elias_fano_size,
    pack_bits,
    packed_size,
    unpack_bits,
)
from neardup_pipeline.sketch.rabin import U64Array

F32Array = npt.NDArray[np.float32]

WORD_BITS = 32
MINIMUM_BITS = 16
MAX_COUNT = 255  # term counts stop here: weights up to 1 + ln(255)
CODE_SHIFT = np.uint64(WORD_BITS - 16)  # a word code is the top 16 bits of its key
PACK_VERSION = 3
# version, words, codes, codes not among the words, counts of 15 or more, minimums, order
# minimums, region minimums, subject words, region words, site
_HEADER = struct.Struct("<BIIIIHHHBIQ")
_ESCAPE = 15  # a nibble's largest value: the count is in the escape bytes


@dataclass(frozen=True)
class BagSignature:
    """Distinct word keys (sorted), their log-TF weights, the word set's 84 minimums (lookup),
    the 3-word shingle set's 84 minimums (word-order check), the words in order, as codes
    (rewording check), and the keys of the title's subject words (template-twin check)."""

    words: U64Array = field(compare=False)
    weights: F32Array = field(compare=False)
    minimums: U64Array = field(compare=False)
    order: U64Array = field(compare=False)
    sequence: Codes = field(compare=False, default_factory=lambda: np.zeros(0, np.uint16))
    subject: U64Array = field(compare=False, default_factory=lambda: np.zeros(0, np.uint64))
    site: int = field(compare=False, default=0)  # hash of text/site.py's site; 0: unknown
    # The content region's word-set minimums (empty when the page has no region apart from its
    # whole text, or one too short to tell) and its canonical words.
    region: U64Array = field(compare=False, default_factory=lambda: np.zeros(0, np.uint64))
    region_words: int = field(compare=False, default=0)

    @property
    def content(self) -> U64Array:
        """The word-set minimums of what the page is about: its region's, else its own."""
        return self.region if self.region.size else self.minimums

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BagSignature)
            and np.array_equal(self.words, other.words)
            and np.array_equal(self.weights, other.weights)
        )

    def __hash__(self) -> int:
        return hash(self.words.tobytes())


def tf_weights(counts: npt.NDArray[np.integer[Any]]) -> F32Array:
    """Log-TF weights 1 + ln(tf) of term counts."""
    return (1.0 + np.log(counts.astype(np.float64))).astype(np.float32)


def tf_counts(weights: F32Array) -> npt.NDArray[np.uint8]:
    """The term counts behind log-TF weights (`tf_weights` reversed)."""
    return np.rint(np.exp(weights.astype(np.float64) - 1.0)).astype(np.uint8)


def pack_signature(signature: BagSignature) -> str:
    """The signature as stored: one base64 string of its packed bytes (the module docstring)."""
    s = signature
    counts = tf_counts(s.weights)
    escaped = counts[counts >= _ESCAPE]
    positions, missing = _code_positions(s.words, s.sequence)
    header = _HEADER.pack(
        PACK_VERSION, s.words.size, s.sequence.size, missing.size, escaped.size, s.minimums.size,
        s.order.size, s.region.size, s.subject.size, s.region_words, s.site)
    nibbles = np.minimum(counts, _ESCAPE).astype(np.uint64)
    return pybase64.b64encode_as_string(b"".join((
        header, elias_fano(s.words, WORD_BITS), pack_bits(nibbles, 4), escaped.tobytes(),
        s.minimums.astype("<u2").tobytes(), s.order.astype("<u2").tobytes(),
        s.region.astype("<u2").tobytes(), s.subject.astype("<u4").tobytes(),
        pack_bits(positions, bit_width(s.words.size)), missing.astype("<u2").tobytes())))


def _code_positions(words: U64Array, sequence: Codes) -> tuple[U64Array, Codes]:
    """Each code's index among the word keys (the first key with that code), or len(words)
    where none has it; and those codes, in order. Through a table of every 16-bit code: one
    gather, where a binary search per code costs four times as much."""
    count = words.size
    table = np.full(1 << 16, count, dtype=np.uint32)
    table[(words[::-1] >> CODE_SHIFT).astype(np.intp)] = np.arange(count - 1, -1, -1,
                                                                   dtype=np.uint32)
    positions = table[sequence].astype(np.uint64)
    return positions, sequence[positions == count]


def unpack_signature(text: str) -> BagSignature:
    """`pack_signature` reversed; a string of another layout is refused with what it holds."""
    try:
        raw = memoryview(pybase64.b64decode(text, validate=True))
        (version, words, codes, missing, escaped, minimums, order, region, subject,
         region_words, site) = _HEADER.unpack_from(raw)
    except (binascii.Error, struct.error) as exc:
        raise ValueError(f"not a packed bag signature ({exc})") from None
    if version != PACK_VERSION:
        raise ValueError(f"bag signature of layout {version}, this version reads {PACK_VERSION}")
    reader = _Reader(raw, _HEADER.size)
    keys = elias_fano_decode(reader.take(elias_fano_size(words, WORD_BITS)), words, WORD_BITS)
    counts = unpack_bits(reader.take(packed_size(4, words)), 4, words).astype(np.uint8)
    counts[counts == _ESCAPE] = reader.array("u1", escaped)
    word_set = reader.array("<u2", minimums).astype(np.uint64)
    order_set = reader.array("<u2", order).astype(np.uint64)
    region_set = reader.array("<u2", region).astype(np.uint64)
    subject_words = reader.array("<u4", subject).astype(np.uint64)
    width = bit_width(words)
    positions = unpack_bits(reader.take(packed_size(width, codes)), width, codes)
    sequence = np.empty(codes, np.uint16)
    known = positions < words
    sequence[known] = (keys[positions[known].astype(np.int64)] >> CODE_SHIFT).astype(np.uint16)
    sequence[~known] = reader.array("<u2", missing)
    return BagSignature(keys, tf_weights(counts), word_set, order_set, sequence, subject_words,
                        site, region_set, region_words)


class _Reader:
    """Consecutive parts of a packed signature."""

    def __init__(self, raw: memoryview, at: int) -> None:
        self.raw, self.at = raw, at

    def take(self, size: int) -> memoryview:
        part = self.raw[self.at:self.at + size]
        if len(part) != size:
            raise ValueError("a packed bag signature ends early")
        self.at += size
        return part

    def array(self, dtype: str, count: int) -> npt.NDArray[Any]:
        return np.frombuffer(self.take(np.dtype(dtype).itemsize * count), dtype)
