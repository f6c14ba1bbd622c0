"""Less-frequent words: rare words, not frequent ones, characterise a document.

Two stages. Cheap: a document's partition keys are m of its less-frequent words; only documents
sharing a key are compared. Expensive: weighted Jaccard over the less-frequent word profiles.

Document frequency (DF) comes from the index (`CorpusStats`, implemented by every backend), so a
signature is made in two steps: `RarewordsMethod.signature` hashes the words (no corpus needed),
`RarewordsMethod.complete` reads their DF and derives the profile and keys. Words are 64-bit
hashes (`ShingleHasher.word_hashes`); the words themselves are only recovered for `compare`.

Choices (measured on the benchmarks' corpora):
- DF counts the document itself: df = DF among the other documents + 1, N likewise, so a batch
  (DF of the whole corpus first) and a stream (DF so far) use one definition.
- The less-frequent words are those whose DF is at most the `percentile` of the document's own
  word DFs (its words stand for the vocabulary it draws on: cheap, needs no vocabulary scan, and
  scale-free); at most `max_words` of them, chosen by smallest hash.
- Rarity is a class, not an order: among the less-frequent words, ties (all of them) are broken
  by hash. Ranking by raw DF would make the rarest words of an edited copy its own edits (DF 1),
  and its keys would miss the original; the smallest hashes of a set are a bottom-m sample, so two
  profiles with weighted Jaccard J share a key with probability about 1 - (1 - J)^m.
- Weights: (1 + ln tf) * (1 + ln(N / df)), a sublinear TF-IDF; float16 is plenty for a weight.
  Similarity scales each profile to sum 1 first (IDF grows with N: see `similarity`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from neardup_pipeline.methods.contract import CorpusStats
from neardup_pipeline.methods.settings import RarewordsSettings as RarewordsSettings
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.sketch.stored import array_text, text_array

try:  # distinct counts and weighted Jaccard in one C pass each (setup.py); else numpy below
    from neardup_pipeline.sketch import _sketch
except ImportError:  # pragma: no cover - a build without the extension
    _sketch = None  # type: ignore[assignment]

F32Array = npt.NDArray[np.float32]
KEY_PREFIX = "w:"


@dataclass(frozen=True)
class StaticStats:
    """Fixed DF table (tests, `compare`, a DF computed elsewhere)."""

    frequencies: Mapping[int, int] = field(default_factory=dict)
    documents: int = 0

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        return {int(w): self.frequencies.get(int(w), 0) for w in word_hashes}

    def document_count(self, exclude: str | None = None) -> int:
        return self.documents


def distinct_words(word_hashes: U64Array) -> tuple[U64Array, npt.NDArray[np.int64]]:
    """Sorted distinct word hashes and each one's term frequency (np.unique's, without its
    masks and temporaries where the extension is built)."""
    if _sketch is not None:
        return _sketch.distinct_counts(np.sort(np.asarray(word_hashes, dtype=np.uint64)))
    words, counts = np.unique(word_hashes, return_counts=True)
    return words.astype(np.uint64), counts.astype(np.int64)


def rare_profile(
    words: U64Array,
    tf: npt.NDArray[np.int64],
    df: npt.NDArray[np.int64],
    documents: int,
    percentile: float,
    max_words: int,
) -> tuple[U64Array, F32Array]:
    """(hashes sorted ascending, weights) of the less-frequent words of one document.

    `df` and `documents` count the document itself (df >= 1, documents >= 1).
    """
    if words.size == 0:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.float32)
    # method="inverted_cdf" picks an actual DF value: no interpolation between two words
    cut = float(np.quantile(df, percentile, method="inverted_cdf"))
    chosen = np.flatnonzero(df <= cut)[:max_words]  # words are sorted: smallest hashes first
    idf = 1.0 + np.log(documents / df[chosen])
    weights = (1.0 + np.log(tf[chosen])) * idf
    return words[chosen], weights.astype(np.float16).astype(np.float32)


def partition_keys(profile: U64Array, m: int) -> list[str]:
    """The m smallest hashes of the profile (it is sorted), as keyword values."""
    return [f"{KEY_PREFIX}{int(h):016x}" for h in profile[:m]]


def sorted_intersection(
    a: U64Array, b: U64Array
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Positions (in a, in b) of the values two sorted, duplicate-free arrays share, in value
    order: a binary search of the shorter in the longer (np.intersect1d sorts both again)."""
    if a.size > b.size:
        in_b, in_a = sorted_intersection(b, a)
        return in_a, in_b
    if a.size == 0:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    pos = np.minimum(np.searchsorted(b, a), b.size - 1)
    hit = b[pos] == a
    return np.flatnonzero(hit), pos[hit]


def weighted_jaccard(
    a: U64Array, wa: F32Array, b: U64Array, wb: F32Array
) -> float:
    """sum(min) / sum(max) over the union of two weighted word sets (sorted hash arrays)."""
    if _sketch is not None:  # one merge, no index arrays (a tenth of the numpy time)
        return float(_sketch.weighted_jaccard(
            np.ascontiguousarray(a, dtype=np.uint64), np.ascontiguousarray(wa, dtype=np.float32),
            np.ascontiguousarray(b, dtype=np.uint64), np.ascontiguousarray(wb, dtype=np.float32)))
    return numpy_weighted_jaccard(a, wa, b, wb)


def numpy_weighted_jaccard(
    a: U64Array, wa: F32Array, b: U64Array, wb: F32Array
) -> float:
    """`weighted_jaccard` in numpy: the reference of the compiled merge, and its fallback."""
    if a.size == 0 and b.size == 0:
        return 1.0
    ia, ib = sorted_intersection(a, b)
    shared_min = float(np.minimum(wa[ia], wb[ib]).sum(dtype=np.float64))
    shared_max = float(np.maximum(wa[ia], wb[ib]).sum(dtype=np.float64))
    only = float(wa.sum(dtype=np.float64) + wb.sum(dtype=np.float64)) - shared_min - shared_max
    total = shared_max + only
    return shared_min / total if total > 0 else 0.0


@dataclass(frozen=True)
class RarewordsSignature:
    """A document's less-frequent word profile (hashes ascending, weights).

    `words`/`tf` (every distinct word, for DF) exist only for a freshly computed signature, never
    for one read back from an index; `documents` is N (itself included) when it was made.
    """

    profile: U64Array = field(compare=False)
    weights: F32Array = field(compare=False)
    documents: int = 0
    words: U64Array | None = field(default=None, compare=False, repr=False)
    tf: npt.NDArray[np.int64] | None = field(default=None, compare=False, repr=False)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RarewordsSignature)
            and np.array_equal(self.profile, other.profile)
            and np.array_equal(self.weights, other.weights)
        )

    def __hash__(self) -> int:
        return hash(self.profile.tobytes())

    def stored_bytes(self) -> int:
        """Raw size of what an index keeps for verification (8-byte hash + 2-byte weight)."""
        return int(self.profile.size) * 10


@dataclass(frozen=True)
class RarewordsMethod:
    """Less-frequent words as a detection method (weighted Jaccard >= threshold)."""

    keys_per_doc: int = 8
    percentile: float = 0.5
    max_words: int = 256
    threshold: float = 0.7
    warmup: int = 100  # fewer documents in DF than this: scores only, no verdict
    name: str = "rarewords"

    def params(self) -> dict[str, object]:
        return {
            "version": 1, "keys": self.keys_per_doc, "percentile": self.percentile,
            "max_words": self.max_words, "threshold": self.threshold,
        }

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> RarewordsSignature:
        """First step: the distinct words and their TF (the profile needs DF: `complete`)."""
        distinct, tf = distinct_words(hasher.word_hashes(words))
        empty = np.empty(0, dtype=np.uint64)
        return RarewordsSignature(empty, np.empty(0, dtype=np.float32), 0, distinct, tf)

    def complete(
        self, draft: RarewordsSignature, stats: CorpusStats | None, doc_id: str | None = None
    ) -> RarewordsSignature:
        """Second step: DF of the words (this document counted once) -> profile and weights."""
        if draft.words is None or draft.tf is None:
            return draft
        words, tf = draft.words, draft.tf
        if stats is None:
            df = np.ones(words.size, dtype=np.int64)
            documents = 1
        else:
            known = stats.document_frequencies(words.tolist(), exclude=doc_id)
            df = np.fromiter((known.get(int(w), 0) for w in words.tolist()), dtype=np.int64,
                             count=words.size) + 1
            documents = stats.document_count(exclude=doc_id) + 1
        profile, weights = rare_profile(words, tf, df, documents, self.percentile,
                                        self.max_words)
        return RarewordsSignature(profile, weights, documents, words, tf)

    def corpus_words(self, signature: RarewordsSignature) -> U64Array | None:
        """Distinct word hashes to count in DF (None for a signature read from an index)."""
        return signature.words

    def warming_up(self, signature: RarewordsSignature) -> bool:
        """Too few documents in DF for the rare-word verdict to mean much (stream mode)."""
        return signature.documents < self.warmup

    def keys(self, signature: RarewordsSignature) -> list[str]:
        return partition_keys(signature.profile, self.keys_per_doc)

    def encode(self, signature: RarewordsSignature) -> dict[str, object]:
        return {
            "h": array_text(signature.profile.astype(">u8")),
            "w": array_text(signature.weights.astype(">f2")),
            "n": signature.documents,
        }

    def decode(self, stored: object) -> RarewordsSignature:
        if not isinstance(stored, Mapping):
            raise ValueError("a rarewords signature is stored as an object")
        profile = text_array(stored["h"], ">u8", np.uint64)
        weights = text_array(stored["w"], ">f2", np.float32)
        return RarewordsSignature(profile, weights, int(stored.get("n", 0)))

    def similarity(self, a: RarewordsSignature, b: RarewordsSignature) -> float:
        """Weighted Jaccard of the profiles, each scaled to sum 1: IDF grows with N, so a page
        profiled early (small N) and its copy profiled later differ in scale, not in shape."""
        return weighted_jaccard(a.profile, _unit(a.weights), b.profile, _unit(b.weights))

    def is_duplicate(self, a: RarewordsSignature, b: RarewordsSignature) -> bool:
        return self.similarity(a, b) >= self.threshold

    def explain(self, a: RarewordsSignature, b: RarewordsSignature) -> dict[str, object]:
        shared = np.intersect1d(a.profile, b.profile, assume_unique=True)
        keys = set(self.keys(a)) & set(self.keys(b))
        return {
            "rare_words_a": int(a.profile.size),
            "rare_words_b": int(b.profile.size),
            "shared_rare_words": int(shared.size),
            "shared_keys": len(keys),
            "threshold": self.threshold,
        }


def shared_rare_words(
    words_a: Sequence[str],
    a: RarewordsSignature,
    b: RarewordsSignature,
    hasher: ShingleHasher,
    limit: int = 10,
) -> list[str]:
    """The canonical words behind the shared profile hashes, heaviest first (for `compare`)."""
    ia, ib = sorted_intersection(a.profile, b.profile)
    low = np.minimum(a.weights[ia], b.weights[ib]).tolist()
    weight = dict(zip(a.profile[ia].tolist(), low, strict=True))
    by_hash: dict[int, str] = {}
    for word, h in zip(words_a, hasher.word_hashes(words_a).tolist(), strict=True):
        if h in weight:
            by_hash.setdefault(h, word)
    ranked = sorted(by_hash, key=lambda h: (-weight[h], by_hash[h]))
    return [by_hash[h] for h in ranked[:limit]]


def memory_per_document(signature: RarewordsSignature, m: int) -> dict[str, int]:
    """Bytes an index keeps for one document: keys, profile, and its distinct words for DF."""
    words = 0 if signature.words is None else int(signature.words.size)
    return {
        "keys": min(m, int(signature.profile.size)) * (len(KEY_PREFIX) + 16),
        "profile": signature.stored_bytes(),
        "df_words": words * 8,
    }


def _unit(weights: F32Array) -> F32Array:
    total = float(weights.sum(dtype=np.float64))
    return weights / np.float32(total) if total > 0 else weights
