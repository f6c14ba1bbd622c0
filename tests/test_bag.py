"""The bag-of-words method: weighted Jaccard, word-order check, LSH bands, storage round trip."""

from __future__ import annotations

import random

import numpy as np
import pytest

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.methods.bag import (
    PASSAGE_PREFIX,
    BagMethod,
    bag_of,
    band_keys,
    passage_keys,
    weighted_jaccard,
)
from neardup_pipeline.methods.bag_signature import BagSignature
from neardup_pipeline.sketch.shingles import ShingleHasher

WORDS = [f"word{i % 400}" for i in range(1200)]


def sig(words: list[str]) -> BagSignature:
    return BagMethod().signature(words, ShingleHasher())


def test_weighted_jaccard_by_hand() -> None:
    a = BagSignature(np.array([1, 2, 3], np.uint64), np.array([1, 2, 1], np.float32),
                     np.zeros(84, np.uint64), np.zeros(84, np.uint64))
    b = BagSignature(np.array([2, 3, 4], np.uint64), np.array([1, 3, 2], np.float32),
                     np.zeros(84, np.uint64), np.zeros(84, np.uint64))
    # min: 2->1, 3->1 = 2; max: 1->1, 2->2, 3->3, 4->2 = 8
    assert weighted_jaccard(a, b) == pytest.approx(2 / 8)


def test_bag_weights_are_log_tf_and_long_pages_are_sampled_consistently() -> None:
    words, weights = bag_of(np.array([5, 5, 5, 9], np.uint64), max_words=10)
    assert words.tolist() == [5, 9] and weights.tolist() == pytest.approx([1 + np.log(3), 1.0])
    sampled, _ = bag_of(np.arange(100, dtype=np.uint64)[::-1], max_words=10)
    assert sampled.tolist() == list(range(10))


def test_reordering_keeps_the_bag_and_a_word_swap_breaks_the_order_check() -> None:
    method = BagMethod()
    shuffled = WORDS[600:] + WORDS[:600]
    assert weighted_jaccard(sig(WORDS), sig(shuffled)) == 1.0
    assert method.is_duplicate(sig(WORDS), sig(shuffled))  # one seam: order nearly kept
    rng = random.Random(3)
    scrambled = WORDS.copy()
    rng.shuffle(scrambled)
    assert weighted_jaccard(sig(WORDS), sig(scrambled)) == 1.0
    assert not method.is_duplicate(sig(WORDS), sig(scrambled))  # same bag, no shared order


def test_five_percent_word_changes_stay_a_duplicate() -> None:
    rng = random.Random(5)
    edited = [f"new{i}" if rng.random() < 0.05 else w for i, w in enumerate(WORDS)]
    method = BagMethod()
    assert method.is_duplicate(sig(WORDS), sig(edited))
    assert set(method.keys(sig(WORDS))) & set(method.keys(sig(edited)))


def test_band_keys_and_round_trip() -> None:
    method = BagMethod()
    s = sig(WORDS)
    assert len(method.keys(s)) == 21 and band_keys(s.minimums, 21) == method.keys(s)
    back = method.decode(method.encode(s))
    assert np.array_equal(back.words, s.words) and np.array_equal(back.order, s.order)
    assert method.similarity(s, back) == pytest.approx(1.0, abs=1e-3)  # float16 weights


def test_auto_preset_expands() -> None:
    config = NearDupConfig()
    assert config.methods == ("auto",) and config.method_names == ("simhash", "bag")
    assert config.text.content == "chromeless"
    assert config.replace(content="main").text.content == "main"
    assert NearDupConfig(methods=("auto", "minhash")).method_names == ("simhash", "bag", "minhash")
    with pytest.raises(ConfigError, match="bag_bands"):
        NearDupConfig().replace(bag_bands=5)


def test_auto_flags_reworded_and_reordered_text() -> None:
    text = " ".join(
        f"Sentence {i} talks about {w} and the {w}s near index {i % 17} in our database."
        for i, w in enumerate(["tables", "rows", "pages", "indexes", "locks"] * 12)
    )
    sentences = text.split(". ")
    dedup = Deduplicator(MemoryIndex(), NearDupConfig())
    dedup.process(Document("orig", text=text))
    moved = ". ".join(sentences[30:] + sentences[:30])
    verdict = dedup.process(Document("moved", text=moved))
    assert verdict.duplicate_of == "orig"
    assert set(verdict.scores) == {"simhash", "bag"} and verdict.scores["bag"] > 0.999


def test_a_passage_shares_its_keys_with_every_page_holding_it() -> None:
    """Passage keys keep containment: the sample is a fixed subset of 3-word runs, so a passage's
    pairs of consecutive samples are pairs in any page around it (but at its two edges)."""
    rng = np.random.default_rng(3)
    passage = rng.integers(0, 1 << 16, 300).astype(np.uint16)
    page = np.concatenate([rng.integers(0, 1 << 16, 900).astype(np.uint16), passage,
                           rng.integers(0, 1 << 16, 700).astype(np.uint16)])
    inner, outer = set(passage_keys(passage, 16)), set(passage_keys(page, 16))
    assert 10 <= len(inner) <= 30  # about one key per 16 words
    assert inner <= outer
    other = set(passage_keys(rng.integers(0, 1 << 16, 2000).astype(np.uint16), 16))
    assert not other & outer
    assert passage_keys(passage, 0) == [] and passage_keys(passage[:3], 1) == []
    assert len(passage_keys(passage, 1)) == 297  # every run sampled: one key per pair of runs


def test_only_a_page_with_a_site_has_passage_keys() -> None:
    """Passage keys serve containment across sites: a page without a site (no URL) never uses
    it, and neither does a method with containment off."""
    method = BagMethod()
    plain = method.signature(WORDS, ShingleHasher())
    assert not any(key.startswith(PASSAGE_PREFIX) for key in method.keys(plain))
    sited = method.with_site(plain, "example.org", [], ShingleHasher())
    passages = [key for key in method.keys(sited) if key.startswith(PASSAGE_PREFIX)]
    assert passages and passages == passage_keys(plain.sequence, method.passage_sample)
    off = BagMethod(site_containment=0.0)
    assert not any(key.startswith(PASSAGE_PREFIX) for key in off.keys(off.with_site(
        plain, "example.org", [], ShingleHasher())))
    with pytest.raises(ConfigError, match="passage_sample"):
        NearDupConfig().replace(bag_passage_sample=-1)
