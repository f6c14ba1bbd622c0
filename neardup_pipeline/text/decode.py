"""Bytes of a page -> str, by the declared charset, then the document's own, then detection.

beautifulsoup4's UnicodeDammit decides; a strict UTF-8 decode is tried first where it would try
one, and detection reads a sample of a big page only.
"""

from __future__ import annotations

import codecs

# bs4 is imported by the first page given as bytes, not by every command's start-up.

# Bytes read to decide the encoding of a page that declares none (chardet is pure Python).
DETECT_SAMPLE_BYTES = 256 * 1024


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
    from bs4.dammit import EncodingDetector

    return EncodingDetector.find_declared_encoding(data, is_html=True) == "utf-8"
