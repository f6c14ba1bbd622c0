"""benchmarks/capacity.py's derivation: a page under a seed keeps its key counts and signature
sizes, gets key values of its own, and stays as near to its base page's near-copies as before."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from benchmarks.capacity import BasePage, Deriver, derived_id, derived_page, mix
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.index.base import IndexEntry
from neardup_pipeline.methods.bag import PASSAGE_PREFIX


def _text(seed: int, words: int = 400) -> str:
    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(3000)]
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _edited(text: str, fraction: float, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"x{rng.randrange(10**6)}" if rng.random() < fraction else w
                    for w in text.split())


def _base(fpr: Fingerprinter, url: str, text: str) -> BasePage:
    fp = fpr.fingerprint(Document(url, text=text, url=url))
    assert fp.status == "ok"
    entry = IndexEntry(url, fpr.encode(fp), fp.keys, {"cluster": url, "url": url,
                                                      "content_hash": fp.content_hash})
    page = {"url": url, "doc_id": url, "title": "t", "text": text, "cluster_id": url,
            "is_canonical": True, "text_length": len(text)}
    return BasePage(entry, page, fpr.decode(entry.signatures))


def _key_counts(keys: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Each method's lookup keys but the bag's passage keys."""
    return {method: sum(not key.startswith(PASSAGE_PREFIX) for key in values)
            for method, values in keys.items()}


def _shared_keys(a: Mapping[str, Sequence[str]], b: Mapping[str, Sequence[str]],
                 ) -> dict[str, int]:
    """Each method's keys two entries share, the bag's passage keys left out."""
    return _key_counts({method: list(set(a[method]) & set(b[method])) for method in a})


def _passage_keys(keys: Mapping[str, Sequence[str]]) -> int:
    return sum(key.startswith(PASSAGE_PREFIX) for key in keys.get("bag", ()))


def test_mix_is_a_bijection_on_its_sample() -> None:
    values = np.arange(100_000, dtype=np.uint64)
    assert len(np.unique(mix(values, 12345))) == len(values)


def test_a_derived_page_keeps_sizes_and_gets_keys_of_its_own() -> None:
    fpr = Fingerprinter()
    deriver = Deriver(fpr)
    base = _base(fpr, "https://example.org/a?v=1", _text(1))
    seen = {k for keys in base.entry.keys.values() for k in keys}
    for seed in (1, 2, 3):
        entry = deriver.entry(base, seed)
        assert entry.doc_id == derived_id(base.entry.doc_id, seed) != base.entry.doc_id
        assert entry.meta["cluster"] == entry.doc_id
        assert _key_counts(entry.keys) == _key_counts(base.entry.keys)
        # passage keys sample the word codes' 3-word runs: mapped codes sample others, as many
        # on average (about one per 32 words)
        derived, real = (_passage_keys(keys) for keys in (entry.keys, base.entry.keys))
        assert real >= 10 and abs(derived - real) <= real // 2
        assert len(json.dumps(entry.signatures)) == len(json.dumps(base.entry.signatures))
        keys = {k for values in entry.keys.values() for k in values}
        assert not keys & seen  # distinct pages share no key but by chance
        seen |= keys
        fpr.decode(entry.signatures)  # stored form reads back
    for seed in (0, 4):  # a query's keys are those its stored copy gets
        assert deriver.keys(base, seed) == deriver.entry(base, seed).keys
    page = derived_page(base.page, 2)
    assert page["url"].endswith("&r=2") and page["text"] == base.page["text"]


def test_near_copies_stay_near_under_one_seed() -> None:
    fpr = Fingerprinter()
    deriver = Deriver(fpr)
    text = _text(2)
    a = _base(fpr, "https://example.org/a", text)
    b = _base(fpr, "https://example.org/b", _edited(text, 0.01, 3))
    shared = _shared_keys(a.entry.keys, b.entry.keys)
    assert sum(shared.values()) > 0
    for seed in (5, 6):
        da, db = deriver.entry(a, seed), deriver.entry(b, seed)
        assert _shared_keys(da.keys, db.keys) == shared
        assert {k for k in set(da.keys["bag"]) & set(db.keys["bag"])
                if k.startswith(PASSAGE_PREFIX)}  # other runs sampled, as many shared
        decoded_a, decoded_b = fpr.decode(da.signatures), fpr.decode(db.signatures)
        for name, method in fpr.methods.items():  # every method: as similar as the base pair
            assert method.similarity(decoded_a[name], decoded_b[name]) == pytest.approx(
                method.similarity(a.decoded[name], b.decoded[name]))
