"""Passage alignment: seeds the two texts share, extended word by word, chained into passages.

Seeds are the `shingle`-word runs a suspect shares with one candidate source (every suspect
shingle against every shingle of the source, a binary search in its sorted hashes). Each seed is
extended along its diagonal in both directions as BLAST extends a word hit (Altschul et al., J.
Mol. Biol. 1990): a word that matches scores +1, one that differs -1, and the extension stops once
the score falls more than `_X_DROP` below its best, ending at its last match at the best. A word
replaced by a synonym breaks the `shingle` shingles that hold it, but costs the extension one
word: the words on either side of it still count.

Segments are then chained in suspect order: one joins a passage when it starts within `max_gap`
words of the passage's end in the suspect, and its source words lie within `max_gap` words of
the passage's in either order, so a cut clause, an inserted phrase, a word count changed by a
revision (a new diagonal) or two clauses swapped keep one passage; a segment over words the
passage holds already (the same words faced with a second place of the source) starts its own.
A passage is kept when it matches at least `min_words` words in each text, and at least
`min_density` of the words it spans in each; once a source has such a passage, its other
passages need only half as many words (the source is known to be reused).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from neardup_pipeline.reuse.settings import ReuseSettings
from neardup_pipeline.reuse.tokens import Tokens
from neardup_pipeline.sketch.rabin import U64Array

_MAX_REPEATS = 16  # occurrences of one shingle in a source that are tried (a refrain, a chorus)
# Mismatched words an extension may cross before stopping: two revised words side by side. On
# unrelated text the extension gains a chance match one word in hundreds, and stops.
_X_DROP = 2


@dataclass(frozen=True)
class WordPassage:
    """A passage in word positions: suspect [start, end) copies source [source_start,
    source_end); `matched` words of it are equal in both (each text's words counted once)."""

    start: int
    end: int
    source_start: int
    source_end: int
    matched: int


class _Segment(NamedTuple):
    """An extended seed: suspect words [start, end) face source words [start + shift, end +
    shift); `pairs` are the (suspect, source) positions of the words that match."""

    start: int
    end: int
    shift: int
    pairs: list[tuple[int, int]]


@dataclass
class _Group:
    """Segments chained into one passage: its extent in both texts, its matched words."""

    start: int
    end: int
    source_start: int
    source_end: int
    suspect_words: set[int] = field(default_factory=set)
    source_words: set[int] = field(default_factory=set)

    def add(self, pairs: list[tuple[int, int]]) -> None:
        for i, j in pairs:
            self.start, self.end = min(self.start, i), max(self.end, i + 1)
            self.source_start, self.source_end = min(self.source_start, j), max(
                self.source_end, j + 1)
            self.suspect_words.add(i)
            self.source_words.add(j)


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
    score = best = reach = steps = 0
    while 0 <= i < len(a) and 0 <= j < len(b):
        steps += 1
        if a[i] == b[j]:
            score += 1
            if score >= best:
                best, reach = score, steps
        else:
            score -= 1
            if best - score > _X_DROP:
                break
        i, j = i + step, j + step
    return reach


def segments(suspect: Tokens, source: Tokens, k: int) -> list[_Segment]:
    """Every seed extended, in suspect order."""
    a, b = suspect.hashes.tolist(), source.hashes.tolist()
    # A seed inside a segment already extended on its diagonal, or whose two words face each
    # other in the last segment over the suspect word (a phrase the segment repeats, a
    # refrain), is not extended again: repetitive texts stay linear.
    facing: list[tuple[int, int]] = [(0, 0)] * len(a)
    reached: dict[int, int] = {}  # diagonal -> end of the last segment on it
    found = []
    for i, j in zip(*matches(suspect.shingles, source.shingles), strict=True):
        shift = j - i
        if facing[i][0] <= j < facing[i][1] or i < reached.get(shift, -1):
            continue
        start = i - _reach(a, b, i - 1, j - 1, -1)
        end = i + k + _reach(a, b, i + k, j + k, 1)
        reached[shift] = end
        facing[start:end] = [(start + shift, end + shift)] * (end - start)
        found.append(_Segment(start, end, shift, [(n, n + shift) for n in range(start, end)
                                                  if a[n] == b[n + shift]]))
    return found


def align(suspect: Tokens, source: Tokens, settings: ReuseSettings) -> list[WordPassage]:
    """The passages of `suspect` copied from `source`, in suspect order, none overlapping
    another by more than half of its words."""
    gap = settings.max_gap
    open_groups: list[_Group] = []
    done: list[_Group] = []
    for segment in sorted(segments(suspect, source, settings.shingle),
                          key=lambda s: (s.start, s.shift)):
        low, high = segment.start + segment.shift, segment.end + segment.shift
        best, best_apart = None, gap + 1
        still_open = []
        for g in open_groups:
            if segment.start - g.end > gap:
                done.append(g)
                continue
            still_open.append(g)
            if segment.end <= g.end:
                continue  # words the passage holds already, faced with other source words
            apart = max(low - g.source_end, g.source_start - high)
            if apart < best_apart:
                best, best_apart = g, apart
        open_groups = still_open
        if best is None:
            best = _Group(segment.start, segment.end, low, high)
            open_groups.append(best)
        best.add(segment.pairs)
    done.extend(open_groups)
    found = []
    for g in done:
        matched = min(len(g.suspect_words), len(g.source_words))
        if matched >= settings.min_density * max(g.end - g.start, g.source_end - g.source_start):
            found.append(WordPassage(g.start, g.end, g.source_start, g.source_end, matched))
    if not any(p.matched >= settings.min_words for p in found):
        return []
    floor = (settings.min_words + 1) // 2
    return _disjoint([p for p in found if p.matched >= floor])


def _disjoint(passages: list[WordPassage]) -> list[WordPassage]:
    """The best-matched passages first; one whose words are more than half in kept ones is the
    same suspect text aligned to a second place of the source, and is dropped."""
    kept: list[WordPassage] = []
    covered = np.zeros(max((p.end for p in passages), default=0), dtype=bool)
    for p in sorted(passages, key=lambda p: (-p.matched, p.start, p.source_start)):
        if 2 * int(covered[p.start : p.end].sum()) <= p.end - p.start:
            kept.append(p)
            covered[p.start : p.end] = True
    return sorted(kept, key=lambda p: (p.start, p.source_start))
