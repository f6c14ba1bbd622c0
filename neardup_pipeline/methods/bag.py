"""Bag of words: a document as its words with log-TF weights, compared by weighted Jaccard and
found through banded MinHash of its word set (LSH, Indyk & Motwani; Broder's min-wise hashing).

Word order plays no part in the bag, so reordered paragraphs, moved blocks and punctuation changes
keep the similarity near 1, and replacing a few percent of the words lowers it only by about as
much. Shingle methods (simhash, minhash) lose most shared shingles to the same edits: each changed
word breaks every shingle that spans it.

A bag alone cannot tell template twins apart ("COMMIT PREPARED" and "ROLLBACK PREPARED" pages:
the same words, one key term swapped). So a match must also keep some word order: the resemblance
of the two pages' 3-word shingle sets, estimated from 84 more minimums, must reach
`order_threshold`. With words as they are (stop words kept), a 5% word edit keeps about 0.75
of them (0.69 at the 10th percentile); the template twins of the PostgreSQL manual keep 0.39
(median) and fall below 0.6 in 74 of 79 cases (docs/calibration.md).

Below that, a page reworded by 10% (0.56 of its shingles kept) and a template twin look alike to
shingles. There the two pages' word sequences (the first `reword_words`, as 16-bit codes)
are aligned, and the match stands only when the differences are scattered edits of single words,
none repeated (reword.py): a twin swaps the same term again and again, or has passages of its own.

Above it, twins whose key term is one word among many ("dblink_build_sql_insert" / "_update")
keep enough shingles to pass. Their titles tell: each names a subject the other's lacks, and each
page's text names its own subject more (subject.py). The verdict asks this of every method's
match (`twins`), since any method may call two pages of one template copies.

Across sites, a copy is an article under another site's chrome: whatever running text that
chrome holds (teasers, comments, a host's notes) lowers the resemblance of two copies without
making them any less copies. So two pages of different sites (text/site.py) are also copies when
the smaller is contained in the other: `site_containment` of its weighted words and `site_order`
of its 3-word sequences found there (Broder's containment, "On the resemblance and containment
of documents", 1997). Within one site containment is never used: a site's pages share its chrome,
and a short page is contained in any other page holding that chrome's running text. A copy is
found through the keys of its content region too (text/blocks.py: the article, where the host's
running text lies around it), so an original shares keys with a copy of a different length.
Where that region is not the article (a host's teasers outweigh a short one), the copy is found
by its passages: Broder's MOD-m sample of the 3-word runs keeps containment (a run sampled in
the original is sampled in every page holding it), and two consecutive samples make one key
(`passage_keys`), so a short article inside a long page still shares about one key per
`passage_sample` words with it, while a stock three-word phrase alone finds nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np
import numpy.typing as npt
import xxhash

from neardup_pipeline.methods.bag_signature import (
    MAX_COUNT,
    MINIMUM_BITS,
    PACK_VERSION,
    WORD_BITS,
    BagSignature,
    pack_signature,
    tf_weights,
    unpack_signature,
)
from neardup_pipeline.methods.minhash import (
    FAMILY_VERSION,
    _fmix64,
    chunks,
    hash_family,
    min_hashes,
    resemblance,
)
from neardup_pipeline.methods.rarewords import distinct_words, sorted_intersection
from neardup_pipeline.methods.rarewords import weighted_jaccard as weighted_set_jaccard
from neardup_pipeline.methods.reword import Codes, RewordRule, edit_pattern, word_codes
from neardup_pipeline.methods.settings import WORD_SET_HASHES
from neardup_pipeline.methods.settings import BagSettings as BagSettings
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.text.subject import F64Array, leans_on_own_subject

try:  # passage keys in one C loop (setup.py); without a compiler, numpy below
    from neardup_pipeline.sketch import _sketch
except ImportError:  # pragma: no cover - a build without the extension
    _sketch = None  # type: ignore[assignment]

F32Array = npt.NDArray[np.float32]

ORDER_SHINGLE_WORDS = 3  # the word-order check compares 3-word shingles
# Containment across sites needs a passage to be contained: a page of fewer distinct words (a
# notice, a caption) is found inside many pages that merely quote it.
MIN_CONTAINED_WORDS = 30
# A content region tells two pages of one site apart from this many canonical words (a short
# article is what a site's running-text chrome outweighs), and is a lookup key from
# MIN_CONTAINED_WORDS (shorter regions are a site's notices as often as articles).
MIN_REGION_WORDS = 10
# Two pages of one site whose content regions' word sets resemble less than this are about
# different things: two articles share about a tenth of their word sets, a copy nearly all,
# and an edited copy whose region moved to another block (a reordered page) still a fifth.
REGION_RESEMBLANCE = 0.2
# Passage keys: a 3-word run is sampled when its hash lies in the lowest 1/`passage_sample` of
# the range; a pair of consecutive samples is one key (PAIR_MIX spreads the first before the
# second is mixed in).
PAIR_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio, odd: a bijection
PASSAGE_PREFIX = "p:"  # band keys are "<band>:<hash>"
_PASSAGE_PREFIX_BYTES = PASSAGE_PREFIX.encode("ascii")
# Two pages of different sites whose content regions (or whole texts, for a page without one)
# resemble this much hold one article, whatever else each site put around it.
CONTENT_RESEMBLANCE = 0.8


def word_hashes(words: Sequence[str], hasher: ShingleHasher) -> U64Array:
    """Each word's 64-bit hash. Word fingerprints are Rabin residues, linear and (for short
    words) the bytes themselves: a bijective finaliser makes their bits fit for min-wise hashing."""
    return _fmix64(hasher.word_hashes(words))


def word_keys(words: Sequence[str], hasher: ShingleHasher) -> U64Array:
    """The bag's key of each word: the top WORD_BITS of its hash."""
    return bag_words(word_hashes(words, hasher))


def bag_words(hashes: U64Array) -> U64Array:
    """Word hashes as the bag keeps them: their top WORD_BITS (sorted order kept)."""
    return hashes >> np.uint64(64 - WORD_BITS)


def bit_minimums(values: U64Array, a: U64Array, b: U64Array) -> U64Array:
    """The MinHash signature of `values` as b-bit minwise hashing keeps it (Li & Koenig, "b-Bit
    Minwise Hashing", 2010): each minimum's top MINIMUM_BITS. Two unequal minimums agree by
    chance 1 time in 2^MINIMUM_BITS, which lifts a resemblance estimate by that much of the
    unshared share; a band of four is a 64-bit key."""
    return min_hashes(values, a, b) >> np.uint64(64 - MINIMUM_BITS)


def bag_of(word_hashes: U64Array, max_words: int) -> tuple[U64Array, F32Array]:
    """Distinct words and weights 1 + ln(tf); a long page keeps its `max_words` smallest hashes
    (a consistent sample: two copies keep the same words)."""
    words, counts = distinct_words(word_hashes)
    weights = tf_weights(np.minimum(counts, MAX_COUNT))
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


def contained(a: BagSignature, b: BagSignature, max_words: int) -> float:
    """The share of the lighter bag's weight found in the other, sum(min) / min(sum): from the
    weighted Jaccard J = sum(min) / (Sa + Sb - sum(min)). A truncated bag is a sample below its
    largest hash: both are compared below the smaller such bound."""
    bound = min((int(s.words[-1]) for s in (a, b) if s.words.size >= max_words),
                default=None)
    wa, wb = a.weights, b.weights
    words_a, words_b = a.words, b.words
    if bound is not None:
        cut_a = int(np.searchsorted(words_a, bound, side="right"))
        cut_b = int(np.searchsorted(words_b, bound, side="right"))
        words_a, wa, words_b, wb = words_a[:cut_a], wa[:cut_a], words_b[:cut_b], wb[:cut_b]
    total_a, total_b = float(wa.sum(dtype=np.float64)), float(wb.sum(dtype=np.float64))
    if not total_a or not total_b:
        return 0.0
    similarity = weighted_set_jaccard(words_a, wa, words_b, wb)
    return similarity * (total_a + total_b) / (1.0 + similarity) / min(total_a, total_b)


def sequence_contained(a: Codes, b: Codes) -> float:
    """The share of the shorter sequence's distinct 3-word runs (of word codes) found in the
    other: word order kept across the containment, as `order_threshold` keeps it for a bag."""
    runs_a, runs_b = _runs(a), _runs(b)
    if not runs_a.size or not runs_b.size:
        return 0.0
    shorter, longer = (runs_a, runs_b) if runs_a.size <= runs_b.size else (runs_b, runs_a)
    return float(np.isin(shorter, longer, assume_unique=True).sum()) / shorter.size


def _runs(codes: Codes) -> U64Array:
    return np.unique(_packed_runs(codes))


def _packed_runs(codes: Codes) -> U64Array:
    """Each 3-word run of the word codes, in text order, as one 48-bit value."""
    wide = codes.astype(np.uint64)
    if wide.size < ORDER_SHINGLE_WORDS:
        return np.zeros(0, np.uint64)
    return (wide[:-2] << np.uint64(32)) | (wide[1:-1] << np.uint64(16)) | wide[2:]


def passage_keys(sequence: Codes, sample: int) -> list[str]:
    """Keys of a page's passages (the module docstring): each pair of consecutive sampled 3-word
    runs of its word codes, in text order, once each. A run is sampled when its hash lies in
    the lowest 1/`sample` of the range (a fixed subset of all runs, as Broder's MOD-m). In one
    C loop where built (the numpy steps below cost a page's check about 4 %)."""
    if sequence.size < ORDER_SHINGLE_WORDS + 1 or sample < 1:
        return []
    if _sketch is not None:
        return _sketch.passage_keys(np.ascontiguousarray(sequence, dtype=np.uint16),
                                    (1 << 64) // sample - 1, int(PAIR_MIX), _PASSAGE_PREFIX_BYTES)
    return numpy_passage_keys(sequence, sample)


def numpy_passage_keys(sequence: Codes, sample: int) -> list[str]:
    """`passage_keys` in numpy: the reference of the compiled loop, and its fallback."""
    if sequence.size < ORDER_SHINGLE_WORDS + 1 or sample < 1:
        return []
    runs = _fmix64(_packed_runs(sequence))
    sampled = runs[runs <= np.uint64((1 << 64) // sample - 1)]
    if sampled.size < 2:
        return []
    pairs = _fmix64(sampled[:-1] * PAIR_MIX ^ sampled[1:]).astype(">u8").tobytes()
    # 16 hex digits a key: split at a space every 8 bytes, in C
    return list(dict.fromkeys([PASSAGE_PREFIX + key for key in pairs.hex(" ", 8).split()]))


def band_keys(minimums: U64Array, bands: int) -> list[str]:
    """One key per band of len/bands consecutive minimums, "<band>:<xxh64 of its bytes, 16
    hex>": equal bands make a candidate. (xxhash's own hex digest: formatting an int with a
    format spec costs twice the hashing.)"""
    return [prefix + xxhash.xxh64_hexdigest(band) for prefix, band in zip(
        _band_prefixes(bands), chunks(minimums.astype(">u8").tobytes(), bands), strict=True)]


@cache
def _band_prefixes(bands: int) -> tuple[str, ...]:
    return tuple(f"{band}:" for band in range(bands))


@dataclass(frozen=True)
class BagMethod:
    """Weighted Jaccard of word bags >= threshold; candidates share a MinHash band."""

    threshold: float = 0.6
    hashes: int = WORD_SET_HASHES
    bands: int = 21  # 21 bands of 4: a candidate with probability 1 - (1 - s^4)^21
    max_words: int = 4096
    order_threshold: float = 0.6  # resemblance of 3-word shingles that confirms a bag match
    order_shingle: int = ORDER_SHINGLE_WORDS
    subject_margin: float = 2.0  # > 0: pages each naming their title's subject this much more
    reword: RewordRule | None = field(default_factory=RewordRule)  # None: order check alone
    reword_words: int = 2048  # words kept in order for the rewording check
    site_containment: float = 0.7  # > 0: pages of two sites match by containment (see above)
    site_order: float = 0.7
    passage_sample: int = 32  # > 0: passage keys, one 3-word run in this many sampled
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
                "stored": {"layout": PACK_VERSION, "word_bits": WORD_BITS,
                           "minimum_bits": MINIMUM_BITS, "max_count": MAX_COUNT},
                "order_threshold": self.order_threshold, "order_shingle": self.order_shingle,
                "topic_shift": 0.0,  # no topic-shift check: the indexes' parameters keep it
                "subject": {"margin": self.subject_margin,
                            "words": "title, section number and numbers out"},
                "reword": None if self.reword is None else {
                    **self.reword.params(), "words": self.reword_words,
                    "alignment": "levenshtein", "codes": "fmix64(word)>>48"},
                "across_sites": None if not self.site_containment else {
                    "containment": self.site_containment, "order": self.site_order,
                    "min_words": MIN_CONTAINED_WORDS, "site": "registrable domain",
                    "region_keys": "content region, 4/5 of the words at most",
                    "passage_keys": None if not self.passage_sample else {
                        "sample": self.passage_sample, "runs": "3 word codes, fmix64",
                        "key": "consecutive sampled pair"}}}

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> BagSignature:
        hashes = word_hashes(words, hasher)
        bag, weights = bag_of(bag_words(hashes), self.max_words)
        a, b = self._family
        shingles = hasher.shingle_hashes(words, self.order_shingle)
        return BagSignature(
            bag, weights, bit_minimums(bag, a, b), bit_minimums(shingles, a, b),
            word_codes(hashes, self.reword_words),
        )

    def with_subject(
        self, signature: BagSignature, words: Sequence[str], hasher: ShingleHasher,
    ) -> BagSignature:
        """The signature with its page's subject words (subject.subject_words of its title)."""
        subject = sorted(set(word_keys(words, hasher).tolist()))  # a few words: no numpy sort
        return dataclasses.replace(signature, subject=np.array(subject, np.uint64))

    def with_site(
        self, signature: BagSignature, site: str, region: Sequence[str],
        hasher: ShingleHasher,
    ) -> BagSignature:
        """The signature with its page's site (text/site.py; "" unknown) and its content
        region's words (empty: none apart from the whole text), for containment across sites."""
        if not self.site_containment:
            return signature
        minimums = signature.region
        if len(region) >= MIN_REGION_WORDS:
            words, _ = bag_of(word_keys(region, hasher), self.max_words)
            minimums = bit_minimums(words, *self._family)
        return dataclasses.replace(signature, site=_site_hash(site), region=minimums,
                                   region_words=len(region) if minimums.size else 0)

    def twins(self, a: BagSignature, b: BagSignature) -> bool:
        """Two pages of one template, each about its own subject: never near-duplicates, whatever
        any method's similarity (the verdict asks this of every match). By title (subject.py),
        or, on one site, by content region: two of its pages whose running text is mostly the
        site's (teasers, notes) and whose regions differ hold different articles."""
        return template_twins(a, b, self.subject_margin, self.max_words) or (
            bool(self.site_containment) and a.site == b.site != 0
            and bool(a.region.size and b.region.size)
            and resemblance(a.region, b.region) < REGION_RESEMBLANCE)

    def keys(self, signature: BagSignature) -> list[str]:
        keys = band_keys(signature.minimums, self.bands)
        if signature.region_words >= MIN_CONTAINED_WORDS:  # one namespace: a region finds a
            # whole page and the reverse
            whole = set(keys)
            keys += [key for key in band_keys(signature.region, self.bands) if key not in whole]
        if self.site_containment and signature.site and \
                signature.sequence.size >= MIN_CONTAINED_WORDS:  # copies across sites only
            keys += passage_keys(signature.sequence, self.passage_sample)
        return keys

    def encode(self, signature: BagSignature) -> str:
        return pack_signature(signature)

    def decode(self, stored: object) -> BagSignature:
        if not isinstance(stored, str):
            raise ValueError("a bag signature is stored as one packed string")
        return unpack_signature(stored)

    def similarity(self, a: BagSignature, b: BagSignature) -> float:
        return weighted_jaccard(a, b)

    def is_duplicate(self, a: BagSignature, b: BagSignature) -> bool:
        return self.judge(a, b)[1]

    def metric_floor(self) -> float:
        """A duplicate's least weighted Jaccard; its distance is a metric (the order and twin
        checks only narrow the match further)."""
        return self.threshold

    def beyond_metric(self, signature: BagSignature) -> bool:
        """A page with a site may match a page of another site by containment: a copy under
        another site's chrome can be as far from its original as that chrome is long."""
        return bool(self.site_containment and signature.site)

    def judge(self, a: BagSignature, b: BagSignature) -> tuple[float, bool]:
        """Similarity and verdict in one pass: the order, rewording, containment and twin checks
        only run on a pair the cheaper ones leave open."""
        similarity = weighted_jaccard(a, b)
        match = similarity >= self.threshold and (
            resemblance(a.order, b.order) >= self.order_threshold or self._reworded(a, b))
        return similarity, (
            (match or self._copied_across_sites(a, b)) and not self.twins(a, b))

    def _copied_across_sites(self, a: BagSignature, b: BagSignature) -> bool:
        if not self.site_containment or a.site == b.site or not (a.site and b.site) \
                or min(a.words.size, b.words.size) < MIN_CONTAINED_WORDS:
            return False
        if max(a.region_words, b.region_words) >= MIN_CONTAINED_WORDS and \
                resemblance(a.content, b.content) >= CONTENT_RESEMBLANCE:
            return True  # the article one page's chrome surrounds is the other's text
        return (contained(a, b, self.max_words) >= self.site_containment
                and sequence_contained(a.sequence, b.sequence) >= self.site_order)

    def _reworded(self, a: BagSignature, b: BagSignature) -> bool:
        return self.reword is not None and self.reword.reworded(a.sequence, b.sequence)

    def explain(self, a: BagSignature, b: BagSignature) -> dict[str, object]:
        shared = len(sorted_intersection(a.words, b.words)[0])
        shared_keys = set(self.keys(a)) & set(self.keys(b))
        return {
            "weighted_jaccard": round(weighted_jaccard(a, b), 4),
            "shared_words": shared, "words_a": int(a.words.size), "words_b": int(b.words.size),
            "shared_bands": sum(not key.startswith(PASSAGE_PREFIX) for key in shared_keys),
            "shared_passages": sum(key.startswith(PASSAGE_PREFIX) for key in shared_keys),
            "order_resemblance": round(resemblance(a.order, b.order), 4),
            "threshold": self.threshold, "order_threshold": self.order_threshold,
            "subject_words": [int(a.subject.size), int(b.subject.size)],
            "template_twins": self.twins(a, b),
            "edits": edit_pattern(a.sequence, b.sequence).as_dict(),
            "other_sites": bool(a.site and b.site and a.site != b.site),
            "containment": round(contained(a, b, self.max_words), 4),
            "sequence_containment": round(sequence_contained(a.sequence, b.sequence), 4),
        }


def _site_hash(site: str) -> int:
    """A site as 64 bits (0 for none): xxh64, as the index stores it."""
    return (xxhash.xxh64_intdigest(site.encode("utf-8")) or 1) if site else 0
