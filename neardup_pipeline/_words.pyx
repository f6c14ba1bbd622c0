# cython: language_level=3, boundscheck=False, wraparound=False
"""Word tokens of a text in one C pass: exactly what re.findall(r"\w+", text) returns; the
stem cache read for a whole page in one loop; and the test for Arabic-script letters.

The regex engine asks the Unicode database about every character of a non-ASCII text (about
0.2 ms for a 10 KB page); here ASCII characters, most of any Latin-script page, are decided by a
table and only the others by the database, with the regex engine's own test for \w:
Py_UNICODE_ISALNUM or the underscore.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_Substring

cdef extern from "Python.h":
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch)
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)

cdef bint _ASCII_WORD[128]
for _code in range(128):
    _ASCII_WORD[_code] = chr(_code).isalnum() or _code == 0x5F


cdef inline bint _is_word(Py_UCS4 ch) noexcept:
    return _ASCII_WORD[ch] if ch < 128 else Py_UNICODE_ISALNUM(ch)


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
        index += 1
        while index < length and _is_word(PyUnicode_READ(kind, data, index)):
            index += 1
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
