"""The settings of the detection methods, apart from the methods themselves: building and
validating a configuration reads these alone, so a command checks its options before it loads
numpy and the methods' code (the methods re-export each under its old name).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.setting import doc

BITS = 64  # Charikar's fingerprint width, as in Manku et al.
MAX_KEYS = 64  # keys a fingerprint may have (blocks choose k): each is a term per page
WORD_SET_HASHES = 84  # minimums of the word set, as many as Broder's shingles: 21 bands of 4

Mode = Literal["resemblance", "containment"]
MODES: tuple[Mode, ...] = ("resemblance", "containment")


@dataclass(frozen=True)
class SimhashSettings:
    """What the simhash method reads."""

    PREFIX: ClassVar[str] = "simhash_"

    shingle: int = field(default=3, metadata=doc("Words per shingle"))
    k: int = field(
        default=3,
        metadata=doc(
            "Max Hamming distance (of 64 bits) of a near-duplicate; the lookup splits the "
            "fingerprint into k + 1 blocks, one key each (pigeonhole: k = 3, 4 keys of 16 "
            "bits)"
        ),
    )

    blocks: int = field(
        default=0,
        metadata=doc(
            "Blocks the lookup splits the fingerprint into; a key is each combination of "
            "blocks - k of them (Manku et al.'s tables). `0`: k + 1, the fewest keys (4 of 16 "
            "bits at k = 3), whose candidates grow as the index: about keys x pages / 2^bits "
            "per lookup, 61 at 1M pages. `6` at k = 3: 20 keys of 32 bits, for an index of "
            "100M pages or more (docs/capacity.md). The same pages are found either way. "
            "With the bag method configured (`auto`), simhash keys are not made: the bag's "
            "bands find every page within k bits, with no chance candidates"
        ),
    )

    def __post_init__(self) -> None:
        if self.shingle < 1:
            raise ConfigError("simhash_shingle must be >= 1")
        if not 0 <= self.k < BITS:
            raise ConfigError(f"simhash_k must lie in [0, {BITS - 1}]")
        if self.blocks and not (self.k < self.blocks <= BITS
                                and math.comb(self.blocks, self.k) <= MAX_KEYS):
            raise ConfigError(f"simhash_blocks must be 0 (k + 1) or more than k = {self.k}, "
                              f"with at most {MAX_KEYS} keys (blocks choose k)")


@dataclass(frozen=True)
class MinhashSettings:
    """What the minhash method reads (its shingles, hashes and super-shingles are the paper's
    constants: methods/minhash.py)."""

    PREFIX: ClassVar[str] = "minhash_"

    threshold: float = field(
        default=0.8,
        metadata=doc(
            "Resemblance of a near-duplicate (84 hashes over 10-word shingles, 6 "
            "super-shingles: 15 mega-shingle keys)"
        ),
    )
    exact: bool = field(
        default=False, metadata=doc("Store shingle sets and verify by exact Jaccard")
    )
    mode: Mode = field(
        default="resemblance",
        metadata=doc(
            "`containment`: a page mostly contained in an earlier one is a duplicate (needs "
            "minhash)",
            name="mode",
        ),
    )
    containment_threshold: float = field(
        default=0.8,
        metadata=doc(
            "Containment floor: share of the page's shingles found in the earlier one",
            name="containment_threshold",
        ),
    )
    containment_sample: int = field(
        default=8,
        metadata=doc(
            "Containment keys are the shingles whose hash is 0 mod this (at most 4,096 a page)",
            name="containment_sample",
        ),
    )

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1 or not 0 < self.containment_threshold <= 1:
            raise ConfigError("thresholds must lie in (0, 1]")
        if self.mode not in MODES:
            raise ConfigError(f"mode must be 'resemblance' or 'containment', got {self.mode!r}")
        if self.containment_sample < 1:
            raise ConfigError("containment_sample must be >= 1")


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
        default=0.6,
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
    site_containment: float = field(
        default=0.7,
        metadata=doc(
            "Pages of two different sites (their URLs' registrable domains) are copies when "
            "this share of the smaller page's weighted words is found in the other (an article "
            "under another site's chrome); `0` turns containment across sites off"
        ),
    )
    site_order: float = field(
        default=0.7,
        metadata=doc(
            "Containment across sites: the share of the smaller page's 3-word sequences that "
            "must be found in the other page too"
        ),
    )
    passage_sample: int = field(
        default=32,
        metadata=doc(
            "Containment across sites, lookup: one 3-word run in this many is sampled (by its "
            "hash) and each two consecutive samples are a key, so an article inside a longer "
            "page of another site is found by its passages; `0` turns passage keys off"
        ),
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
        if not 0 <= self.site_containment <= 1 or not 0 <= self.site_order <= 1:
            raise ConfigError(
                "bag_site_containment (0: off) and bag_site_order must lie in [0, 1]")
        if self.passage_sample < 0:
            raise ConfigError("bag_passage_sample must be >= 0 (0 turns passage keys off)")


@dataclass(frozen=True)
class RarewordsSettings:
    """What the rarewords method reads."""

    PREFIX: ClassVar[str] = "rarewords_"

    keys: int = field(
        default=8,
        metadata=doc(
            "m: partition keys per page (its less-frequent words with the smallest hashes)"
        ),
    )
    percentile: float = field(
        default=0.5,
        metadata=doc(
            "A word is less frequent when its DF is at most this percentile of the page's word DFs"
        ),
    )
    max_words: int = field(default=256, metadata=doc("Profile size cap (smallest hashes kept)"))
    threshold: float = field(default=0.7, metadata=doc("Weighted Jaccard of a near-duplicate"))
    warmup: int = field(
        default=100,
        metadata=doc(
            "Stream warm-up: until DF holds this many pages, rarewords scores but does not "
            "decide; at its end the pages seen so far are profiled again"
        ),
    )

    def __post_init__(self) -> None:
        if self.keys < 1 or self.max_words < self.keys:
            raise ConfigError("rarewords needs 1 <= rarewords_keys <= rarewords_max_words")
        if not 0 < self.percentile <= 1 or not 0 < self.threshold <= 1:
            raise ConfigError("rarewords_percentile and rarewords_threshold must lie in (0, 1]")
        if self.warmup < 0:
            raise ConfigError("rarewords_warmup must be >= 0")


@dataclass(frozen=True)
class AnchorsSettings:
    """What the anchors method and the pipeline's warm-up read (how a model is fitted is the fit
    command's: FitSettings)."""

    PREFIX: ClassVar[str] = "anchors_"

    model: str | None = field(
        default=None,
        metadata=doc(
            "Fitted anchors model (JSON, `neardup anchors fit`); unset: fitted from the "
            "first pages (warm-up) with the fit command's defaults"
        ),
    )
    model_out: str | None = field(
        default=None,
        metadata=doc("Save the model fitted at warm-up here (reuse it as `NEARDUP_ANCHORS_MODEL`)"),
    )
    warmup: int = field(default=1000, metadata=doc("M: pages to fit on when no model is given"))
    min_bits: int = field(
        default=3,
        metadata=doc(
            "Fewer set bits: never a duplicate, not indexed by anchors (near-empty "
            "signatures must not collide); the warm-up fit covers pages with this many bits"
        ),
    )
    tolerance: int = field(
        default=0,
        metadata=doc("Hamming distance still a duplicate (0-3; adds deletion-neighbourhood keys)"),
    )

    def __post_init__(self) -> None:
        if min(self.warmup, self.min_bits) < 1 or not 0 <= self.tolerance <= 3:
            raise ConfigError(
                "anchors_warmup and anchors_min_bits must be >= 1, anchors_tolerance 0-3"
            )
