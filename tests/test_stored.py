"""Signature arrays as stored text: the same text the standard library writes and reads, so an
index filled before pybase64 reads back unchanged."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from neardup_pipeline.sketch.stored import array_text, text_array


@pytest.mark.parametrize(("stored", "dtype"), [(">u8", np.uint64), (">u2", np.uint16),
                                               (">f2", np.float32)])
def test_arrays_round_trip_as_the_standard_library_writes_them(stored: str, dtype: type) -> None:
    rng = np.random.default_rng(7)
    for size in (0, 1, 2, 3, 84, 4096):
        values = rng.integers(0, 2048, size).astype(dtype)  # exact in every stored type
        text = array_text(values.astype(stored))
        assert text == base64.b64encode(values.astype(stored).tobytes()).decode("ascii")
        back = text_array(text, stored, dtype)
        assert back.dtype == dtype
        assert np.array_equal(back, values)


def test_text_outside_the_alphabet_is_read_as_the_standard_decoder_reads_it() -> None:
    """A stored value that went through a line-wrapping tool: characters outside the base64
    alphabet are skipped, not an error (base64.b64decode's own rule)."""
    values = np.arange(40, dtype=np.uint64)
    text = array_text(values.astype(">u8"))
    wrapped = "\n".join(text[i:i + 76] for i in range(0, len(text), 76))
    assert np.array_equal(text_array(wrapped, ">u8", np.uint64), values)
    with pytest.raises(ValueError):  # binascii.Error: what base64.b64decode raises too
        text_array(text[:-1], ">u8", np.uint64)
