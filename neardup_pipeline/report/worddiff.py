"""Word-level difference of two texts, for showing a near-duplicate pair side by side. Pure."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["same", "changed"]
_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class Segment:
    """A run of consecutive words of one side: shared with the other side, or not."""

    kind: Kind
    text: str


@dataclass(frozen=True)
class WordDiff:
    """Both sides as segments, and how much of them is shared."""

    left: list[Segment]
    right: list[Segment]
    ratio: float  # difflib's similarity of the two word sequences (0-1)
    truncated: bool  # a side was longer than max_words and was cut


def word_diff(a: str, b: str, max_words: int = 5000) -> WordDiff:
    """Differing words of `a` and `b` (whitespace-separated, compared as written).

    Words are compared exactly (case and punctuation included): the view shows what a reader
    sees differ, not what the fingerprint normalised away. `max_words` bounds difflib's cost,
    which is quadratic in the worst case.
    """
    wa, wb = _TOKEN.findall(a), _TOKEN.findall(b)
    truncated = len(wa) > max_words or len(wb) > max_words
    wa, wb = wa[:max_words], wb[:max_words]
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        kind: Kind = "same" if tag == "equal" else "changed"
        if i2 > i1:
            _append(left, kind, wa[i1:i2])
        if j2 > j1:
            _append(right, kind, wb[j1:j2])
    return WordDiff(left, right, round(matcher.ratio(), 6), truncated)


def _append(side: list[Segment], kind: Kind, words: list[str]) -> None:
    text = " ".join(words)
    if side and side[-1].kind == kind:
        side[-1] = Segment(kind, f"{side[-1].text} {text}")
    else:
        side.append(Segment(kind, text))
