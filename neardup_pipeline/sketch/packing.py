"""Integer arrays in fewer bytes, exactly: fixed-width bit packing and Elias-Fano coding.

Stored signatures are read once a candidate and written once a page, so both ways are numpy
passes over bits, with no Python per value. Elias-Fano (Elias 1974, Fano 1971) stores n sorted
values below 2^u in about 2 + u - log2(n) bits each: a sorted set of random 32-bit word keys
takes a fifth less than the keys themselves.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64Array = npt.NDArray[np.uint64]


def bit_width(largest: int) -> int:
    """Bits that hold every value up to `largest` (at least one)."""
    return max(1, int(largest).bit_length())


try:  # the bit loops in C (setup.py); without a compiler, numpy below
    from neardup_pipeline.sketch import _sketch
except ImportError:  # pragma: no cover - a build without the extension
    _sketch = None  # type: ignore[assignment]


def pack_bits(values: U64Array, width: int) -> bytes:
    """Each value's low `width` bits, most significant first, back to back."""
    if _sketch is not None and values.size and width:
        return _sketch.pack_bits(np.ascontiguousarray(values, dtype=np.uint64), width)
    return numpy_pack_bits(values, width)


def unpack_bits(raw: bytes | memoryview, width: int, count: int) -> U64Array:
    """`count` values of `width` bits, as `pack_bits` wrote them."""
    if _sketch is not None and count and width:
        return _sketch.unpack_bits(np.frombuffer(raw, np.uint8, packed_size(width, count)),
                                   width, count)
    return numpy_unpack_bits(raw, width, count)


def numpy_pack_bits(values: U64Array, width: int) -> bytes:
    """`pack_bits` in numpy: the reference of the compiled loop, and its fallback."""
    if not values.size or not width:
        return b""
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64)
    bits = ((values.astype(np.uint64)[:, None] >> shifts) & np.uint64(1)).astype(np.uint8)
    return np.packbits(bits.ravel()).tobytes()


def numpy_unpack_bits(raw: bytes | memoryview, width: int, count: int) -> U64Array:
    """`unpack_bits` in numpy: the reference of the compiled loop, and its fallback."""
    if not count or not width:
        return np.zeros(count, np.uint64)
    bits = np.unpackbits(np.frombuffer(raw, np.uint8, packed_size(width, count)),
                         count=width * count).reshape(count, width)
    weights = np.uint64(1) << np.arange(width - 1, -1, -1, dtype=np.uint64)
    values: U64Array = (bits.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
    return values


def packed_size(width: int, count: int) -> int:
    """Bytes `pack_bits` writes for `count` values of `width` bits."""
    return (width * count + 7) // 8


def low_bits(count: int, universe_bits: int) -> int:
    """Elias-Fano's split: the low bits kept verbatim, floor(log2(universe / count))."""
    if not count:
        return 0
    return max(0, universe_bits - (count - 1).bit_length()) if count > 1 else universe_bits


def elias_fano(values: U64Array, universe_bits: int) -> bytes:
    """Sorted (non-decreasing) values below 2^universe_bits: their low bits packed, then the
    high parts as a unary bit vector (value i sets bit high_i + i)."""
    count = int(values.size)
    if not count:
        return b""
    low = low_bits(count, universe_bits)
    high = values.astype(np.uint64) >> np.uint64(low)
    upper = np.zeros(upper_size(count, universe_bits) * 8, np.uint8)
    upper[high.astype(np.int64) + np.arange(count)] = 1
    lows = pack_bits(values & np.uint64((1 << low) - 1), low)
    return lows + np.packbits(upper).tobytes()


def elias_fano_size(count: int, universe_bits: int) -> int:
    """Bytes `elias_fano` writes for `count` values."""
    if not count:
        return 0
    return packed_size(low_bits(count, universe_bits), count) + upper_size(count, universe_bits)


def upper_size(count: int, universe_bits: int) -> int:
    high_values = 1 << (universe_bits - low_bits(count, universe_bits))
    return (count + high_values + 7) // 8


def elias_fano_decode(raw: bytes | memoryview, count: int, universe_bits: int) -> U64Array:
    """The `count` values `elias_fano` wrote."""
    if not count:
        return np.zeros(0, np.uint64)
    low = low_bits(count, universe_bits)
    lows_size = packed_size(low, count)
    lows = unpack_bits(raw, low, count)
    upper = np.unpackbits(np.frombuffer(raw, np.uint8, upper_size(count, universe_bits),
                                        lows_size))
    positions = np.flatnonzero(upper)[:count]
    high = (positions - np.arange(count)).astype(np.uint64)
    return (high << np.uint64(low)) | lows
