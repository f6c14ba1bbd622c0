"""Broder's shingle method as Zelenkov & Segalovich describe it: 84 min-wise hashes over 10-word
shingles, 6 super-shingles of 14 components, 15 mega-shingles (pairs of super-shingles).

Resemblance is estimated as the share of equal components; exact Jaccard and containment over
the shingle sets are available for verification. Everything is numpy: no loop per shingle.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt
import xxhash

from neardup_pipeline.methods.settings import MODES as MODES
from neardup_pipeline.methods.settings import MinhashSettings as MinhashSettings
from neardup_pipeline.methods.settings import Mode as Mode
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.sketch.stored import array_text, text_array

try:  # the same minimums in one C loop (setup.py); without a compiler, numpy below
    from neardup_pipeline.sketch import _sketch
except ImportError:  # pragma: no cover - a build without the extension
    _sketch = None  # type: ignore[assignment]

# Zelenkov & Segalovich: 10-word shingles, 84 minimums in 6 super-shingles of 14, whose 15 pairs
# are the mega-shingles (lookup keys).
SHINGLE_WORDS = 10
HASHES = 84
SUPER_SHINGLES = 6

FAMILY_VERSION = 2  # bump when the hash family changes: stored signatures become incomparable
_CHUNK = 4096  # shingles per block: bounds memory at CHUNK x 84 x 8 bytes
_M1, _M2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)


def hash_family(count: int, seed: int) -> tuple[U64Array, U64Array]:
    """Multipliers (odd) and offsets of `count` fixed permutations x -> a*fmix(x) + b."""
    rng = np.random.Generator(np.random.PCG64(seed))
    a = rng.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False) | np.uint64(1)
    b = rng.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)
    return a, b


def _fmix64(x: U64Array) -> U64Array:
    """MurmurHash3's 64-bit finaliser: a bijection that spreads every input bit over the word."""
    if _sketch is not None:
        return _sketch.fmix64(np.ascontiguousarray(x, dtype=np.uint64))
    return numpy_fmix64(x)


def numpy_fmix64(x: U64Array) -> U64Array:
    """`_fmix64` in numpy: the reference of the compiled loop, and its fallback."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(33))
        x = x * _M1
        x = x ^ (x >> np.uint64(33))
        x = x * _M2
        return x ^ (x >> np.uint64(33))


def min_hashes(shingles: U64Array, a: U64Array, b: U64Array) -> U64Array:
    """Per permutation, the minimum over all shingles (the document's MinHash signature).

    Each permutation is a*fmix64(x) + b mod 2^64 (a odd: a bijection). The finaliser runs once
    per shingle, not once per shingle and permutation: the minimum is decided by the high bits,
    which a multiply-add spreads from every bit of the well-mixed input (multiply-shift hashing).
    A repeated shingle cannot change a minimum, so none is removed first (np.unique costs more
    than the repeats).
    """
    if _sketch is not None:
        return _sketch.min_hashes(np.ascontiguousarray(shingles, dtype=np.uint64), a, b)
    return numpy_min_hashes(shingles, a, b)


def numpy_min_hashes(shingles: U64Array, a: U64Array, b: U64Array) -> U64Array:
    """`min_hashes` in numpy: the reference of the compiled loop, and its fallback."""
    result = np.full(a.shape, np.iinfo(np.uint64).max, dtype=np.uint64)
    if shingles.size == 0:
        return result
    mixed = numpy_fmix64(shingles)
    with np.errstate(over="ignore"):
        for start in range(0, mixed.size, _CHUNK):  # one row per permutation: min along rows
            block = a[:, None] * mixed[None, start : start + _CHUNK]
            block += b[:, None]
            np.minimum(result, block.min(axis=1), out=result)
    return result


def super_shingles(signature: U64Array, groups: int) -> list[int]:
    """Hash of each run of len/groups consecutive components (xxh64 of their bytes)."""
    return chunk_hashes(signature.astype(">u8").tobytes(), groups)


def chunk_hashes(data: bytes, parts: int) -> list[int]:
    """xxh64 of each of `parts` equal consecutive slices of `data`."""
    return [xxhash.xxh64_intdigest(chunk) for chunk in chunks(data, parts)]


def chunks(data: bytes, parts: int) -> list[bytes]:
    """`parts` equal consecutive slices of `data` (a remainder shorter than one is left out)."""
    step = len(data) // parts
    return [data[i : i + step] for i in range(0, step * parts, step)]


def mega_shingles(supers: Sequence[int]) -> list[int]:
    """Hash of each pair of super-shingles: two documents sharing one share two supers."""
    return [
        xxhash.xxh64_intdigest(x.to_bytes(8, "big") + y.to_bytes(8, "big"))
        for x, y in itertools.combinations(supers, 2)
    ]


def resemblance(a: U64Array, b: U64Array) -> float:
    """Share of equal components: an unbiased estimate of the Jaccard resemblance."""
    return float(np.count_nonzero(a == b)) / a.size


def jaccard(a: U64Array, b: U64Array) -> float:
    """Exact Jaccard resemblance |A n B| / |A u B| of two shingle-hash sets."""
    set_a, set_b = np.unique(a), np.unique(b)
    if set_a.size == 0 and set_b.size == 0:
        return 1.0
    common = np.intersect1d(set_a, set_b, assume_unique=True).size
    return common / (set_a.size + set_b.size - common)


def containment(a: U64Array, b: U64Array) -> float:
    """|A n B| / |A|: how much of document A stands in B (text reuse, even when A is short)."""
    set_a = np.unique(a)
    if set_a.size == 0:
        return 0.0
    return np.intersect1d(set_a, np.unique(b), assume_unique=True).size / set_a.size


@dataclass(frozen=True)
class MinhashSignature:
    """84 minimums, plus (optionally) the shingle set for exact verification."""

    values: U64Array = field(compare=False)
    shingles: U64Array | None = field(default=None, compare=False)

    def __eq__(self, other: object) -> bool:
        same = isinstance(other, MinhashSignature) and np.array_equal(self.values, other.values)
        return bool(same)

    def __hash__(self) -> int:
        return hash(self.values.tobytes())




@dataclass(frozen=True)
class MinhashMethod:
    """Broder/Zelenkov-Segalovich shingles as a detection method (resemblance >= threshold)."""

    shingle: int = SHINGLE_WORDS
    hashes: int = HASHES
    supers: int = SUPER_SHINGLES
    threshold: float = 0.8
    seed: int = 20100531
    exact: bool = False  # verify by exact Jaccard of shingle sets (stored with the signature)
    containment_mode: bool = False  # text reuse: is the new document contained in an earlier one?
    containment_threshold: float = 0.8
    sample: int = 8  # containment keys: every shingle whose hash is 0 mod `sample`
    max_sample_keys: int = 4096  # bounds the keys of a huge page (its smallest sampled hashes)
    name: str = "minhash"

    def __post_init__(self) -> None:
        if self.hashes % self.supers:
            raise ValueError("hashes must split evenly into super-shingles (84 = 6 x 14)")

    @cached_property
    def _family(self) -> tuple[U64Array, U64Array]:
        return hash_family(self.hashes, self.seed)

    def params(self) -> dict[str, object]:
        return {
            "family": f"a*fmix64(x)+b v{FAMILY_VERSION}", "seed": self.seed,
            "hashes": self.hashes, "shingle": self.shingle, "supers": self.supers,
            "threshold": self.threshold, "exact": self.exact,
            "containment": self.containment_mode, "sample": self.sample,
        }

    @property
    def keeps_shingles(self) -> bool:
        """Exact Jaccard and containment need the whole shingle set stored beside the minimums."""
        return self.exact or self.containment_mode

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> MinhashSignature:
        shingles = hasher.shingle_hashes(words, self.shingle)
        a, b = self._family
        values = min_hashes(shingles, a, b)
        return MinhashSignature(values, np.unique(shingles) if self.keeps_shingles else None)

    def keys(self, signature: MinhashSignature) -> list[str]:
        megas = mega_shingles(super_shingles(signature.values, self.supers))
        keys = [f"{i}:{value:016x}" for i, value in enumerate(megas)]
        if self.containment_mode and signature.shingles is not None:
            # A shared shingle sampled in one document is sampled in the other (same rule on the
            # hash), so a short text inside a long one shares about |A|/sample keys with it.
            sampled = signature.shingles[signature.shingles % np.uint64(self.sample) == 0]
            keys += [f"s:{int(v):016x}" for v in np.sort(sampled)[: self.max_sample_keys]]
        return keys

    def encode(self, signature: MinhashSignature) -> str | dict[str, str]:
        values = _b64(signature.values)
        if signature.shingles is None:
            return values
        return {"values": values, "shingles": _b64(signature.shingles)}

    def decode(self, stored: object) -> MinhashSignature:
        if isinstance(stored, dict):
            return MinhashSignature(_unb64(stored["values"]), _unb64(stored["shingles"]))
        return MinhashSignature(_unb64(str(stored)))

    def similarity(self, a: MinhashSignature, b: MinhashSignature) -> float:
        """Resemblance (estimate, or exact Jaccard); in containment mode, share of a inside b."""
        if self.containment_mode and a.shingles is not None and b.shingles is not None:
            return containment(a.shingles, b.shingles)
        if self.exact and a.shingles is not None and b.shingles is not None:
            return jaccard(a.shingles, b.shingles)
        return resemblance(a.values, b.values)

    def is_duplicate(self, a: MinhashSignature, b: MinhashSignature) -> bool:
        limit = self.containment_threshold if self.containment_mode else self.threshold
        return self.similarity(a, b) >= limit

    def metric_floor(self) -> float | None:
        """A duplicate's least similarity, where 1 - similarity is a metric (the share of
        unequal minimums, or Jaccard distance); containment is not symmetric."""
        return None if self.containment_mode else self.threshold

    def containment(self, a: MinhashSignature, b: MinhashSignature) -> float | None:
        """|A n B| / |A| when shingle sets are known (exact mode), else None."""
        if a.shingles is None or b.shingles is None:
            return None
        return containment(a.shingles, b.shingles)

    def explain(self, a: MinhashSignature, b: MinhashSignature) -> dict[str, object]:
        shared = len(set(self.keys(a)) & set(self.keys(b)))
        info: dict[str, object] = {
            "estimate": round(resemblance(a.values, b.values), 4),
            "shared_mega_shingles": shared,
            "threshold": self.threshold,
        }
        if self.containment_mode:
            info["containment_threshold"] = self.containment_threshold
        if a.shingles is not None and b.shingles is not None:
            info["jaccard"] = round(jaccard(a.shingles, b.shingles), 4)
            info["containment_a_in_b"] = round(containment(a.shingles, b.shingles), 4)
            info["containment_b_in_a"] = round(containment(b.shingles, a.shingles), 4)
        return info


def _b64(values: npt.NDArray[np.uint64]) -> str:
    return array_text(values.astype(">u8"))


def _unb64(text: str) -> U64Array:
    return text_array(text, ">u8", np.uint64)
