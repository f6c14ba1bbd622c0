"""Passage alignment: the shingles two texts share, chained into passages.

Every shingle of the suspect is matched against every shingle of one candidate source (a binary
search in the source's sorted hashes), then matches are chained in suspect order: a match joins
the open passage nearest its diagonal when it lies within `max_gap` unmatched words of it in both
texts, so a deleted or inserted clause, a revised word (it breaks only the `shingle` shingles
that hold it) or two clauses swapped within the gap keep one passage. A passage is kept when it
matches at least `min_words` words in each text, and at least `min_density` of the words it
spans in each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neardup_pipeline.reuse.settings import ReuseSettings
from neardup_pipeline.sketch.rabin import U64Array

_MAX_REPEATS = 16  # occurrences of one shingle in a source that are tried (a refrain, a chorus)


@dataclass(frozen=True)
class WordPassage:
    """A passage in word positions: suspect [start, end) copies source [source_start,
    source_end); `matched` of the suspect's words in it are in matching shingles."""

    start: int
    end: int
    source_start: int
    source_end: int
    matched: int


class _Chain:
    __slots__ = ("covered_to", "first", "j_last", "j_max", "j_min", "js", "last", "matched")


    def __init__(self, i: int, j: int, k: int) -> None:
        self.first = self.last = i
        self.j_min = self.j_max = self.j_last = j
        self.covered_to = i + k
        self.matched = k
        self.js = [j]

    def extend(self, i: int, j: int, k: int) -> None:
        self.matched += max(0, i + k - max(self.covered_to, i))
        self.covered_to = max(self.covered_to, i + k)
        self.last, self.j_last = i, j
        self.j_min, self.j_max = min(self.j_min, j), max(self.j_max, j)
        self.js.append(j)

    def absorb(self, other: _Chain) -> None:
        """Take in a chain that follows this one in the suspect (a clause moved, a second
        chain past a larger edit)."""
        self.matched += max(0, other.covered_to - max(self.covered_to, other.first))
        self.covered_to = max(self.covered_to, other.covered_to)
        self.last = max(self.last, other.last)
        self.j_min, self.j_max = min(self.j_min, other.j_min), max(self.j_max, other.j_max)
        self.js.extend(other.js)

    def source_matched(self, k: int) -> int:
        """Source words in the chain's matches (a phrase the suspect repeats counts once)."""
        covered, end = 0, -1
        for j in sorted(self.js):
            covered += j + k - max(end, j)
            end = j + k
        return covered


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


def align(suspect: U64Array, source: U64Array, settings: ReuseSettings) -> list[WordPassage]:
    """The passages of `suspect` (shingle hashes) copied from `source`, in suspect order,
    none overlapping another by more than half of its words."""
    k, reach = settings.shingle, settings.max_gap + settings.shingle
    open_chains: list[_Chain] = []
    done: list[_Chain] = []
    for i, j in zip(*matches(suspect, source), strict=True):
        best, best_cost = None, reach + 1
        still_open = []
        for chain in open_chains:
            if i - chain.last > reach:
                done.append(chain)
                continue
            still_open.append(chain)
            if chain.j_min - reach <= j <= chain.j_max + reach and (i, j) != (chain.last,
                                                                           chain.j_last):
                cost = abs((j - chain.j_last) - (i - chain.last))
                if cost < best_cost:
                    best, best_cost = chain, cost
        open_chains = still_open
        if best is None:
            open_chains.append(_Chain(i, j, k))
        else:
            best.extend(i, j, k)
    done.extend(open_chains)
    passages = []
    for c in _merged(done, k, reach):
        matched = min(c.matched, c.source_matched(k)) if c.matched >= settings.min_words else 0
        if matched >= settings.min_words and matched >= settings.min_density * max(
                c.last + k - c.first, c.j_max + k - c.j_min):
            passages.append(WordPassage(c.first, c.last + k, c.j_min, c.j_max + k, matched))
    return _disjoint(passages)


def _merged(chains: list[_Chain], k: int, reach: int) -> list[_Chain]:
    """Chains that follow each other within `reach` words in the suspect, and whose source
    ranges lie within `reach` words of each other in either order, as one: clauses swapped,
    or two runs on either side of an edit larger than the gap."""
    groups: list[_Chain] = []
    for c in sorted(chains, key=lambda c: (c.first, c.j_min)):
        for g in reversed(groups[-4:]):
            apart = max(c.j_min - (g.j_max + k), g.j_min - (c.j_max + k))
            if c.first - g.covered_to <= reach - k and apart <= reach - k:
                g.absorb(c)
                break
        else:
            groups.append(c)
    return groups


def _disjoint(passages: list[WordPassage]) -> list[WordPassage]:
    """The best-matched passages first; one that overlaps a kept one by more than half its
    words is the same suspect text aligned to a second place of the source, and is dropped."""
    kept: list[WordPassage] = []
    for p in sorted(passages, key=lambda p: (-p.matched, p.start, p.source_start)):
        overlap = sum(max(0, min(p.end, q.end) - max(p.start, q.start)) for q in kept)
        if 2 * overlap <= p.end - p.start:
            kept.append(p)
    return sorted(kept, key=lambda p: (p.start, p.source_start))
