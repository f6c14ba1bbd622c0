"""Passage alignment: seeds the two texts share, extended word by word, clustered into passages.

Seeds are the `shingle`-word runs a suspect shares with one candidate source (every suspect
shingle against every shingle of the source, a binary search in its sorted hashes). Each seed is
extended along its diagonal in both directions as BLAST extends a word hit (Altschul et al., J.
Mol. Biol. 1990): a word that matches scores +1, one that differs -1, and the extension stops once
the score falls more than `_X_DROP` below its best, ending at its last match at the best. A word
replaced by a synonym breaks the `shingle` shingles that hold it, but costs the extension one
word: the words on either side of it still count.

Segments are then clustered as the best PAN 2013/2014 text alignment systems cluster seeds
(Sanchez-Perez, Sidorov & Gelbukh, PAN 2014): split wherever more than `max_gap` words of the
suspect lie between them, then wherever more than `max_source_gap` of the source do, until no
cluster splits; order inside a cluster is free (clauses swapped, words shuffled, the sentences a
summary kept). A cluster is a passage when enough of its words match in order, most of its
suspect words occur in its source side, and the two sides are alike as bags of words; one that
fails is split at half the gaps and tried again, not dropped. Every passage needs `min_words`
words matched in order, so a shared name or phrase is never one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from neardup_pipeline.reuse.settings import ReuseSettings
from neardup_pipeline.reuse.tokens import Tokens
from neardup_pipeline.sketch.rabin import U64Array

_MAX_REPEATS = 16  # occurrences of one shingle in a source that are tried (a refrain, a chorus)
# Mismatched words an extension may cross before stopping: two revised words side by side. On
# unrelated text the extension gains a chance match one word in hundreds, and stops.
_X_DROP = 2
# Source words beyond a passage's source side whose words may widen its suspect ends: a
# reworded passage's first and last source words rarely seed.
_WIDEN_MARGIN = 6


@dataclass(frozen=True)
class WordPassage:
    """A passage in word positions: suspect [start, end) copies source [source_start,
    source_end); `matched` words of it are equal in both (each text's words counted once)."""

    start: int
    end: int
    source_start: int
    source_end: int
    matched: int

    @property
    def shift(self) -> int:
        return self.source_start - self.start


class _Segment(NamedTuple):
    """An extended seed: suspect words [start, end) face source words [start + shift, end +
    shift); `pairs` are the (suspect, source) positions of the words that match."""

    start: int
    end: int
    shift: int
    pairs: list[tuple[int, int]]


def matches(suspect: U64Array, source: U64Array) -> tuple[list[int], list[int]]:
    """(i, j) of every shingle the two share (suspect position i, source position j), in
    suspect order; at most _MAX_REPEATS source positions per suspect shingle."""
    order = np.argsort(source, kind="stable")
    ordered = source[order]
    left = np.searchsorted(ordered, suspect, side="left")
    counts = np.minimum(np.searchsorted(ordered, suspect, side="right") - left, _MAX_REPEATS)
    i = np.repeat(np.arange(len(suspect)), counts)
    run_start = np.repeat(left - np.cumsum(counts) + counts, counts)
    j = order[run_start + np.arange(len(i))]
    return i.tolist(), j.tolist()


def _reach(a: list[int], b: list[int], i: int, j: int, step: int) -> int:
    """Words the extension from (i, j) on, by `step` (1 or -1), keeps: up to its last match
    at its best score."""
    steps = min(len(a) - i, len(b) - j) if step > 0 else min(i, j) + 1
    return _extend((a[i + n * step] == b[j + n * step] for n in range(max(0, steps))), 1)[0]


def _extend(hits: Iterable[bool], miss: int) -> tuple[int, int]:
    """(words kept, best score) of an extension over `hits` scoring +1 for a hit and -`miss`
    for another word, stopped once the score falls more than _X_DROP below its best: up to
    its last hit at the best score."""
    score = best = reach = 0
    for steps, hit in enumerate(hits, start=1):
        if hit:
            score += 1
            if score >= best:
                best, reach = score, steps
        else:
            score -= miss
            if best - score > _X_DROP:
                break
    return reach, best


def segments(suspect: Tokens, source: Tokens, k: int) -> list[_Segment]:
    """Every seed extended, in suspect order. A seed is `k` words the two texts share in any
    order (words swapped inside a phrase, as a revision or a translation moves them, still
    seed it); its extension follows its diagonal."""
    a, b = suspect.hashes.tolist(), source.hashes.tolist()
    # A seed inside a segment already extended on its diagonal, or whose two words face each
    # other in the last segment over the suspect word (a phrase the segment repeats, a
    # refrain), is not extended again: repetitive texts stay linear.
    facing: list[tuple[int, int]] = [(0, 0)] * len(a)
    reached: dict[int, int] = {}  # diagonal -> end of the last segment on it
    found = []
    seeds = matches(_any_order(suspect.hashes, k), _any_order(source.hashes, k))
    for i, j in zip(*seeds, strict=True):
        shift = j - i
        if facing[i][0] <= j < facing[i][1] or i < reached.get(shift, -1):
            continue
        start = i - _reach(a, b, i - 1, j - 1, -1)
        end = i + k + _reach(a, b, i + k, j + k, 1)
        pairs = {(n, n + shift) for n in range(start, end) if a[n] == b[n + shift]}
        pairs.update(_facing_words(a[i : i + k], b[j : j + k], i, j))
        # A run in another order is a seed when its diagonal holds another match: on one
        # topic, three words shared in any order are common, and rarely extend.
        if len(pairs) > k or a[i : i + k] == b[j : j + k]:
            reached[shift] = end
            facing[start:end] = [(start + shift, end + shift)] * (end - start)
            found.append(_Segment(start, end, shift, sorted(pairs)))
    return found


def _any_order(hashes: U64Array, k: int) -> U64Array:
    """A hash of each run of `k` words that does not depend on their order: the sum (modulo
    2**64) of their hashes, each mixed first by splitmix64's finaliser (a short word's
    Rabin fingerprint is its bytes, and sums of such small numbers collide)."""
    if len(hashes) < k:
        return np.empty(0, dtype=np.uint64)
    x: U64Array = hashes ^ (hashes >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    summed: U64Array = sliding_window_view(x, k).sum(axis=1, dtype=np.uint64)
    return summed


def _facing_words(here: list[int], there: list[int], i: int, j: int) -> list[tuple[int, int]]:
    """(suspect, source) positions of the words a seed's two runs share, each used once."""
    free = list(range(len(there)))
    pairs = []
    for x, word in enumerate(here):
        for y in free:
            if there[y] == word:
                pairs.append((i + x, j + y))
                free.remove(y)
                break
    return pairs


def align(suspect: Tokens, source: Tokens, settings: ReuseSettings) -> list[WordPassage]:
    """The passages of `suspect` copied from `source`, in suspect order, none overlapping
    another by more than half of its words."""
    found: list[WordPassage] = []
    placed = _mostly_new(segments(suspect, source, settings.shingle), lambda s: -len(s.pairs))
    pending = [(group, settings.max_gap, settings.max_source_gap)
               for group in _split(placed, settings.max_gap, settings.max_source_gap)]
    while pending:
        group, gap, source_gap = pending.pop()
        passage = _passage(group, suspect.hashes, source.hashes)
        if passage.matched < settings.min_words:
            continue  # no part of it is long enough
        if _dense(group, passage, settings):
            found.append(_widen(passage, suspect.hashes, source.hashes, _WIDEN_MARGIN))
        elif len(group) > 1 and gap > 1:
            # a joined passage that fails the test is split at smaller gaps, not dropped
            pending.extend((part, gap // 2, source_gap // 2)
                           for part in _split(group, gap // 2, source_gap // 2))
    kept = sorted(_mostly_new(found, lambda p: -p.matched), key=lambda p: (p.start, p.shift))
    return _join_neighbours(kept, suspect.hashes, source.hashes, settings)


def _join_neighbours(passages: list[WordPassage], a: U64Array, b: U64Array,
                     settings: ReuseSettings) -> list[WordPassage]:
    """Passages next to each other in both texts, apart in each by at most a quarter of their
    joint length there, joined when the whole still passes the bag tests: a long reworded
    passage has stretches without a seed longer than `max_gap`, a long summary leaves more than
    `max_source_gap` out, and their pieces are one reuse."""
    joined: list[WordPassage] = []
    for p in passages:
        last = joined[-1] if joined else None
        if last is not None:
            reach = (last.end - last.start + p.end - p.start) // 4
            source_reach = (last.source_end - last.source_start
                            + p.source_end - p.source_start) // 4
            apart = max(p.source_start - last.source_end, last.source_start - p.source_end)
            if p.start - last.end <= reach and apart <= source_reach:
                start, end = last.start, max(last.end, p.end)
                source_start = min(last.source_start, p.source_start)
                source_end = max(last.source_end, p.source_end)
                whole = WordPassage(start, end, source_start, source_end,
                                    _shared(a[start:end], b[source_start:source_end]))
                if _alike(whole, settings):
                    joined[-1] = whole
                    continue
        joined.append(p)
    return joined


class _Span(Protocol):
    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def shift(self) -> int: ...


_S = TypeVar("_S", bound=_Span)


def _mostly_new(spans: list[_S], rank: Callable[[_S], int]) -> list[_S]:
    """The best-ranked first; one whose suspect words are more than half in kept ones is the
    same suspect text faced with a second place of the source (a term or a sentence the source
    repeats), and goes: it would stretch a passage's source side to that place."""
    kept: list[_S] = []
    covered = np.zeros(max((s.end for s in spans), default=0), dtype=bool)
    for s in sorted(spans, key=lambda s: (rank(s), s.start, s.shift)):
        if 2 * int(covered[s.start : s.end].sum()) <= s.end - s.start:
            kept.append(s)
            covered[s.start : s.end] = True
    return kept


def _split(group: list[_Segment], gap: int, source_gap: int) -> list[list[_Segment]]:
    """Segments clustered as Sanchez-Perez, Sidorov & Gelbukh (PAN 2014) cluster seeds: split
    where the suspect leaves more than `gap` words between them, then each part where the
    source leaves more than `source_gap`, and again until no part splits. Order inside a part
    is free (clauses swapped, words shuffled, the sentences a summary kept)."""
    parts = [group]
    while True:
        split = [q for p in parts for r in _gaps(p, gap, lambda s: s.start, lambda s: s.end)
                 for q in _gaps(r, source_gap, lambda s: s.start + s.shift,
                                lambda s: s.end + s.shift)]
        if len(split) == len(parts):
            return split
        parts = split


def _gaps(group: list[_Segment], gap: int, low: Callable[[_Segment], int],
          high: Callable[[_Segment], int]) -> list[list[_Segment]]:
    """`group` cut wherever more than `gap` words lie between a segment and all before it."""
    parts: list[list[_Segment]] = []
    reached = -gap - 1
    for segment in sorted(group, key=lambda s: (low(s), high(s), s.shift)):
        if low(segment) - reached > gap:
            parts.append([])
        parts[-1].append(segment)
        reached = max(reached, high(segment))
    return parts


def _passage(group: list[_Segment], a: U64Array, b: U64Array) -> WordPassage:
    """The extent of `group`'s matched words in both texts, and how many words the two sides
    share as bags of words (in any order: a shuffled or reworded passage keeps its words, not
    their places)."""
    i = [n for s in group for n, _ in s.pairs]
    j = [m for s in group for _, m in s.pairs]
    start, end, source_start, source_end = min(i), max(i) + 1, min(j), max(j) + 1
    return WordPassage(start, end, source_start, source_end,
                       _shared(a[start:end], b[source_start:source_end]))


def _widen(p: WordPassage, a: U64Array, b: U64Array, margin: int) -> WordPassage:
    """The passage's suspect ends moved out over words the source holds near it, as a seed is
    extended but on a bag of words: a reworded or shuffled passage's first and last words
    rarely start a seed. (Not the source's: the text around a source passage is on its topic
    and shares its words.)"""
    near = set(b[max(0, p.source_start - margin) : p.source_end + margin].tolist())
    start = p.start - _bag_reach(a, p.start - 1, -1, near)
    end = p.end + _bag_reach(a, p.end, 1, near)
    return WordPassage(start, end, p.source_start, p.source_end,
                       _shared(a[start:end], b[p.source_start : p.source_end]))


def _bag_reach(words: U64Array, at: int, step: int, bag: set[int]) -> int:
    """Words from `at` on, by `step`, that an extension over words of `bag` keeps; a word
    outside it costs two (it takes two words of the bag to cross one that is not), and less
    than two words gained keeps none (a word of the topic next to a passage is no part of it)."""
    positions = range(at, len(words)) if step > 0 else range(at, -1, -1)
    reach, best = _extend((int(words[n]) in bag for n in positions), 2)
    return reach if best >= _X_DROP else 0


def _shared(here: U64Array, there: U64Array) -> int:
    """Words the two share, each as often as the one holding it fewer times has it."""
    words, counts = np.unique(here, return_counts=True)
    other, other_counts = np.unique(there, return_counts=True)
    _, mine, theirs = np.intersect1d(words, other, assume_unique=True, return_indices=True)
    return int(np.minimum(counts[mine], other_counts[theirs]).sum())


def _dense(group: list[_Segment], p: WordPassage, settings: ReuseSettings) -> bool:
    """The passage rests on enough words matched in order (seeds and their extensions), most
    of its suspect words are the source passage's, and the two sides are alike as bags of
    words (a cosine of 0/1 word vectors: a summary is short against its source, yet close)."""
    in_order = len({n for s in group for n, _ in s.pairs})
    return (in_order >= max(settings.min_words, settings.min_in_order * (p.end - p.start))
            and _alike(p, settings))


def _alike(p: WordPassage, settings: ReuseSettings) -> bool:
    """Most of the passage's suspect words are in its source side, and the words the two sides
    share are a good part of the geometric mean of their lengths."""
    here, there = p.end - p.start, p.source_end - p.source_start
    return (p.matched >= settings.min_density * here
            and p.matched >= settings.min_similarity * (here * there) ** 0.5)
