"""Signature arrays as stored text: their big-endian bytes in base64, which every backend keeps
(JSON for Elasticsearch and SQLite, the same strings in memory).

Through pybase64's SIMD codec: the standard library's costs about ten instructions a byte, and a
page's stored signatures are some 9 KB of base64, encoded once a page and decoded once a
candidate (a fifth of a memory-index check's instructions went to it)."""

from __future__ import annotations

import binascii
from typing import Any

import numpy as np
import numpy.typing as npt
import pybase64


def array_text(values: npt.NDArray[np.generic]) -> str:
    """`values`' bytes as base64 text (give them their stored byte order first)."""
    return pybase64.b64encode_as_string(values.tobytes())


def text_array(
    text: str, stored: str, dtype: type[np.generic],
) -> npt.NDArray[Any]:
    """The array stored as `text` (`array_text` of `stored`-typed values, e.g. ">u8"), as
    `dtype`. Read as the standard decoder reads: characters outside the alphabet are skipped."""
    try:
        raw = pybase64.b64decode(text, validate=True)  # the fast path: text we wrote
    except binascii.Error:
        raw = pybase64.b64decode(text)
    return np.frombuffer(raw, stored).astype(dtype)
