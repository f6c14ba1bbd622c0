"""64-bit Rabin fingerprints: a byte string read as a polynomial over GF(2), reduced modulo an
irreducible polynomial of degree 64 (Rabin 1981; Broder 1993).

The default polynomial was drawn at random (seed 20070508) and passes Rabin's irreducibility test
(tests/test_rabin.py checks it): x^(2^64) = x mod P and gcd(x^(2^32) - x, P) = 1.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

# x^64 + the 64 low bits below (the x^64 term is implicit).
DEFAULT_POLYNOMIAL = 0xE110715B33BFA08F
_MASK = (1 << 64) - 1

U64Array = npt.NDArray[np.uint64]

try:  # the word loop in C (setup.py); without a compiler, the byte loop below
    from neardup_pipeline.sketch import _sketch
except ImportError:  # pragma: no cover - a build without the extension
    _sketch = None  # type: ignore[assignment]


def _byte_shift_table(poly_low: int) -> list[int]:
    """T[b] = (b(x) * x^64) mod P: what the byte leaving the top of the register contributes."""
    table = []
    for byte in range(256):
        value = byte << 64
        for bit in range(71, 63, -1):
            if value >> bit & 1:
                value ^= ((1 << 64) | poly_low) << (bit - 64)
        table.append(value & _MASK)
    return table


class RabinHasher:
    """Rabin fingerprints of byte strings and of sequences of earlier fingerprints."""

    def __init__(self, polynomial: int = DEFAULT_POLYNOMIAL) -> None:
        self.polynomial = polynomial & _MASK
        self._table = _byte_shift_table(self.polynomial)
        self.byte_table: U64Array = np.array(self._table, dtype=np.uint64)
        self.word_shift_table = self._word_shift_table()
        self.word_slice_table = self._word_slice_table()

    def _word_shift_table(self) -> U64Array:
        """T16[t] = (t(x) * x^64) mod P for every 16-bit t: two bytes leave the register per step,
        so extending by 64 bits takes 4 numpy rounds instead of 8 (512 KB, built in numpy)."""
        h = np.arange(1 << 16, dtype=np.uint64) << np.uint64(48)  # t(x) * x^48
        for _ in range(2):  # * x^16, one byte at a time with the byte table
            h = (h << np.uint64(8)) ^ self.byte_table[h >> np.uint64(56)]
        return h

    def _word_slice_table(self) -> U64Array:
        """S[j, b] = (b(x) * x^(8j) * x^64) mod P: multiplying by x^64 mod P is linear over GF(2),
        so h * x^64 mod P is the XOR of S[j, byte j of h] over the 8 bytes of h. Eight loads that
        do not wait on each other, from 16 KB that stay in the L1 cache (the compiled shingle
        loop; T16's four steps each wait on the last, in 512 KB)."""
        shifts = np.arange(8, dtype=np.uint64)[:, None] * np.uint64(8)
        values = np.arange(256, dtype=np.uint64)[None, :] << shifts
        return self.extend64(values, np.zeros_like(values))

    def fingerprint(self, data: bytes) -> int:
        """f(M) = M(x) mod P, bytes read most significant bit first (the reference of
        `word_fingerprints`' compiled loop)."""
        h = 0
        table = self._table
        for byte in data:
            h = ((h << 8) & _MASK) ^ byte ^ table[h >> 56]
        return h

    def word_fingerprints(self, words: list[str]) -> list[int]:
        """The fingerprint of each word's UTF-8 bytes: one C loop for them all where built (a
        crawl meets new words on every page; in Python, 1-3 us a word)."""
        if _sketch is not None:
            return _sketch.rabin_words(words, self.byte_table).tolist()  # type: ignore[no-any-return]
        return [self.fingerprint(word.encode("utf-8")) for word in words]

    def extend64(self, h: U64Array, values: U64Array) -> U64Array:
        """Fingerprints of each message in `h` extended by the 8 big-endian bytes of `values`.

        f(M || v) = (f(M) * x^64 + v) mod P, computed for a whole array at once.
        """
        table = self.word_shift_table
        sixteen, forty_eight = np.uint64(16), np.uint64(48)
        for _ in range(4):
            h = (h << sixteen) ^ table[h >> forty_eight]
        return h ^ values
