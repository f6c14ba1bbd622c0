"""PAN's text alignment measures, as the PAN overviews define them (Potthast, Stein,
Barron-Cedeno & Rosso, "An Evaluation Framework for Plagiarism Detection", COLING 2010;
Potthast et al., PAN 2013 overview).

A case s and a detection r are each a pair of character ranges: one in the suspect document,
one in the source document of a (suspect, source) pair. r detects s when they belong to the
same pair and overlap in both documents; s ⊓ r is then the characters they share in both.

- precision = 1/|R| Σ_r |union over s of (s ⊓ r)| / |r|
- recall = 1/|S| Σ_s |union over r of (s ⊓ r)| / |s|
- granularity = 1/|S_R| Σ_{s ∈ S_R} |R_s|, S_R the detected cases, R_s the detections of s
- plagdet = F1 / log2(1 + granularity)

|s| and |r| count the characters of both ranges. With no case and no detection precision and
recall are 1; with one of them empty, 0 (as PAN's evaluation script). Pure: no I/O.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """[start, end) in the suspect and [source_start, source_end) in the source of `pair`."""

    pair: str
    start: int
    end: int
    source_start: int
    source_end: int

    @property
    def chars(self) -> int:
        return self.end - self.start + self.source_end - self.source_start


@dataclass(frozen=True)
class PanScores:
    precision: float
    recall: float
    granularity: float
    cases: int
    detections: int

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0

    @property
    def plagdet(self) -> float:
        return self.f1 / math.log2(1 + self.granularity)


def _detects(case: Span, detection: Span) -> bool:
    return (case.pair == detection.pair
            and min(case.end, detection.end) > max(case.start, detection.start)
            and min(case.source_end, detection.source_end)
            > max(case.source_start, detection.source_start))


def _covered(target: Span, others: list[Span]) -> int:
    """Characters of `target`, in both documents, that some span of `others` holds."""
    return (_union(target.start, target.end, [(o.start, o.end) for o in others])
            + _union(target.source_start, target.source_end,
                     [(o.source_start, o.source_end) for o in others]))


def _union(low: int, high: int, ranges: list[tuple[int, int]]) -> int:
    total, reached = 0, low
    for start, end in sorted(ranges):
        start, end = max(start, reached), min(end, high)
        if end > start:
            total += end - start
            reached = end
    return total


def _by_pair(spans: Iterable[Span]) -> dict[str, list[Span]]:
    grouped: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        grouped[s.pair].append(s)
    return grouped


def _macro(targets: list[Span], others: list[Span]) -> float:
    """Mean over `targets` of the share of each covered by the `others` that overlap it."""
    if not targets and not others:
        return 1.0
    if not targets or not others:
        return 0.0
    near = _by_pair(others)
    total = 0.0
    for t in targets:
        touching = [o for o in near.get(t.pair, []) if _detects(t, o)]
        total += _covered(t, touching) / t.chars if t.chars else 0.0
    return total / len(targets)


def pan_scores(cases: list[Span], detections: list[Span]) -> PanScores:
    """PAN's precision, recall and granularity of `detections` against `cases`."""
    near = _by_pair(detections)
    counts = [sum(_detects(s, r) for r in near.get(s.pair, [])) for s in cases]
    detected = [n for n in counts if n]
    return PanScores(
        precision=_macro(detections, cases),
        recall=_macro(cases, detections),
        granularity=sum(detected) / len(detected) if detected else 1.0,
        cases=len(cases),
        detections=len(detections),
    )
