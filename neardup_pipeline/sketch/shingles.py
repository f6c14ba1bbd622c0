"""Word shingles (overlapping n-grams), each hashed to 64 bits without a Python loop per shingle.

Every distinct word is hashed once (and cached across documents and hashers of one process); a
shingle's hash is the Rabin fingerprint of the concatenated 64-bit fingerprints of its words,
computed for all shingles of a document at once. With `xxh64`, words are hashed by xxh64 and
combined by xxh64's own round function, also vectorised.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Literal

import numpy as np
import xxhash

from neardup_pipeline.sketch.rabin import RabinHasher, U64Array

try:  # Rabin shingles in one C loop (setup.py); without a compiler, numpy below
    from neardup_pipeline.sketch import _sketch
except ImportError:  # pragma: no cover - a build without the extension
    _sketch = None  # type: ignore[assignment]

_WORD_CACHE_LIMIT = 1_000_000
_P1, _P2 = np.uint64(0x9E3779B185EBCA87), np.uint64(0xC2B2AE3D27D4EB4F)


def shingle_count(words: int, size: int) -> int:
    """Overlapping shingles in a text of `words` words: words - size + 1, at least one."""
    return max(words - size + 1, 1) if words else 0


class _WordHashStore:
    """One hash family's word hashes, shared by every hasher of the process.

    A word's hash is a pure function of the word and the family, like a stem of the word and its
    language (whose cache is the process's too): a second Deduplicator, or the next corpus of a
    batch, starts with the words the first one hashed instead of hashing them again.
    """

    def __init__(self) -> None:
        self.table: dict[str, int] = {}  # only grows: a full one is replaced, never cleared
        # The same hashes by word object (the stem cache's strs, page after page): compiled only.
        self.by_object = _sketch.WordHashMemo() if _sketch is not None else None


@cache
def _word_hash_store(hash_name: str) -> _WordHashStore:
    return _WordHashStore()


class ShingleHasher:
    """Hashes the word shingles of a document with a fixed 64-bit hash family."""

    def __init__(self, hash_name: Literal["rabin", "xxh64"] = "rabin") -> None:
        self.hash_name = hash_name
        self._rabin = RabinHasher()
        self._store = _word_hash_store(hash_name)
        # The methods of one fingerprint hash the same word list: simhash and bag both want its
        # word hashes and 3-word shingles. Keyed by the list object, which the memo keeps alive.
        self._memo: tuple[Sequence[str], dict[int, U64Array]] = ((), {})

    def params(self) -> dict[str, object]:
        """What decides the hashes (stored with an index so mixed parameters are refused)."""
        if self.hash_name == "rabin":
            return {"hash": "rabin64", "polynomial": f"{self._rabin.polynomial:016x}"}
        return {"hash": "xxh64", "seed": 0}

    def word_hashes(self, words: Sequence[str]) -> U64Array:
        """64-bit hash of every word, in order."""
        return self._memoized(words, 1)

    def _word_hashes(self, words: Sequence[str]) -> U64Array:
        store = self._store
        cache = store.table
        # Every word known (most pages of a crawl): the C loop reads the cache without building
        # a set of the page's words; by object, where the page's words are those of the pages
        # before.
        memo = store.by_object
        if memo is not None and isinstance(words, list):
            known = memo.lookup(words)
            if known is not None:
                return known
            known = _sketch.cached_hashes(words, cache)
            if known is not None:
                memo.add(words, known)
                return known
        else:
            try:
                return np.fromiter(map(cache.__getitem__, words), dtype=np.uint64,
                                   count=len(words))
            except KeyError:
                pass
        missing = set(words).difference(cache)
        if missing:
            if self.hash_name == "rabin":
                words_new = list(missing)
                new = dict(zip(words_new, self._rabin.word_fingerprints(words_new), strict=True))
            else:
                new = {w: xxhash.xxh64_intdigest(w.encode("utf-8")) for w in missing}
            if len(cache) > _WORD_CACHE_LIMIT:
                new.update((w, cache[w]) for w in set(words).difference(missing))
                store.table = cache = new
                if memo is not None:
                    memo.clear()
            else:
                cache.update(new)
        hashes = np.fromiter(map(cache.__getitem__, words), dtype=np.uint64, count=len(words))
        if memo is not None and isinstance(words, list):
            memo.add(words, hashes)
        return hashes

    def shingle_hashes(self, words: Sequence[str], size: int) -> U64Array:
        """Hashes of the overlapping `size`-word shingles (one shingle for a shorter text)."""
        if not words:
            return np.empty(0, dtype=np.uint64)
        return self._memoized(words, size)

    def _memoized(self, words: Sequence[str], size: int) -> U64Array:
        memo_words, memo = self._memo
        if memo_words is not words:
            memo = {}
            self._memo = (words, memo)
        found = memo.get(size)
        if found is None:
            found = self._word_hashes(words) if size == 1 else self._shingles(words, size)
            found.flags.writeable = False  # shared between methods: nobody may change it
            memo[size] = found
        return found

    def _shingles(self, words: Sequence[str], size: int) -> U64Array:
        word_hashes = self._memoized(words, 1)
        width = min(size, len(word_hashes))
        if self.hash_name == "rabin" and _sketch is not None:
            return _sketch.rabin_shingles(word_hashes, width, self._rabin.word_slice_table)
        return self.numpy_shingles(word_hashes, width)

    def numpy_shingles(self, word_hashes: U64Array, width: int) -> U64Array:
        """Shingle hashes in numpy, one pass per word of the shingle: the reference of the
        compiled loop, and its fallback (and the xxh64 family's only code)."""
        count = len(word_hashes) - width + 1
        h = word_hashes[:count].copy()
        for offset in range(1, width):
            following = word_hashes[offset : offset + count]
            h = self._rabin.extend64(h, following) if self.hash_name == "rabin" else _xxh_round(
                h, following
            )
        return h


def _xxh_round(acc: U64Array, value: U64Array) -> U64Array:
    """xxh64's accumulator round, acc = rotl(acc + v * P2, 31) * P1, over whole arrays."""
    with np.errstate(over="ignore"):
        acc = acc + value * _P2
        acc = (acc << np.uint64(31)) | (acc >> np.uint64(33))
        return acc * _P1
