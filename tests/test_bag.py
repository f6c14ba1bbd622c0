"""The bag-of-words method: weighted Jaccard, word-order check, LSH bands, storage round trip."""

from __future__ import annotations

import random

import numpy as np
import pytest

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.methods.bag import (
    BagMethod,
    BagSignature,
    bag_of,
    band_keys,
    topic_shift,
    weighted_jaccard,
)
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


def test_template_twins_lean_on_their_own_terms_and_edits_do_not() -> None:
    """DROP SCHEMA / DROP DOMAIN: one page, its key term swapped a dozen times."""
    rng = random.Random(7)
    template = [f"common{rng.randrange(150)}" for _ in range(400)]
    slots = sorted(rng.sample(range(400), 12))
    schema, domain = template.copy(), template.copy()
    for n in slots:
        schema[n], domain[n] = "schema", "domain"
    twins = sig(schema), sig(domain)
    assert weighted_jaccard(*twins) > 0.9  # the bag alone calls them copies
    assert topic_shift(*twins, max_words=4096) == pytest.approx(1 + np.log(12), abs=0.01)
    edited = [f"new{i}" if rng.random() < 0.05 else w for i, w in enumerate(schema)]
    assert topic_shift(sig(schema), sig(edited), max_words=4096) < 1.5  # words used once
    chrome = ["navigation", "home", "about"] * 8 + schema
    assert topic_shift(sig(schema), sig(chrome), max_words=4096) == 0.0  # one side only
    strict = BagMethod(topic_shift=2.0, order_threshold=0.0)
    assert not strict.is_duplicate(*twins)
    assert strict.is_duplicate(sig(schema), sig(edited))
    assert strict.is_duplicate(sig(schema), sig(chrome))
    assert BagMethod(order_threshold=0.0).is_duplicate(*twins)  # off by default
    assert "topic_shift" in strict.explain(*twins)


def test_topic_shift_ignores_words_beyond_a_truncated_sample() -> None:
    def bag(words: list[int]) -> BagSignature:
        return BagSignature(np.array(words, np.uint64), np.full(len(words), 3.0, np.float32),
                            np.zeros(84, np.uint64), np.zeros(84, np.uint64))

    long_page = bag([w for w in range(1, 22) if w != 5])  # lacks word 5
    sampled = bag(list(range(1, 11)))  # its 10 smallest words: 11..21 unknown, not absent
    assert topic_shift(long_page, sampled, max_words=10) == 0.0
    assert topic_shift(long_page, sampled, max_words=100) == pytest.approx(3.0)  # not truncated


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
    assert config.text_content == "chromeless"
    assert config.replace(content="main").text_content == "main"
    assert NearDupConfig(methods=("auto", "minhash")).method_names == ("simhash", "bag", "minhash")
    with pytest.raises(ConfigError, match="bag_bands"):
        NearDupConfig(bag_bands=5)


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
