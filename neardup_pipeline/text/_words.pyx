# cython: language_level=3, boundscheck=False, wraparound=False
"""Word tokens of a text in one C pass: exactly what re.findall(r"\w+", text) returns; the
stem cache read for a whole page in one loop; a table that reads a text straight to the stems of
its known words; str.casefold by a table; the test for Arabic-script letters; and whether NFKC
leaves a text unchanged.

The regex engine asks the Unicode database about every character of a non-ASCII text (about
0.2 ms for a 10 KB page); here ASCII characters, most of any Latin-script page, are decided by a
table and only the others by the database, with the regex engine's own test for \w:
Py_UNICODE_ISALNUM or the underscore.
"""

import os

from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.list cimport PyList_Append
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.unicode cimport PyUnicode_Substring
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp

cdef extern from "Python.h":
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch)
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    bint PyUnicode_IS_ASCII(object text)
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)

cdef bint _ASCII_WORD[128]
for _code in range(128):
    _ASCII_WORD[_code] = chr(_code).isalnum() or _code == 0x5F


cdef inline bint _is_word(Py_UCS4 ch) noexcept:
    return _ASCII_WORD[ch] if ch < 128 else Py_UNICODE_ISALNUM(ch)


# Words of at most 8 characters below U+0100 (most words of most pages) are compared in the slot
# itself, their characters packed a byte each: a lookup reads no string object.
cdef Py_ssize_t _COMPACT_CHARS = 8
# The hash's multiplier, odd and drawn per process: which words collide is not known in advance.
cdef uint64_t _SEED = int.from_bytes(os.urandom(8), "little") | 1


cdef struct _Key:  # a word's StemTable key, built a character at a time
    uint64_t hash
    uint64_t packed
    bint fits  # so far at most _COMPACT_CHARS characters, all below U+0100


cdef inline void _key_add(_Key* key, Py_UCS4 ch, Py_ssize_t position) noexcept:
    key.hash = (key.hash ^ <uint64_t>ch) * _SEED
    if ch > 0xFF or position >= _COMPACT_CHARS:
        key.fits = False
    elif key.fits:
        key.packed |= (<uint64_t>ch) << (8 * position)


cdef inline uint64_t _key_finish(_Key* key, Py_ssize_t length) noexcept:
    """The table's hash of the word; key.packed is left 0 for a word that is not compact."""
    cdef uint64_t h = key.hash ^ <uint64_t>length
    if not key.fits:
        key.packed = 0
    h ^= h >> 33
    h *= 0xFF51AFD7ED558CCDULL
    return h ^ (h >> 33)


cdef inline Py_ssize_t _word_end(int kind, void* data, Py_ssize_t index, Py_ssize_t length,
                                 _Key* key) noexcept:
    """The end of the run of word characters that starts at `index` (a word character); with
    `key` (else NULL), that run's characters added to it."""
    cdef Py_ssize_t start = index
    cdef Py_UCS4 ch = PyUnicode_READ(kind, data, index)
    while True:
        if key is not NULL:
            _key_add(key, ch, index - start)
        index += 1
        if index >= length:
            return index
        ch = PyUnicode_READ(kind, data, index)
        if not _is_word(ch):
            return index


def word_tokens(str text not None, Py_ssize_t limit=-1, Py_ssize_t max_chars=-1):
    """The runs of word characters (\w: letters, digits of any script, "_"), in order; at most
    `limit` of them (-1: all), of which those longer than `max_chars` (-1: none) are left out."""
    cdef Py_ssize_t length = len(text), index = 0, start
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef list tokens = []
    while index < length and limit != 0:
        if not _is_word(PyUnicode_READ(kind, data, index)):
            index += 1
            continue
        start = index
        index = _word_end(kind, data, index, length, NULL)
        if max_chars < 0 or index - start <= max_chars:
            tokens.append(PyUnicode_Substring(text, start, index))
        limit -= 1
    return tokens


def known_stems(list tokens not None, dict cache not None):
    """[cache[t] for t in tokens if cache[t]] ("": a stop word, left out), or None as soon as a
    token is not in the cache (the caller learns the page's new words, then asks again)."""
    cdef list kept = []
    cdef PyObject* found
    for token in tokens:
        found = PyDict_GetItem(cache, token)
        if found is NULL:
            return None
        if <object>found:
            kept.append(<object>found)
    return kept


# str.casefold folds each character alone (no context, unlike lower's final sigma), so a table
# of every character's fold gives the same str. No character past plane 1 has a case (the tests
# compare every code point with str.casefold, so a new Unicode version that adds one is caught).
cdef Py_UCS4 _FOLD_LIMIT = 0x20000
cdef uint32_t _MANY = 0x80000000  # flag: the fold is several characters, _FOLDS_OF[the rest]
cdef uint32_t* _FOLD = NULL  # per code point below _FOLD_LIMIT: its fold, or _MANY | index


cdef struct _Folds:  # a fold of several characters (at most 3: "\u0390" -> "\u03b9\u0308\u0301")
    uint32_t count
    Py_UCS4 widest
    Py_UCS4 chars[3]


cdef _Folds* _FOLDS_OF = NULL


cdef int _fold_table() except -1:
    """Fill _FOLD and _FOLDS_OF from str.casefold, once (about 13 ms)."""
    global _FOLD, _FOLDS_OF
    cdef uint32_t* table = <uint32_t*>calloc(_FOLD_LIMIT, sizeof(uint32_t))
    cdef list many = []
    cdef Py_UCS4 code
    if table is NULL:
        raise MemoryError()
    for code in range(_FOLD_LIMIT):
        folded = chr(code).casefold()
        if len(folded) == 1:
            table[code] = ord(folded)
        else:
            table[code] = _MANY | len(many)
            many.append(folded)
    cdef _Folds* folds = <_Folds*>calloc(max(len(many), 1), sizeof(_Folds))
    if folds is NULL:
        free(table)
        raise MemoryError()
    for index, folded in enumerate(many):
        if len(folded) > 3:
            free(table)
            free(folds)
            raise RuntimeError("a casefold of more than 3 characters: the table cannot hold it")
        folds[index].count = len(folded)
        folds[index].widest = max(map(ord, folded))
        for position, char in enumerate(folded):
            folds[index].chars[position] = ord(char)
    _FOLDS_OF = folds
    _FOLD = table
    return 0


ctypedef fused _Source:  # the characters of a str of each kind (1, 2 or 4 bytes)
    uint8_t
    uint16_t
    uint32_t

ctypedef fused _Target:
    uint8_t
    uint16_t
    uint32_t


cdef inline uint32_t _fold_of(Py_UCS4 ch) noexcept:
    return _FOLD[ch] if ch < _FOLD_LIMIT else ch


cdef Py_ssize_t _folded_size(const _Source* chars, Py_ssize_t length, Py_UCS4* widest) noexcept:
    """The folded text's length; `widest` its widest character."""
    cdef Py_ssize_t index, size = length
    cdef uint32_t fold, top = 0
    cdef _Folds* folds
    for index in range(length):
        fold = _fold_of(chars[index])
        if fold & _MANY:
            folds = &_FOLDS_OF[fold & ~_MANY]
            size += folds.count - 1
            fold = folds.widest
        if fold > top:
            top = fold
    widest[0] = top
    return size


cdef void _fold_into(const _Source* chars, Py_ssize_t length, _Target* out) noexcept:
    cdef Py_ssize_t index, position = 0
    cdef uint32_t fold, part
    cdef _Folds* folds
    for index in range(length):
        fold = _fold_of(chars[index])
        if fold & _MANY:
            folds = &_FOLDS_OF[fold & ~_MANY]
            for part in range(folds.count):
                out[position] = <_Target>folds.chars[part]
                position += 1
        else:
            out[position] = <_Target>fold
            position += 1


cdef void _fold_from(const _Source* chars, Py_ssize_t length, int kind, void* out) noexcept:
    if kind == 1:
        _fold_into(chars, length, <uint8_t*>out)
    elif kind == 2:
        _fold_into(chars, length, <uint16_t*>out)
    else:
        _fold_into(chars, length, <uint32_t*>out)


def casefold(str text not None):
    """text.casefold(), the same str, by a table: CPython's fold asks the Unicode database about
    each character of a non-ASCII text; the table is one read per character."""
    if PyUnicode_IS_ASCII(text):
        return text.casefold()  # CPython's own ASCII loop
    if _FOLD is NULL:
        _fold_table()
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text), size
    cdef Py_UCS4 widest = 0
    if kind == 1:
        size = _folded_size(<uint8_t*>data, length, &widest)
    elif kind == 2:
        size = _folded_size(<uint16_t*>data, length, &widest)
    else:
        size = _folded_size(<uint32_t*>data, length, &widest)
    result = PyUnicode_New(size, widest)
    cdef int out_kind = PyUnicode_KIND(result)
    cdef void* out = PyUnicode_DATA(result)
    if kind == 1:
        _fold_from(<uint8_t*>data, length, out_kind, out)
    elif kind == 2:
        _fold_from(<uint16_t*>data, length, out_kind, out)
    else:
        _fold_from(<uint32_t*>data, length, out_kind, out)
    return result


def arabic_script(str text not None):
    """Whether the text holds a character of normalize._ARABIC_SCRIPT (U+0600-U+06FF, ZWNJ,
    ZWJ): a text of one-byte characters cannot, a wider one is read without the regex engine."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t index, length = len(text)
    cdef Py_UCS4 ch
    if kind == 1:
        return False
    for index in range(length):
        ch = PyUnicode_READ(kind, data, index)
        if 0x0600 <= ch <= 0x06FF or ch == 0x200C or ch == 0x200D:
            return True
    return False


def nfkc_unchanged(str text not None, const unsigned char[::1] stable not None):
    """Whether unicodedata.normalize("NFKC", text) is `text`, by a table: `stable` holds 1 for
    each BMP character that no NFKC step touches (normalize._nfkc_stable_table), and a text of
    them only is left as it is. CPython's own quick check asks the Unicode database about each
    character; a text with a character off the table (or beyond the BMP) answers False, and
    the caller normalises it."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t index, length = PyUnicode_GET_LENGTH(text)
    cdef Py_UCS4 ch
    if PyUnicode_IS_ASCII(text):
        return True
    if kind == 4 or stable.shape[0] != 0x10000:
        return False
    for index in range(length):
        ch = PyUnicode_READ(kind, data, index)
        if not stable[ch]:
            return False
    return True


cdef struct _Slot:  # 32 bytes
    PyObject* token  # NULL: an empty slot
    PyObject* stem
    uint64_t packed  # a compact word's characters, a byte each (see _COMPACT_CHARS)
    uint32_t hash  # the word hash's low bits (a table has fewer than 2^32 slots)
    uint16_t length  # a longer word is never kept (the dict has it)
    uint8_t compact  # `packed` and `length` say all there is to compare
    uint8_t stop  # the stem is "" (a stop word): the stem object need not be read

cdef Py_ssize_t _MAX_LENGTH = 0xFFFF

# Probes a lookup or an insertion may take: past them a word is treated as unknown (the caller's
# dict decides), so words built to collide cost a bounded time and are never wrong.
cdef Py_ssize_t _MAX_PROBES = 64


cdef class StemTable:
    """Word -> stem ("" for a stop word), read straight from a text's characters.

    The dict of stems (normalize._WordRules) is read with one str object per token, each made and
    hashed first: with a page's tokens that is most of the words' cost. This table holds the same
    pairs keyed by the characters, so `stems` finds each token's stem where it lies in the text
    and builds no token at all. It is a memo of a pure function: an entry is never wrong, a word
    missing from it only sends the caller to the dict.
    """

    cdef _Slot* slots
    cdef Py_ssize_t capacity, used

    def __cinit__(self):
        self.capacity = 0
        self.used = 0
        self.slots = NULL

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        cdef Py_ssize_t i
        if self.slots is not NULL:
            for i in range(self.capacity):
                if self.slots[i].token is not NULL:
                    Py_DECREF(<object>self.slots[i].token)
                    Py_DECREF(<object>self.slots[i].stem)
            free(self.slots)
        self.slots = NULL
        self.capacity = 0
        self.used = 0

    def __len__(self):
        return self.used

    def clear(self):
        """Forget every word (the caller's dict was replaced by a smaller one)."""
        self._release()

    def update(self, dict stems not None):
        """Add or replace each token -> stem pair ("" for a stop word) of `stems`."""
        cdef Py_ssize_t position = 0
        cdef PyObject* token
        cdef PyObject* stem
        while PyDict_Next(stems, &position, &token, &stem):
            if type(<object>token) is not str or type(<object>stem) is not str:
                raise TypeError("a StemTable maps str tokens to str stems")
            self._put(<str>token, <str>stem)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t old_capacity = self.capacity, i
        cdef _Slot* old = self.slots
        cdef Py_ssize_t capacity = old_capacity * 2 if old_capacity else 1024
        cdef _Slot* fresh = <_Slot*>calloc(capacity, sizeof(_Slot))
        if fresh is NULL:
            raise MemoryError()
        self.slots = fresh
        self.capacity = capacity
        self.used = 0
        cdef _Slot* slot
        for i in range(old_capacity):
            if old[i].token is NULL:
                continue
            slot = self._free_slot(old[i].hash)
            if slot is NULL:  # no free probe: the pair is dropped (a memo)
                Py_DECREF(<object>old[i].token)
                Py_DECREF(<object>old[i].stem)
            else:  # moves the references
                slot[0] = old[i]
                self.used += 1
        free(old)
        return 0

    cdef _Slot* _free_slot(self, uint64_t hash) noexcept:
        """The empty slot a new word of this hash goes to; NULL when its probes are all taken."""
        cdef Py_ssize_t mask = self.capacity - 1, index = <Py_ssize_t>(hash & mask), probe
        for probe in range(_MAX_PROBES):
            if self.slots[index].token is NULL:
                return &self.slots[index]
            index = (index + 1) & mask
        return NULL

    cdef int _put(self, str token, str stem) except -1:
        cdef int kind = PyUnicode_KIND(token)
        cdef void* data = PyUnicode_DATA(token)
        cdef Py_ssize_t length = PyUnicode_GET_LENGTH(token)
        cdef _Key key = _Key(0, 0, True)
        cdef Py_ssize_t i
        cdef uint64_t h
        cdef _Slot* slot
        if length > _MAX_LENGTH:
            return 0
        for i in range(length):
            _key_add(&key, PyUnicode_READ(kind, data, i), i)
        h = _key_finish(&key, length)
        if (self.used + 1) * 2 > self.capacity:
            self._grow()
        slot = self._find(h, kind, data, 0, length, key.fits, key.packed)
        if slot is not NULL:  # known: the new stem replaces the old one
            Py_INCREF(stem)
            Py_DECREF(<object>slot.stem)
            slot.stem = <PyObject*>stem
            slot.stop = PyUnicode_GET_LENGTH(stem) == 0
            return 0
        while True:
            slot = self._free_slot(h)
            if slot is not NULL:
                break
            # a run of taken slots past the probes: chance at this load, so a larger table
            # spreads it; at a sixteenth full it is words built to collide, and this one is left
            # to the caller's dict
            if self.capacity >= 16 * (self.used + 1):
                return 0
            self._grow()
        Py_INCREF(token)
        Py_INCREF(stem)
        slot.hash = <uint32_t>h
        slot.token = <PyObject*>token
        slot.stem = <PyObject*>stem
        slot.packed = key.packed
        slot.length = <uint16_t>length
        slot.compact = key.fits
        slot.stop = PyUnicode_GET_LENGTH(stem) == 0
        self.used += 1
        return 0

    cdef _Slot* _find(self, uint64_t hash, int kind, void* data, Py_ssize_t start,
                      Py_ssize_t length, bint compact, uint64_t packed) noexcept:
        """The slot of the word text[start:start + length], or NULL when it is not here;
        `compact` and `packed` as _Slot's, for that word."""
        cdef Py_ssize_t mask = self.capacity - 1, index, probe, i
        cdef _Slot* slot
        cdef int token_kind
        cdef void* token_data
        cdef bint same
        if self.capacity == 0:
            return NULL
        index = <Py_ssize_t>(hash & mask)
        for probe in range(_MAX_PROBES):
            slot = &self.slots[index]
            if slot.token is NULL:
                return NULL
            if (slot.hash == <uint32_t>hash and slot.length == length
                    and slot.compact == compact):
                if compact:
                    same = slot.packed == packed
                else:
                    token_kind = PyUnicode_KIND(<object>slot.token)
                    token_data = PyUnicode_DATA(<object>slot.token)
                    if token_kind == kind:
                        same = memcmp(token_data, <char*>data + start * kind,
                                      length * kind) == 0
                    else:
                        same = True
                        for i in range(length):
                            if (PyUnicode_READ(token_kind, token_data, i)
                                    != PyUnicode_READ(kind, data, start + i)):
                                same = False
                                break
                if same:
                    return slot
            index = (index + 1) & mask
        return NULL

    def stems(self, str text not None, Py_ssize_t limit=-1, Py_ssize_t max_chars=-1,
              Py_ssize_t max_words=-1):
        """The stems of the text's words, stop words left out: the words of
        word_tokens(text, limit, max_chars)[:max_words] (-1: no bound) read through the table.
        None when a word is not in the table or no stem is left (the caller's dict decides)."""
        cdef Py_ssize_t length = len(text), index = 0, start
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef list kept = []  # made first: no object is made below, so no collection can run
        cdef _Key key
        cdef uint64_t h
        cdef _Slot* slot
        while index < length and limit != 0 and max_words != 0:
            if not _is_word(PyUnicode_READ(kind, data, index)):
                index += 1
                continue
            start = index
            key = _Key(0, 0, True)
            index = _word_end(kind, data, index, length, &key)
            limit -= 1
            if max_chars >= 0 and index - start > max_chars:
                continue
            max_words -= 1
            h = _key_finish(&key, index - start)
            slot = self._find(h, kind, data, start, index - start, key.fits, key.packed)
            if slot is NULL:
                return None
            if not slot.stop:
                PyList_Append(kept, <object>slot.stem)
        return kept or None
