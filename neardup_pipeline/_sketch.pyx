# cython: language_level=3, boundscheck=False, wraparound=False
"""The two numeric loops of fingerprinting, in C: Rabin fingerprints of word shingles, and the
per-permutation minimums of MinHash.

numpy computed both over whole arrays, but each step wrote a temporary as large as its input
(MinHash: 84 x shingles products, 1.3 MB for a 2,000-word page, past the L2 cache) and read it
back. Here every value is computed in registers and only the results are written. The results
are bit for bit those of the numpy code, which stays as the fallback (shingles.py, minhash.py).
"""

import numpy as np

from libc.stdint cimport uint64_t


cdef inline uint64_t _fmix64(uint64_t x) noexcept nogil:
    x ^= x >> 33
    x *= 0xFF51AFD7ED558CCDULL
    x ^= x >> 33
    x *= 0xC4CEB9FE1A85EC53ULL
    return x ^ (x >> 33)


def rabin_shingles(const uint64_t[::1] words not None, int width,
                   const uint64_t[::1] table16 not None):
    """Rabin fingerprint of each run of `width` consecutive word fingerprints (f(A || v) =
    f(A) x^64 + v mod P, two bytes a step through `table16`; RabinHasher.extend64)."""
    cdef Py_ssize_t count = words.shape[0] - width + 1, i
    cdef int k, step
    cdef uint64_t h
    if width < 1 or count < 1:
        return np.empty(0, dtype=np.uint64)
    out = np.empty(count, dtype=np.uint64)
    cdef uint64_t[::1] result = out
    with nogil:
        for i in range(count):
            h = words[i]
            for k in range(1, width):
                for step in range(4):
                    h = (h << 16) ^ table16[h >> 48]
                h ^= words[i + k]
            result[i] = h
    return out


def min_hashes(const uint64_t[::1] shingles not None, const uint64_t[::1] a not None,
               const uint64_t[::1] b not None):
    """Per permutation j, the minimum of a[j] * fmix64(x) + b[j] (mod 2^64) over the shingles x
    (minhash.min_hashes); all ones for no shingle."""
    cdef Py_ssize_t permutations = a.shape[0], i, j
    cdef uint64_t mixed, value
    out = np.full(permutations, 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
    cdef uint64_t[::1] result = out
    with nogil:
        for i in range(shingles.shape[0]):
            mixed = _fmix64(shingles[i])
            for j in range(permutations):
                value = a[j] * mixed + b[j]
                if value < result[j]:
                    result[j] = value
    return out
