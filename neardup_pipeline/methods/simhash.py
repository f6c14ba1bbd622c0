"""Charikar's simhash over 64-bit shingle hashes, Hamming distance, and the block keys of
Manku, Jain & Das Sarma (2007) that find every fingerprint within distance k. Each shingle
occurrence weighs 1 (TF).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from neardup_pipeline.methods.settings import BITS
from neardup_pipeline.methods.settings import SimhashSettings as SimhashSettings
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher

try:  # the unit-weight vote in one C loop (setup.py); without a compiler, numpy below
    from neardup_pipeline.sketch import _sketch
except ImportError:  # pragma: no cover - a build without the extension
    _sketch = None  # type: ignore[assignment]


def simhash(hashes: U64Array, weights: npt.NDArray[np.floating] | None = None) -> int:
    """64-bit simhash: per bit, +w where a feature's hash has the bit set, -w where not; the
    fingerprint's bit is 1 where the sum is positive. Repeated features count each time (TF)."""
    if hashes.size == 0:
        return 0
    if weights is None and _sketch is not None:
        return int(_sketch.simhash64(np.ascontiguousarray(hashes, dtype=np.uint64)))
    return numpy_simhash(hashes, weights)


def numpy_simhash(hashes: U64Array, weights: npt.NDArray[np.floating] | None = None) -> int:
    """`simhash` in numpy (bits unpacked, summed per column): the reference of the compiled
    vote, its fallback, and the weighted vote's only code."""
    if hashes.size == 0:
        return 0
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)
    if weights is None:
        # sum of +-1 = 2 * (ones) - n, so bit set where ones > n / 2
        ones = bits.sum(axis=0, dtype=np.int64)
        positive = 2 * ones > hashes.size
    else:
        w = np.asarray(weights, dtype=np.float64)
        positive = 2 * (w @ bits) > w.sum()
    return int.from_bytes(np.packbits(positive).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit fingerprints."""
    return (a ^ b).bit_count()


@lru_cache(maxsize=32)
def block_layout(blocks: int, k: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Bit ranges (shift, width) of each key: one key per combination of blocks - k blocks.

    Two fingerprints within Hamming distance k differ in at most k of the b blocks, so they agree
    on at least b - k blocks: the pigeonhole bound that makes the lookup exact, not approximate.
    """
    widths = [BITS // blocks + (1 if i < BITS % blocks else 0) for i in range(blocks)]
    ranges: list[tuple[int, int]] = []
    end = BITS
    for width in widths:  # block 0 holds the most significant bits
        end -= width
        ranges.append((end, width))
    return tuple(
        tuple(ranges[i] for i in combo)
        for combo in itertools.combinations(range(blocks), blocks - k)
    )


def block_keys(fingerprint: int, blocks: int = 4, k: int = 3) -> list[str]:
    """Index keys of a fingerprint: "<combination>:<hex of its blocks' bits>"."""
    keys = []
    for position, combo in enumerate(block_layout(blocks, k)):
        value = 0
        for shift, width in combo:
            value = (value << width) | ((fingerprint >> shift) & ((1 << width) - 1))
        keys.append(f"{position}:{value:x}")
    return keys


@dataclass(frozen=True)
class SimhashMethod:
    """Charikar simhash as a detection method: 64 bits over word shingles, duplicate at <= k
    (Manku et al.: k = 3 at 64 bits), found through the keys of k + 1 blocks."""

    shingle: int = 3
    k: int = 3
    name: str = "simhash"
    lookup_blocks: int = 0  # 0: k + 1
    looks_up: bool = True  # False: it verifies the candidates other methods' keys find

    @property
    def blocks(self) -> int:
        """k + 1 blocks unless set: any two fingerprints within distance k agree on one whole
        block at least (the pigeonhole bound), and one block per key keeps the keys fewest.
        More blocks make keys of more bits, fewer chance candidates in a large index."""
        return self.lookup_blocks or self.k + 1

    def params(self) -> dict[str, object]:
        return {"bits": BITS, "shingle": self.shingle, "k": self.k, "blocks": self.blocks}

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> int:
        return simhash(hasher.shingle_hashes(words, self.shingle))

    def keys(self, fingerprint: int) -> list[str]:
        return block_keys(fingerprint, self.blocks, self.k) if self.looks_up else []

    def encode(self, fingerprint: int) -> str:
        """16 hex digits: a signed `long` cannot hold it, `unsigned_long` is not everywhere."""
        return f"{fingerprint:016x}"

    def decode(self, stored: object) -> int:
        return int(str(stored), 16)

    def similarity(self, a: int, b: int) -> float:
        """1 - distance/64, so that every method reports a similarity in [0, 1]."""
        return 1.0 - hamming(a, b) / BITS

    def is_duplicate(self, a: int, b: int) -> bool:
        return hamming(a, b) <= self.k

    def metric_floor(self) -> float:
        """A duplicate's least similarity; 1 - similarity (Hamming distance / 64) is a metric."""
        return 1.0 - self.k / BITS

    def explain(self, a: int, b: int) -> dict[str, object]:
        return {"distance": hamming(a, b), "k": self.k}
