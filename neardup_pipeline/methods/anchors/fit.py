"""Fitting an anchor-word model (anchors/model.py) on a corpus, from document statistics only
(no labels):

* candidates: words whose document frequency lies in [min_df, max_df * documents];
* a small edit changes a word's count by `delta = max(edit * tf, edit_floor)` occurrences, so a
  document is *fragile* for threshold t when |tf - t * maxtf| <= delta (a document without the
  word, tf = 0, when t * maxtf <= edit_floor; a document without any word never: it has no
  anchors fingerprint);
* threshold: the midpoint of a gap between consecutive observed relative frequencies, 0 (the
  documents without the word) included, so strictly inside the observed range, where the fewest
  documents are fragile: the thinnest part of the distribution; ties go to the lower threshold
  (more documents set). At least `min_support` documents must set the bit.
* word precision = stability x exclusivity, where stability = 1 - fragile / (set + fragile unset)
  is the chance that the bit of a document that has it (or could gain it) survives a small edit,
  and exclusivity = 1 - set / documents is the chance that a random other document does not share
  the set bit. Both lower what breaks signature equality between copies or makes distinct pages
  agree.
* stage 1 (coverage at a floor precision): among words with precision >= floor, greedily add the
  word that brings most documents up to `min_bits` set bits, until no word raises coverage;
* stage 2 (precision at fixed coverage): while more than N words remain, drop the least precise
  word whose removal leaves every covered document covered; with fewer than N, add the most
  precise remaining eligible words (each extra bit separates more distinct pages; coverage never
  falls). Stop at N words (or when the eligible words run out: small corpora give fewer).

Everything per word and per document is numpy over the (word, document) pairs: no Python loop per
word per document.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup_pipeline.methods.anchors.model import AnchorModel, FitSettings, normalizer_for
from neardup_pipeline.text.settings import TextSettings

_OFFSET = 4.0  # per-word offset for global searchsorted: every per-word value lies in [0, 2]


@dataclass(frozen=True)
class _Pairs:
    """(word, document) pairs of the candidate words, sorted by word then relative frequency."""

    word: npt.NDArray[np.int64]
    doc: npt.NDArray[np.int64]
    tf: npt.NDArray[np.float64]
    top: npt.NDArray[np.float64]  # max tf of the pair's document
    start: npt.NDArray[np.int64]  # per candidate word: first pair
    df: npt.NDArray[np.int64]
    vocab_ids: npt.NDArray[np.int64] | None = None  # candidate word -> vocabulary id

    @property
    def rel(self) -> npt.NDArray[np.float64]:
        return self.tf / self.top


def _count(documents: Iterable[Sequence[str]]) -> tuple[list[str], _Pairs, int, npt.NDArray[Any]]:
    """Vocabulary (sorted) and every (word, document, tf) pair, with each document's max tf."""
    vocab: dict[str, int] = {}
    words: list[int] = []
    docs: list[int] = []
    tfs: list[int] = []
    n = 0
    for n, text in enumerate(documents, start=1):
        counts = Counter(text)
        words.extend(vocab.setdefault(w, len(vocab)) for w in counts)
        tfs.extend(counts.values())
        docs.extend(itertools.repeat(n - 1, len(counts)))
    names = sorted(vocab)
    rank = np.empty(len(vocab), dtype=np.int64)  # insertion id -> sorted id: order-independent
    rank[np.fromiter((vocab[w] for w in names), dtype=np.int64, count=len(names))] = np.arange(
        len(names)
    )
    word = rank[np.asarray(words, dtype=np.int64)] if words else np.zeros(0, dtype=np.int64)
    doc = np.asarray(docs, dtype=np.int64)
    tf = np.asarray(tfs, dtype=np.float64)
    top = np.zeros(n, dtype=np.float64)
    np.maximum.at(top, doc, tf)
    pairs = _Pairs(word, doc, tf, top[doc], np.zeros(0, dtype=np.int64), np.zeros(0, np.int64))
    return names, pairs, n, top


def _candidates(pairs: _Pairs, vocab_size: int, n: int, s: FitSettings) -> _Pairs:
    """Pairs of the words in the document-frequency band, sorted by (word, relative tf)."""
    df = np.bincount(pairs.word, minlength=vocab_size)
    keep_word = (df >= max(s.min_df, s.min_support + 1)) & (df <= s.max_df * n)
    keep = keep_word[pairs.word]
    word, doc, tf, top = pairs.word[keep], pairs.doc[keep], pairs.tf[keep], pairs.top[keep]
    order = np.lexsort((doc, tf / top, word))
    word, doc, tf, top = word[order], doc[order], tf[order], top[order]
    words_kept, start, counts = np.unique(word, return_index=True, return_counts=True)
    dense = np.searchsorted(words_kept, word)  # candidate words renumbered 0..m-1
    return _Pairs(dense, doc, tf, top, start.astype(np.int64), counts.astype(np.int64),
                  words_kept.astype(np.int64))


def _count_le(sorted_keys: npt.NDArray[np.float64], x: npt.NDArray[np.float64],
              base: npt.NDArray[np.float64], side: Any) -> npt.NDArray[np.int64]:
    """Per query, how many of its word's values are <= x ('right') or < x ('left')."""
    return (np.searchsorted(sorted_keys, x, side=side)
            - np.searchsorted(sorted_keys, base, side="left")).astype(np.int64)


def _thresholds(p: _Pairs, n: int, all_top: npt.NDArray[np.float64], s: FitSettings) -> dict[
    str, npt.NDArray[Any]
]:
    """Per candidate word: threshold at the thinnest gap, set count, fragile counts, precision."""
    rel = p.rel
    end = p.start + p.df
    m = p.df.size
    # Candidate cuts: between consecutive distinct relative frequencies of the same word.
    same = p.word[:-1] == p.word[1:]
    rising = rel[:-1] < rel[1:]
    pos = np.nonzero(same & rising)[0]
    # ... and between 0 (the documents without the word) and the lowest observed value.
    cut_word = np.concatenate([np.arange(m), p.word[pos]])
    t = np.concatenate([rel[p.start] / 2.0, (rel[pos] + rel[pos + 1]) / 2.0])
    support = np.concatenate([p.df, end[p.word[pos]] - (pos + 1)])
    ok = support >= s.min_support
    cut_word, t, support = cut_word[ok], t[ok], support[ok]
    # Fragile documents with the word: lo <= t <= hi, counted by global searchsorted per word.
    delta = np.maximum(s.edit_floor, s.edit * p.tf)
    off = p.word * _OFFSET
    lo = np.sort((p.tf - delta) / p.top + off)
    hi = np.sort((p.tf + delta) / p.top + off)
    inv = np.sort(s.edit_floor / p.top + off)
    x = t + cut_word * _OFFSET
    base = cut_word * _OFFSET
    lo_le = _count_le(lo, x, base, "right")
    fragile_present = lo_le - _count_le(hi, x, base, "left")
    fragile_set = lo_le - (p.df[cut_word] - support)  # every pair at or below t has lo <= t
    # Documents without the word (tf = 0): fragile when t * maxtf <= edit_floor. A document
    # without any word (maxtf = 0) never is: anchors does not fingerprint it (no text).
    worded = all_top[all_top > 0]
    all_inv = np.sort(s.edit_floor / worded)
    over_all = worded.size - np.searchsorted(all_inv, t, side="right")
    over_present = p.df[cut_word] - _count_le(inv, x, base, "right")
    fragile = fragile_present + (over_all - over_present)
    # Thinnest cut per word: fewest fragile documents, then most documents set.
    order = np.lexsort((-support, fragile, cut_word))
    first = order[np.r_[True, cut_word[order][1:] != cut_word[order][:-1]]] if order.size else order
    chosen_word = cut_word[first]
    threshold = np.full(m, np.nan)
    threshold[chosen_word] = t[first]
    sets = np.zeros(m, dtype=np.int64)
    sets[chosen_word] = support[first]
    frag = np.zeros(m, dtype=np.int64)
    frag[chosen_word] = fragile[first]
    unset_fragile = fragile[first] - fragile_set[first]
    stability = np.zeros(m)
    stability[chosen_word] = 1.0 - fragile[first] / (support[first] + unset_fragile)
    precision = stability * (1.0 - sets / max(n, 1))
    precision[np.isnan(threshold)] = -1.0
    return {"threshold": threshold, "sets": sets, "fragile": frag,
            "stability": stability, "precision": precision}


def fit(
    documents: Iterable[Sequence[str]],
    settings: FitSettings | None = None,
    normalizer: Mapping[str, object] | None = None,
) -> AnchorModel:
    """Fit a model on documents given as canonical words (see the module docstring)."""
    s = settings or FitSettings()
    started = time.perf_counter()
    names, raw, n, all_top = _count(documents)
    p = _candidates(raw, len(names), n, s)
    vocab_ids = p.vocab_ids if p.vocab_ids is not None else np.zeros(0, np.int64)
    m = p.df.size
    w = _thresholds(p, n, all_top, s) if m else {
        "threshold": np.zeros(0), "sets": np.zeros(0, np.int64), "precision": np.zeros(0),
        "stability": np.zeros(0), "fragile": np.zeros(0, np.int64),
    }
    precision, sets = w["precision"], w["sets"]
    end = p.start + p.df

    def docs_of(i: int) -> npt.NDArray[np.int64]:
        return p.doc[end[i] - sets[i] : end[i]]  # the top `sets` pairs have rel > threshold

    eligible = np.nonzero(precision >= s.floor_precision)[0] if m else np.zeros(0, np.int64)
    # Stage 1: lazy greedy coverage (the gain of a word only shrinks as others are chosen).
    have = np.zeros(n, dtype=np.int64)
    heap = [(-int(sets[i]), -float(precision[i]), int(i)) for i in eligible]
    heapq.heapify(heap)
    chosen: list[int] = []
    while heap:
        _, neg_prec, i = heapq.heappop(heap)
        gain = int(np.count_nonzero(have[docs_of(i)] < s.min_bits))
        if gain == 0:
            continue
        if heap and gain < -heap[0][0]:
            heapq.heappush(heap, (-gain, neg_prec, i))
            continue
        chosen.append(i)
        have[docs_of(i)] += 1
    stage1 = len(chosen)
    coverage1 = float(np.count_nonzero(have >= s.min_bits)) / max(n, 1)
    # Stage 2: raise precision at fixed coverage until N words remain.
    selected = set(chosen)
    if len(selected) > s.words:
        for i in sorted(selected, key=lambda j: (precision[j], j)):
            if len(selected) <= s.words:
                break
            if not np.any(have[docs_of(i)] == s.min_bits):  # every covered doc stays covered
                selected.discard(i)
                have[docs_of(i)] -= 1
        for i in sorted(selected, key=lambda j: (precision[j], j))[: len(selected) - s.words]:
            selected.discard(i)  # coverage must give way: N is the hard limit
            have[docs_of(i)] -= 1
    else:
        rest = sorted((int(i) for i in eligible if i not in selected),
                      key=lambda j: (-precision[j], j))
        for k in rest[: s.words - len(selected)]:
            selected.add(k)
            have[docs_of(k)] += 1
    final = np.asarray(sorted(selected, key=lambda j: names[vocab_ids[j]]), dtype=np.int64)
    stats: dict[str, object] = {
        "documents": n, "vocabulary": len(names), "candidates": int(m),
        "with_threshold": int(np.count_nonzero(precision >= 0)) if m else 0,
        "eligible": int(eligible.size), "stage1_words": stage1,
        "stage1_coverage": round(coverage1, 4), "words": int(final.size),
        "coverage": round(float(np.count_nonzero(have >= s.min_bits)) / max(n, 1), 4),
        "mean_precision": round(float(precision[final].mean()), 4) if final.size else 0.0,
        "mean_stability": round(float(w["stability"][final].mean()), 4) if final.size else 0.0,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return AnchorModel(
        tuple(names[vocab_ids[i]] for i in final),
        tuple(float(w["threshold"][i]) for i in final),
        dict(normalizer or {}),
        s,
        tuple(round(float(precision[i]), 6) for i in final),
        tuple(int(sets[i]) for i in final),
        stats,
    )


def fit_corpus(texts: Iterable[str], text: TextSettings, settings: FitSettings) -> AnchorModel:
    """Fit on raw texts, read into words by the text settings' normaliser."""
    normalizer = normalizer_for(text)
    return fit((normalizer.words(t).words for t in texts), settings, normalizer.params())
