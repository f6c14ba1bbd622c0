# cython: language_level=3, boundscheck=False, wraparound=False
"""The numeric loops of fingerprinting and verification, in C: Rabin fingerprints of words and of
word shingles, the per-permutation minimums of MinHash, the simhash bit vote, the finaliser and the
distinct counts of a word bag, weighted Jaccard of two bags, the word-hash cache read, and the
bit packing of stored signatures.

numpy computed both over whole arrays, but each step wrote a temporary as large as its input
(MinHash: 84 x shingles products, 1.3 MB for a 2,000-word page, past the L2 cache) and read it
back. Here every value is computed in registers and only the results are written; the MinHash
minimums in vector lanes (_minhash_lanes.h). The results are bit for bit those of the numpy
code, which stays as the fallback (shingles.py, minhash.py).
"""

cimport cython
import numpy as np

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_AsUnsignedLongLong
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport int64_t, uint16_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
    object PyUnicode_DecodeASCII(const char* data, Py_ssize_t size, const char* errors)


def rabin_words(list words not None, const uint64_t[::1] table not None):
    """Rabin fingerprint of each word's UTF-8 bytes (RabinHasher.fingerprint: one byte a step
    through the 256-entry `table`), as uint64. An ASCII word is read in place; another is encoded
    to a temporary, so no word keeps a UTF-8 copy of itself in the caller's cache."""
    cdef Py_ssize_t n = len(words), i, j, size
    cdef const unsigned char* data
    cdef uint64_t h
    cdef bytes encoded
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] result = out
    for i in range(n):
        word = words[i]
        if (<str?>word).isascii():
            data = <const unsigned char*>PyUnicode_AsUTF8AndSize(word, &size)
        else:
            encoded = (<str>word).encode("utf-8")
            data = <const unsigned char*>PyBytes_AS_STRING(encoded)
            size = PyBytes_GET_SIZE(encoded)
        h = 0
        for j in range(size):
            h = (h << 8) ^ data[j] ^ table[h >> 56]
        result[i] = h
    return out


def rabin_shingles(const uint64_t[::1] words not None, int width,
                   const uint64_t[:, ::1] slices not None):
    """Rabin fingerprint of each run of `width` consecutive word fingerprints (f(A || v) =
    f(A) x^64 + v mod P; f(A) x^64 mod P as the XOR of one `slices` entry per byte of f(A):
    RabinHasher.word_slice_table)."""
    cdef Py_ssize_t count = words.shape[0] - width + 1, i
    cdef int k
    cdef uint64_t h
    if slices.shape[0] != 8 or slices.shape[1] != 256:
        raise ValueError("slices must be the 8 x 256 table of RabinHasher.word_slice_table")
    if width < 1 or count < 1:
        return np.empty(0, dtype=np.uint64)
    out = np.empty(count, dtype=np.uint64)
    cdef uint64_t[::1] result = out
    cdef const uint64_t* s = &slices[0, 0]
    with nogil:
        for i in range(count):
            h = words[i]
            for k in range(1, width):
                h = (s[h & 0xFF] ^ s[256 + ((h >> 8) & 0xFF)]
                     ^ s[512 + ((h >> 16) & 0xFF)] ^ s[768 + ((h >> 24) & 0xFF)]
                     ^ s[1024 + ((h >> 32) & 0xFF)] ^ s[1280 + ((h >> 40) & 0xFF)]
                     ^ s[1536 + ((h >> 48) & 0xFF)] ^ s[1792 + (h >> 56)]
                     ^ words[i + k])
            result[i] = h
    return out


cdef extern from "_minhash_lanes.h":
    uint64_t nd_fmix64(uint64_t x) nogil  # MurmurHash3's 64-bit finaliser
    int nd_best_kernel() nogil
    void nd_min_hashes(int kernel, const uint64_t* shingles, size_t n, const uint64_t* a,
                       const uint64_t* b, size_t k, uint64_t* out) nogil

MIN_HASH_KERNELS = ("scalar", "avx2", "avx512")


def min_hash_kernels():
    """The MinHash kernels this CPU runs, slowest first (the last is the one used)."""
    return MIN_HASH_KERNELS[: nd_best_kernel() + 1]


def min_hashes(const uint64_t[::1] shingles not None, const uint64_t[::1] a not None,
               const uint64_t[::1] b not None, str kernel=None):
    """Per permutation j, the minimum of a[j] * fmix64(x) + b[j] (mod 2^64) over the shingles x
    (minhash.min_hashes); all ones for no shingle. `kernel` (of min_hash_kernels(); default the
    fastest) only changes the speed."""
    cdef int chosen = nd_best_kernel()
    if kernel is not None:
        if kernel not in MIN_HASH_KERNELS:
            raise ValueError(f"unknown MinHash kernel {kernel!r}: one of {MIN_HASH_KERNELS}")
        chosen = MIN_HASH_KERNELS.index(kernel)
    if a.shape[0] != b.shape[0]:
        raise ValueError("a and b must have the same length")
    if chosen > nd_best_kernel():
        raise ValueError(f"this CPU has no {kernel} kernel")
    out = np.empty(a.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] result = out
    if a.shape[0] == 0:
        return out
    with nogil:
        nd_min_hashes(chosen, &shingles[0] if shingles.shape[0] else NULL, shingles.shape[0],
                      &a[0], &b[0], a.shape[0], &result[0])
    return out


def fmix64(const uint64_t[::1] values not None):
    """MurmurHash3's 64-bit finaliser of each value (minhash._fmix64)."""
    cdef Py_ssize_t i, n = values.shape[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] result = out
    with nogil:
        for i in range(n):
            result[i] = nd_fmix64(values[i])
    return out


cdef const char* _HEX = b"0123456789abcdef"


def passage_keys(const uint16_t[::1] codes not None, uint64_t limit, uint64_t mix,
                 bytes prefix not None):
    """bag.passage_keys in one pass: each 3-word run of the word codes packed as
    c0 << 32 | c1 << 16 | c2 and finalised (fmix64), sampled when at most `limit`; each pair of
    consecutive samples a key, fmix64(previous * mix ^ next), written as `prefix` and 16
    hex digits, in text order, once each. The numpy code in bag.py is the reference and the
    fallback; the keys are the same strings."""
    cdef Py_ssize_t n = codes.shape[0], i, found = 0, j, size = len(prefix)
    cdef uint64_t run, previous = 0, pair
    cdef bint sampled = False, seen
    cdef char key[64]
    cdef uint64_t* pairs
    keys = []
    if n < 4:
        return keys
    if size > 40:
        raise ValueError("a passage key prefix is a few characters")
    memcpy(key, PyBytes_AS_STRING(prefix), size)
    pairs = <uint64_t*>calloc(n, sizeof(uint64_t))
    if pairs == NULL:
        raise MemoryError()
    try:
        for i in range(n - 2):
            run = nd_fmix64((<uint64_t>codes[i] << 32) | (<uint64_t>codes[i + 1] << 16)
                            | <uint64_t>codes[i + 2])
            if run > limit:
                continue
            if sampled:
                pair = nd_fmix64(previous * mix ^ run)
                seen = False
                for j in range(found):
                    if pairs[j] == pair:
                        seen = True
                        break
                if not seen:
                    pairs[found] = pair
                    found += 1
                    for j in range(16):
                        key[size + j] = _HEX[(pair >> (60 - 4 * j)) & 15]
                    keys.append(PyUnicode_DecodeASCII(key, size + 16, NULL))
            previous = run
            sampled = True
    finally:
        free(pairs)
    return keys


def simhash64(const uint64_t[::1] hashes not None):
    """Charikar's vote with unit weights (simhash.simhash): bit k of the result is set where more
    than half of the hashes have bit k set. Counted eight bits a step: byte j of lanes[b] counts
    bit 8j + b, flushed before a byte can overflow."""
    cdef Py_ssize_t i, n = hashes.shape[0]
    cdef int k, plane, pending = 0
    cdef int64_t ones[64]
    cdef uint64_t lanes[8]
    cdef uint64_t h, result = 0
    for k in range(64):
        ones[k] = 0
    for plane in range(8):
        lanes[plane] = 0
    with nogil:
        for i in range(n):
            h = hashes[i]
            for plane in range(8):
                lanes[plane] += (h >> plane) & 0x0101010101010101ULL
            pending += 1
            if pending == 255 or i == n - 1:
                for plane in range(8):
                    for k in range(8):
                        ones[8 * k + plane] += (lanes[plane] >> (8 * k)) & 0xFF
                    lanes[plane] = 0
                pending = 0
        for k in range(64):
            if 2 * ones[k] > n:
                result |= (<uint64_t>1) << k
    return result


def distinct_counts(const uint64_t[::1] ordered not None):
    """(distinct values, how often each occurs) of an ascending array (np.unique's counts)."""
    cdef Py_ssize_t i, n = ordered.shape[0], kept = 0
    values = np.empty(n, dtype=np.uint64)
    counts = np.empty(n, dtype=np.int64)
    cdef uint64_t[::1] out_values = values
    cdef int64_t[::1] out_counts = counts
    with nogil:
        for i in range(n):
            if kept and out_values[kept - 1] == ordered[i]:
                out_counts[kept - 1] += 1
            else:
                out_values[kept] = ordered[i]
                out_counts[kept] = 1
                kept += 1
    return values[:kept], counts[:kept]


def pack_bits(const uint64_t[::1] values not None, int width):
    """Each value's low `width` bits (1 to 64), most significant first, back to back; the last
    byte padded with zero bits (packing.numpy_pack_bits)."""
    cdef Py_ssize_t n = values.shape[0], i, at = 0
    cdef Py_ssize_t size = (n * width + 7) // 8
    out = np.zeros(size, dtype=np.uint8)
    cdef unsigned char[::1] dst = out
    cdef uint64_t pending = 0, value, chunk
    cdef int held = 0, left, take
    with nogil:
        for i in range(n):
            value = values[i]
            left = width
            while left > 0:
                take = left if left < 56 - held else 56 - held
                chunk = (value >> (left - take)) & ((<uint64_t>1 << take) - 1)
                pending = (pending << take) | chunk
                held += take
                left -= take
                while held >= 8:
                    dst[at] = <unsigned char>((pending >> (held - 8)) & 0xFF)
                    at += 1
                    held -= 8
                pending &= (<uint64_t>1 << held) - 1
        if held:
            dst[at] = <unsigned char>((pending << (8 - held)) & 0xFF)
    return out.tobytes()


def unpack_bits(const unsigned char[::1] raw not None, int width, Py_ssize_t count):
    """`count` values of `width` bits, as `pack_bits` wrote them (packing.numpy_unpack_bits)."""
    if (count * width + 7) // 8 > raw.shape[0]:
        raise ValueError("packed bits end early")
    out = np.empty(count, dtype=np.uint64)
    cdef uint64_t[::1] values = out
    cdef Py_ssize_t i, bit = 0
    cdef uint64_t value
    cdef int need, free, take
    with nogil:
        for i in range(count):
            value = 0
            need = width
            while need > 0:
                free = 8 - <int>(bit & 7)
                take = need if need < free else free
                value = (value << take) | ((raw[bit >> 3] >> (free - take)) & ((1 << take) - 1))
                need -= take
                bit += take
            values[i] = value
    return out


def weighted_jaccard(const uint64_t[::1] a not None, const float[::1] wa not None,
                     const uint64_t[::1] b not None, const float[::1] wb not None):
    """sum(min) / sum(max) of two weighted sets (ascending, duplicate-free hashes) in one merge;
    1.0 for two empty sets (rarewords.weighted_jaccard, summed in float64)."""
    cdef Py_ssize_t i = 0, j = 0, na = a.shape[0], nb = b.shape[0]
    cdef double low = 0.0, high = 0.0, x, y
    if na != wa.shape[0] or nb != wb.shape[0]:
        raise ValueError("each set needs one weight per hash")
    if na == 0 and nb == 0:
        return 1.0
    with nogil:
        while i < na and j < nb:
            if a[i] == b[j]:
                x, y = wa[i], wb[j]
                low += x if x < y else y
                high += y if x < y else x
                i += 1
                j += 1
            elif a[i] < b[j]:
                high += wa[i]
                i += 1
            else:
                high += wb[j]
                j += 1
        while i < na:
            high += wa[i]
            i += 1
        while j < nb:
            high += wb[j]
            j += 1
    return low / high if high > 0 else 0.0


def cached_hashes(list words not None, dict cache not None):
    """[cache[w] for w in words] as uint64, or None as soon as a word is not in the cache (the
    caller hashes the page's new words, then asks again)."""
    cdef Py_ssize_t i, n = len(words)
    cdef PyObject* found
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] result = out
    for i in range(n):
        found = PyDict_GetItem(cache, words[i])
        if found is NULL:
            return None
        result[i] = PyLong_AsUnsignedLongLong(<object>found)
    return out


cdef struct _HashSlot:
    PyObject* word  # NULL: an empty slot
    uint64_t value

# Probes a lookup or an insertion may take; a word past them is not memoised (the dict has it).
cdef Py_ssize_t _MAX_HASH_PROBES = 64


@cython.final
cdef class WordHashMemo:
    """Word object -> its 64-bit hash, by identity, for at most `capacity` words.

    A page's words are the stem cache's own str objects (normalize._WordRules), the same objects
    page after page: found by address, a word's hash is one probe of a compact table, where the
    dict (cached_hashes) reads each word's str object and its int value. The memo holds a
    reference to every word it keeps (an address is never reused while it is here) and forgets
    them all when full; a word it misses is read from the caller's dict.
    """

    cdef _HashSlot* slots
    cdef Py_ssize_t mask, used, limit

    def __cinit__(self, Py_ssize_t capacity=1 << 17):
        cdef Py_ssize_t size = 1024
        while size < 2 * capacity:
            size *= 2
        self.slots = <_HashSlot*>calloc(size, sizeof(_HashSlot))
        if self.slots is NULL:
            raise MemoryError()
        self.mask = size - 1
        self.used = 0
        self.limit = capacity

    def __dealloc__(self):
        if self.slots is not NULL:
            self._forget()
            free(self.slots)

    cdef void _forget(self) noexcept:
        cdef Py_ssize_t i
        for i in range(self.mask + 1):
            if self.slots[i].word is not NULL:
                Py_DECREF(<object>self.slots[i].word)
                self.slots[i].word = NULL
        self.used = 0

    def __len__(self):
        return self.used

    def clear(self):
        """Forget every word (the caller's dict was replaced)."""
        self._forget()

    cdef inline _HashSlot* _slot_of(self, PyObject* word) noexcept:
        """The word's slot, else the empty one it would take; NULL past the probes."""
        cdef Py_ssize_t index = <Py_ssize_t>(
            ((<uintptr_t>word >> 4) * 0x9E3779B97F4A7C15ULL) >> 20) & self.mask
        cdef Py_ssize_t probe
        for probe in range(_MAX_HASH_PROBES):
            if self.slots[index].word == word or self.slots[index].word is NULL:
                return &self.slots[index]
            index = (index + 1) & self.mask
        return NULL

    def add(self, list words not None, const uint64_t[::1] hashes not None):
        """Memoise hashes[i] for words[i] (a word already here keeps its value)."""
        cdef Py_ssize_t i
        cdef PyObject* word
        cdef _HashSlot* slot
        if len(words) != hashes.shape[0]:
            raise ValueError("one hash per word")
        for i in range(hashes.shape[0]):
            word = <PyObject*>words[i]
            if self.used >= self.limit:
                self._forget()
            slot = self._slot_of(word)
            if slot is not NULL and slot.word is NULL:
                Py_INCREF(<object>word)
                slot.word = word
                slot.value = hashes[i]
                self.used += 1

    def lookup(self, list words not None):
        """The memoised hash of every word as uint64, or None when one is not here."""
        cdef Py_ssize_t i, n = len(words)
        cdef _HashSlot* slot
        out = np.empty(n, dtype=np.uint64)
        cdef uint64_t[::1] result = out
        for i in range(n):
            slot = self._slot_of(<PyObject*>words[i])
            if slot is NULL or slot.word is NULL:
                return None
            result[i] = slot.value
        return out
