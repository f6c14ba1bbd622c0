"""A page's subject, as its title names it; and whether two pages are template twins. Pure.

Two distinct pages of one site cut from one template ("dblink_build_sql_insert" and
"dblink_build_sql_update", "Installing Debian for arm64" and "... for amd64") share nearly all of
their words: what tells them apart is the subject each names in its title and then keeps naming
in its text. A copy does not do that: two copies of one article carry the same headline, and where
their titles differ (a site's name added to each), the text of one does not lean on its own
title's words more than the other's text does.

A title's section number ("4.3.", "F.12.") names its place in a book, which another rendering
of the book may change, and a release number ("PostgreSQL 15.18 Documentation" / "15.20") differs
between copies of one page: neither names a subject. Other numbers do ("32-bit PC" / "64-bit PC").
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

F64Array = npt.NDArray[np.float64]

# A leading section number: "4.3. ", "F.12. ", "A.1. ", "IV. " (each part ends with a dot).
_SECTION_NUMBER = re.compile(r"^\s*(?:(?:[0-9]+|[A-Z]|[IVXLCDM]+)\.)+\s+")
# A release or a decimal: "15.18", "2.4.71", "3,5".
_DOTTED_NUMBER = re.compile(r"\d+(?:[.,]\d+)+")


def subject_words(title: str, canonical_words: Callable[[str], list[str]]) -> list[str]:
    """The canonical words of a title that can name a subject (its section number and release
    numbers left out), each word once, in title order."""
    words = canonical_words(_DOTTED_NUMBER.sub(" ", _SECTION_NUMBER.sub("", title)))
    return list(dict.fromkeys(words))


def leans_on_own_subject(own_counts: F64Array, other_counts: F64Array, margin: float) -> bool:
    """Whether a page names a subject word of its own title (one the other title lacks) at least
    `margin` times more often than the other page does. Counts: per such word, in this page's
    text and in the other's; NaN where a count is unknown (a truncated bag's sample)."""
    return bool(np.any(own_counts - other_counts >= margin))  # NaN compares False
