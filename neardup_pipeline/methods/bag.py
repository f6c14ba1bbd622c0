"""Bag of words: a document as its words with log-TF weights, compared by weighted Jaccard and
found through banded MinHash of its word set (LSH, Indyk & Motwani; Broder's min-wise hashing).

Word order plays no part in the bag, so reordered paragraphs, moved blocks and punctuation changes
keep the similarity near 1, and replacing a few percent of the words lowers it only by about as
much. Shingle methods (simhash, minhash) lose most shared shingles to the same edits: each changed
word breaks every shingle that spans it.

A bag alone cannot tell template twins apart ("COMMIT PREPARED" and "ROLLBACK PREPARED" pages:
the same words, one key term swapped). So a match must also keep some word order: the resemblance
of the two pages' 3-word shingle sets, estimated from 84 more minimums, must reach
`order_threshold`. A 5% word edit keeps about 0.59 of them (0.54 at the 10th percentile); the
template twins of the PostgreSQL manual fall below 0.5 in 59 of 64 cases.

Below that, a page reworded by 10% (0.39 of its shingles kept) and a template twin (0.33) look
alike to shingles. There the two pages' word sequences (the first `reword_words`, as 16-bit codes)
are aligned, and the match stands only when the differences are scattered edits of single words,
none repeated (reword.py): a twin swaps the same term again and again, or has passages of its own.

Above it, twins whose key term is one word among many ("dblink_build_sql_insert" / "_update")
keep enough shingles to pass. Their titles tell: each names a subject the other's lacks, and each
page's text names its own subject more (subject.py). The verdict asks this of every method's
match (`twins`), since any method may call two pages of one template copies.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.methods.minhash import (
    FAMILY_VERSION,
    _fmix64,
    chunk_hashes,
    hash_family,
    min_hashes,
    resemblance,
)
from neardup_pipeline.methods.rarewords import distinct_words, sorted_intersection
from neardup_pipeline.methods.rarewords import weighted_jaccard as weighted_set_jaccard
from neardup_pipeline.methods.reword import Codes, RewordRule, edit_pattern, word_codes
from neardup_pipeline.setting import doc
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.text.subject import F64Array, leans_on_own_subject

F32Array = npt.NDArray[np.float32]

WORD_SET_HASHES = 84  # minimums of the word set, as many as Broder's shingles: 21 bands of 4
ORDER_SHINGLE_WORDS = 3  # the word-order check compares 3-word shingles


@dataclass(frozen=True)
class BagSignature:
    """Distinct word hashes (sorted), their log-TF weights, the word set's 84 minimums (lookup),
    the 3-word shingle set's 84 minimums (word-order check), the words in order, as codes
    (rewording check), and the hashes of the title's subject words (template-twin check)."""

    words: U64Array = field(compare=False)
    weights: F32Array = field(compare=False)
    minimums: U64Array = field(compare=False)
    order: U64Array = field(compare=False)
    sequence: Codes = field(compare=False, default_factory=lambda: np.zeros(0, np.uint16))
    subject: U64Array = field(compare=False, default_factory=lambda: np.zeros(0, np.uint64))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BagSignature)
            and np.array_equal(self.words, other.words)
            and np.array_equal(self.weights, other.weights)
        )

    def __hash__(self) -> int:
        return hash(self.words.tobytes())


def word_keys(words: Sequence[str], hasher: ShingleHasher) -> U64Array:
    """The bag's hash of each word. Word fingerprints are Rabin residues, linear and (for short
    words) the bytes themselves: a bijective finaliser makes their bits fit for min-wise hashing."""
    return _fmix64(hasher.word_hashes(words))


def bag_of(word_hashes: U64Array, max_words: int) -> tuple[U64Array, F32Array]:
    """Distinct words and weights 1 + ln(tf); a long page keeps its `max_words` smallest hashes
    (a consistent sample: two copies keep the same words)."""
    words, counts = distinct_words(word_hashes)
    weights = (1.0 + np.log(counts)).astype(np.float32)
    if words.size > max_words:
        words, weights = words[:max_words], weights[:max_words]
    return words, weights


def weighted_jaccard(a: BagSignature, b: BagSignature) -> float:
    """sum(min(wa, wb)) / sum(max(wa, wb)) over the union of the two bags."""
    return weighted_set_jaccard(a.words, a.weights, b.words, b.weights)


def term_counts(signature: BagSignature, terms: U64Array, max_words: int) -> F64Array:
    """How often the page uses each term (word hashes), read back from the log-TF weights: 0 when
    absent, NaN when the bag was truncated below the term (beyond its sample, unknown)."""
    words = signature.words
    if not words.size:
        return np.zeros(terms.size)
    at = np.minimum(np.searchsorted(words, terms), words.size - 1)
    found = words[at] == terms
    counts = np.where(found, np.rint(np.exp(signature.weights[at].astype(np.float64) - 1.0)), 0.0)
    if words.size >= max_words:
        counts[~found & (terms > words[-1])] = np.nan
    return counts


def template_twins(a: BagSignature, b: BagSignature, margin: float, max_words: int) -> bool:
    """Whether each page's title names a subject word the other's lacks, and each page uses a word
    of its own subject at least `margin` times more than the other page does (subject.py).
    A few words a title: Python sets, one count lookup per page."""
    if not margin or not a.subject.size or not b.subject.size:
        return False
    subject_a, subject_b = a.subject.tolist(), b.subject.tolist()
    own_a = sorted(set(subject_a).difference(subject_b))
    own_b = sorted(set(subject_b).difference(subject_a))
    if not own_a or not own_b:
        return False
    terms = np.array(own_a + own_b, np.uint64)
    in_a, in_b = term_counts(a, terms, max_words), term_counts(b, terms, max_words)
    mine = len(own_a)
    return leans_on_own_subject(in_a[:mine], in_b[:mine], margin) and \
        leans_on_own_subject(in_b[mine:], in_a[mine:], margin)


def band_keys(minimums: U64Array, bands: int) -> list[str]:
    """One key per band of len/bands consecutive minimums: equal bands make a candidate."""
    hashes = chunk_hashes(minimums.astype(">u8").tobytes(), bands)
    return [f"{i}:{h:016x}" for i, h in enumerate(hashes)]


@dataclass(frozen=True)
class BagSettings:
    """What the bag method reads (its 84 word-set minimums are a constant: WORD_SET_HASHES)."""

    PREFIX: ClassVar[str] = "bag_"

    threshold: float = field(default=0.6, metadata=doc("Weighted Jaccard of the two log-TF bags"))
    bands: int = field(
        default=21,
        metadata=doc(
            "Lookup bands of the 84 word-set minimums (must divide 84; 21 bands of 4: a "
            "candidate with probability 1 - (1 - s^4)^21)"
        ),
    )
    max_words: int = field(default=4096, metadata=doc("Words kept per page (smallest hashes)"))
    order_threshold: float = field(
        default=0.5,
        metadata=doc("3-word shingle resemblance that must confirm a bag match"),
    )
    subject_margin: float = field(
        default=2.0,
        metadata=doc(
            "Template twins by title: two pages whose titles each name a subject word the "
            "other's lacks, each page naming its own at least this many times more than the "
            "other page does, are never near-duplicates, whatever any method says; `0` "
            "turns the check off"
        ),
    )
    reword_max_changed: float = field(
        default=0.3,
        metadata=doc(
            "Below the order threshold: a match when the aligned words differ on at most "
            "this share of the canonical words, with no word swapped for the same word "
            "twice; `0` turns the rewording check off"
        ),
    )
    reword_max_run: float = field(
        default=2.0,
        metadata=doc("Rewording check: mean length of a differing run, in words, at most"),
    )

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1 or self.max_words < 1:
            raise ConfigError("bag_threshold must lie in (0, 1] and bag_max_words be >= 1")
        if self.bands < 1 or WORD_SET_HASHES % self.bands:
            raise ConfigError("bag_bands must divide the 84 word-set minimums (e.g. 21, 14, 12)")
        if self.subject_margin < 0:
            raise ConfigError("bag_subject_margin must be >= 0 (0 turns the subject check off)")
        if not 0 <= self.reword_max_changed <= 1 or self.reword_max_run < 1:
            raise ConfigError(
                "bag_reword_max_changed must lie in [0, 1] (0: off) and bag_reword_max_run be >= 1"
            )


@dataclass(frozen=True)
class BagMethod:
    """Weighted Jaccard of word bags >= threshold; candidates share a MinHash band."""

    threshold: float = 0.6
    hashes: int = WORD_SET_HASHES
    bands: int = 21  # 21 bands of 4: a candidate with probability 1 - (1 - s^4)^21
    max_words: int = 4096
    order_threshold: float = 0.5  # resemblance of 3-word shingles that confirms a bag match
    order_shingle: int = ORDER_SHINGLE_WORDS
    subject_margin: float = 2.0  # > 0: pages each naming their title's subject this much more
    reword: RewordRule | None = field(default_factory=RewordRule)  # None: order check alone
    reword_words: int = 2048  # words kept in order for the rewording check
    seed: int = 19970101
    name: str = "bag"

    def __post_init__(self) -> None:
        if self.hashes % self.bands:
            raise ValueError("hashes must split evenly into bands")

    @cached_property
    def _family(self) -> tuple[U64Array, U64Array]:
        return hash_family(self.hashes, self.seed)

    def params(self) -> dict[str, object]:
        return {"threshold": self.threshold, "hashes": self.hashes, "bands": self.bands,
                "family": f"a*fmix64(x)+b v{FAMILY_VERSION}",
                "max_words": self.max_words, "seed": self.seed, "weights": "1+ln(tf)",
                "order_threshold": self.order_threshold, "order_shingle": self.order_shingle,
                "topic_shift": 0.0,  # no topic-shift check: the indexes' parameters keep it
                "subject": {"margin": self.subject_margin,
                            "words": "title, section number and numbers out"},
                "reword": None if self.reword is None else {
                    **self.reword.params(), "words": self.reword_words,
                    "alignment": "levenshtein", "codes": "fmix64(word)>>48"}}

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> BagSignature:
        hashes = word_keys(words, hasher)
        bag, weights = bag_of(hashes, self.max_words)
        a, b = self._family
        shingles = hasher.shingle_hashes(words, self.order_shingle)
        return BagSignature(
            bag, weights, min_hashes(bag, a, b), min_hashes(shingles, a, b),
            word_codes(hashes, self.reword_words),
        )

    def with_subject(
        self, signature: BagSignature, words: Sequence[str], hasher: ShingleHasher,
    ) -> BagSignature:
        """The signature with its page's subject words (subject.subject_words of its title)."""
        subject = sorted(set(word_keys(words, hasher).tolist()))  # a few words: no numpy sort
        return dataclasses.replace(signature, subject=np.array(subject, np.uint64))

    def twins(self, a: BagSignature, b: BagSignature) -> bool:
        """Two pages of one template, each about its own subject: never near-duplicates, whatever
        any method's similarity (the verdict asks this of every match)."""
        return template_twins(a, b, self.subject_margin, self.max_words)

    def keys(self, signature: BagSignature) -> list[str]:
        return band_keys(signature.minimums, self.bands)

    def encode(self, signature: BagSignature) -> dict[str, str]:
        return {
            "words": _b64(signature.words.astype(">u8")),
            "weights": _b64(signature.weights.astype(">f2")),  # 3 significant digits suffice
            "minimums": _b64(signature.minimums.astype(">u8")),
            "order": _b64(signature.order.astype(">u8")),
            "sequence": _b64(signature.sequence.astype(">u2")),
            "subject": _b64(signature.subject.astype(">u8")),
        }

    def decode(self, stored: object) -> BagSignature:
        assert isinstance(stored, dict)
        return BagSignature(
            np.frombuffer(base64.b64decode(stored["words"]), ">u8").astype(np.uint64),
            np.frombuffer(base64.b64decode(stored["weights"]), ">f2").astype(np.float32),
            np.frombuffer(base64.b64decode(stored["minimums"]), ">u8").astype(np.uint64),
            np.frombuffer(base64.b64decode(stored["order"]), ">u8").astype(np.uint64),
            np.frombuffer(base64.b64decode(stored["sequence"]), ">u2").astype(np.uint16),
            np.frombuffer(base64.b64decode(stored.get("subject", "")), ">u8").astype(np.uint64),
        )

    def similarity(self, a: BagSignature, b: BagSignature) -> float:
        return weighted_jaccard(a, b)

    def is_duplicate(self, a: BagSignature, b: BagSignature) -> bool:
        return self.judge(a, b)[1]

    def metric_floor(self) -> float:
        """A duplicate's least weighted Jaccard; its distance is a metric (the order and twin
        checks only narrow the match further)."""
        return self.threshold

    def judge(self, a: BagSignature, b: BagSignature) -> tuple[float, bool]:
        """Similarity and verdict in one pass: the order, rewording and twin checks only run on a
        bag that already matches."""
        similarity = weighted_jaccard(a, b)
        return similarity, (
            similarity >= self.threshold
            and (resemblance(a.order, b.order) >= self.order_threshold or self._reworded(a, b))
            and not self.twins(a, b)
        )

    def _reworded(self, a: BagSignature, b: BagSignature) -> bool:
        return self.reword is not None and self.reword.reworded(a.sequence, b.sequence)

    def explain(self, a: BagSignature, b: BagSignature) -> dict[str, object]:
        shared = len(sorted_intersection(a.words, b.words)[0])
        return {
            "weighted_jaccard": round(weighted_jaccard(a, b), 4),
            "shared_words": shared, "words_a": int(a.words.size), "words_b": int(b.words.size),
            "shared_bands": len(set(self.keys(a)) & set(self.keys(b))),
            "order_resemblance": round(resemblance(a.order, b.order), 4),
            "threshold": self.threshold, "order_threshold": self.order_threshold,
            "subject_words": [int(a.subject.size), int(b.subject.size)],
            "template_twins": self.twins(a, b),
            "edits": edit_pattern(a.sequence, b.sequence).as_dict(),
        }


def _b64(values: npt.NDArray[np.generic]) -> str:
    return base64.b64encode(values.tobytes()).decode("ascii")
