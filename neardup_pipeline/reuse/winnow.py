"""Winnowing (Schleimer, Wilkerson & Aiken, SIGMOD 2003): in every window of `window`
consecutive shingle hashes keep the smallest (the rightmost on a tie), with its position.

Guarantee: two texts sharing a run of at least window + shingle - 1 words share a kept
fingerprint, while only about 2 / (window + 1) of the shingles are kept.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from neardup_pipeline.reuse.tokens import I64Array
from neardup_pipeline.sketch.rabin import U64Array


def winnow(shingles: U64Array, window: int) -> I64Array:
    """Positions (ascending, distinct) of the fingerprints winnowing keeps."""
    if len(shingles) == 0:
        return np.empty(0, dtype=np.int64)
    if len(shingles) <= window:
        return np.array([len(shingles) - 1 - int(np.argmin(shingles[::-1]))], dtype=np.int64)
    windows = sliding_window_view(shingles, window)
    rightmost = window - 1 - windows[:, ::-1].argmin(axis=1)
    return np.unique(rightmost + np.arange(len(windows)))
