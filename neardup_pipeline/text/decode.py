"""Bytes of a page -> str, by the declared charset, then the document's own, then detection.

beautifulsoup4's UnicodeDammit decides; a strict UTF-8 decode is tried first where it would try
one, and detection reads a sample of a big page only.
"""

from __future__ import annotations

import codecs
import re

from neardup_pipeline.text.walk import textwalk

# bs4 is imported by the first page UnicodeDammit must decode, not by every command's start-up
# nor by pages that declare UTF-8 and are (the shortcut below).

# Bytes read to decide the encoding of a page that declares none (chardet is pure Python).
DETECT_SAMPLE_BYTES = 256 * 1024

# bs4's own search for a declaration (bs4.dammit's `xml_encoding` and `html_meta`, searched as
# EncodingDetector.find_declared_encoding searches them): the shortcut decides without loading
# bs4 (tests/test_text.py holds the two equal).
_XML_DECLARATION = re.compile(rb"^\s*<\?.*encoding=['\"](.*?)['\"].*\?>", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<\s*meta[^>]+charset\s*=\s*[\"']?([^>]*?)[ /;'\">]", re.IGNORECASE)
_XML_SEARCHED = 1024  # bytes bs4 reads for an XML declaration
_META_SEARCHED = 2048  # bytes, or a twentieth of the page if more, it reads for a <meta> charset


def decode_html(data: bytes, declared_encoding: str | None = None) -> tuple[str, str | None]:
    """Bytes -> str using the declared charset, then the document's own, then detection."""
    text, encoding, _ = decode(data, declared_encoding)
    return text, encoding


def decode(data: bytes, declared_encoding: str | None) -> tuple[str, str | None, bool]:
    """decode_html, and whether the str's UTF-8 is `data` itself (a strict UTF-8 or ASCII decode
    without a byte order mark), so the bytes can be parsed without encoding the str again."""
    if _declared_utf8(data, declared_encoding):  # UnicodeDammit's first try, without its setup
        try:
            return data.decode("utf-8"), "utf-8", True
        except UnicodeDecodeError:
            pass  # UnicodeDammit goes on to the next candidates
    return dammit_decode(data, declared_encoding)


def utf8_in_place(data: bytes, declared_encoding: str | None) -> bool:
    """Whether decode() takes its strict UTF-8 shortcut for `data` (its str's UTF-8 is `data`
    itself), answered without building the str where the compiled walk validates the bytes: a
    page read from its own bytes needs its text only when a reader of text takes it."""
    if not _declared_utf8(data, declared_encoding):
        return False
    if textwalk is not None:
        return bool(textwalk.utf8_valid(data))
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def dammit_decode(data: bytes, declared_encoding: str | None) -> tuple[str, str | None, bool]:
    """decode by UnicodeDammit alone (the reference of its shortcut)."""
    from bs4 import UnicodeDammit

    known = [declared_encoding] if declared_encoding else []
    if len(data) > DETECT_SAMPLE_BYTES:
        # UnicodeDammit runs chardet over the whole input when nothing is declared (seconds on
        # a page of megabytes): decide on a sample cut at an ASCII byte (never inside a
        # character).
        limit = DETECT_SAMPLE_BYTES
        cut = max(data.rfind(b"\n", 0, limit), data.rfind(b" ", 0, limit))
        sample = UnicodeDammit(data[: cut if cut > 0 else DETECT_SAMPLE_BYTES],
                               known_definite_encodings=known, is_html=True)
        found = sample.original_encoding
        encoding = "utf-8" if found in (None, "ascii") else str(found)
        try:
            return data.decode(encoding, errors="replace"), encoding, False
        except LookupError:
            return data.decode("utf-8", errors="replace"), "utf-8", False
    dammit = UnicodeDammit(data, known_definite_encodings=known, is_html=True)
    if dammit.unicode_markup is not None:
        exact = (dammit.original_encoding in ("utf-8", "ascii")
                 and not dammit.contains_replacement_characters
                 and not data.startswith(codecs.BOM_UTF8))
        return dammit.unicode_markup, dammit.original_encoding, exact
    return data.decode("utf-8", errors="replace"), "utf-8", False


def _declared_utf8(data: bytes, declared_encoding: str | None) -> bool:
    """Whether UnicodeDammit would try a strict "utf-8" decode of `data` first: no byte order
    mark (it strips one, then decodes the rest), and declared so by the caller (the HTTP
    header) or, with nothing declared, by the page itself (bs4's own search). Exactly "utf-8":
    an alias ("UTF8") is decoded alike but reported under its own name, so it is left to
    UnicodeDammit, as are pages past the detection sample, whose declaration it seeks there."""
    if len(data) > DETECT_SAMPLE_BYTES or data[:2] in (b"\xfe\xff", b"\xff\xfe") or (
            data[:3] == codecs.BOM_UTF8 or data[:4] == b"\x00\x00\xfe\xff"):
        return False
    if declared_encoding is not None:
        return declared_encoding == "utf-8"
    return declared_in(data) == "utf-8"


def declared_in(data: bytes) -> str | None:
    """The encoding a page declares in its XML declaration, else in a <meta> charset, lower
    case; None for none. What EncodingDetector.find_declared_encoding(data, is_html=True)
    answers."""
    found = _XML_DECLARATION.search(data, 0, _XML_SEARCHED) or _META_CHARSET.search(
        data, 0, max(_META_SEARCHED, int(len(data) * 0.05)))
    name = found.group(1) if found is not None else None
    return name.decode("ascii", "replace").lower() if name else None
