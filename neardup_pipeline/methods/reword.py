"""Reworded copy or another page of one template: how two word sequences differ, read from their
alignment. Pure.

A copy reworded here and there (a few percent of its words replaced, dropped or added) differs from
its original in scattered single words, each change independent of the others. Two distinct pages
cut from one template ("DROP VIEW" / "DROP MATERIALIZED VIEW") differ otherwise: one term swapped
for the same other term wherever it occurs, and passages of their own. Both share most of their
words and lose most of their 3-word shingles alike (each changed word breaks three of them); the
word-level alignment (Levenshtein, so that a replaced word pairs with its replacement) tells them
apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import Levenshtein

Codes = npt.NDArray[np.uint16]


@dataclass(frozen=True)
class EditPattern:
    """The differences between two word sequences, as a reviewer would count them."""

    changed: float  # share of the longer sequence's words that sit in differing runs
    mean_run: float  # mean length of a differing run, in words (0 when nothing differs)
    repeated_swap: int  # most times one word was replaced by one same other word

    def as_dict(self) -> dict[str, float | int]:
        return {"changed": round(self.changed, 4), "mean_run": round(self.mean_run, 4),
                "repeated_swap": self.repeated_swap}


@dataclass(frozen=True)
class RewordRule:
    """What scattered rewording may look like; anything else is another page."""

    max_changed: float = 0.3  # of the canonical words (stop words out): about 15% as written
    max_run: float = 2.0  # mostly single words: adjacent edits merge into runs of 2 now and then
    max_repeats: int = 1  # random edits do not replace the same word by the same word twice

    def params(self) -> dict[str, object]:
        return asdict(self)

    def allows(self, pattern: EditPattern) -> bool:
        return (pattern.changed <= self.max_changed and pattern.mean_run <= self.max_run
                and pattern.repeated_swap <= self.max_repeats)

    def reworded(self, a: Codes, b: Codes) -> bool:
        """Whether `b` is `a` reworded: the edit distance alone (bit-parallel, stopped at the
        limit) turns most other pages away before the alignment is built."""
        left, right = a.tolist(), b.tolist()
        limit = int(self.max_changed * max(len(left), len(right)))
        if Levenshtein.distance(left, right, score_cutoff=limit) > limit:
            return False
        return self.allows(_pattern(left, right))


def word_codes(word_hashes: npt.NDArray[np.uint64], limit: int) -> Codes:
    """The first `limit` words as 16-bit codes (the top bits of well-mixed word hashes), a
    quarter of the hashes' size. Two words share a code 1 time in 65,536: now and then a replaced
    word looks kept, which moves the share changed by a word, and a swap would need both of its
    words to collide with another swap's to count as repeated."""
    return (word_hashes[:limit] >> np.uint64(48)).astype(np.uint16)


def edit_pattern(a: Codes, b: Codes) -> EditPattern:
    """Align `a` with `b` word by word (fewest replacements, insertions and deletions) and describe
    the runs that differ."""
    return _pattern(a.tolist(), b.tolist())


def _pattern(left: list[int], right: list[int]) -> EditPattern:
    runs = changed = 0
    swaps: Counter[tuple[int, int]] = Counter()
    in_run = False
    for op in Levenshtein.opcodes(left, right):
        if op.tag == "equal":
            in_run = False
            continue
        runs += not in_run  # a replacement next to an insertion is one run
        in_run = True
        changed += max(op.src_end - op.src_start, op.dest_end - op.dest_start)
        if op.tag == "replace":
            old, new = left[op.src_start:op.src_end], right[op.dest_start:op.dest_end]
            swaps.update(zip(old, new, strict=True))
    longer = max(len(left), len(right), 1)
    return EditPattern(
        changed / longer,
        changed / runs if runs else 0.0,
        max(swaps.values(), default=0),
    )
