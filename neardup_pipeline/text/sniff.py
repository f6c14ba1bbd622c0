"""Is this body text at all? A cheap look at its first bytes, before any parser sees it.

An image or an archive served as `text/html` (or put in an item's `html` field) would otherwise
be read as text: a page of mojibake that gets a fingerprint, is stored, and can match other
garbage. Two signs, both read from the start of the body only: a file format's magic number, and
the share of control characters (text has almost none; uniformly random bytes, which compressed
and encrypted data look like, have about 11%, NUL apart). Pure: no I/O.
"""

from __future__ import annotations

import re

from neardup_pipeline.text.walk import textwalk

__all__ = ["MAX_CONTROL_SHARE", "MAX_NUL_SHARE", "SNIFF_CHARS", "binary_kind"]

SNIFF_CHARS = 4096  # how much of the start is looked at: the check stays cheap on huge pages
# Above this share of control characters other than NUL the body is not text: well below
# random bytes' 11%, well above the odd stray escape or bell of a real page.
MAX_CONTROL_SHARE = 0.05
# NULs count apart: a page with NULs between its words still has words to read (the parser
# drops them); one made mostly of NULs (padding, UTF-16 read as bytes) does not.
MAX_NUL_SHARE = 0.3

# Magic numbers at offset 0. A byte >= 0x80 may reach us already decoded (a str from a
# response's text): there it matches any character above U+00FF, such as U+FFFD or '‰'.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"\x00\x00\x01\x00", "ICO image"),
    (b"\x1f\x8b", "gzip data"),
    (b"BZh", "bzip2 data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"(\xb5/\xfd", "zstd data"),
    (b"7z\xbc\xaf'\x1c", "7z archive"),
    (b"PK\x03\x04", "zip archive"),
    (b"PK\x05\x06", "zip archive"),
    (b"Rar!\x1a\x07", "RAR archive"),
    (b"%PDF-", "PDF document"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "MS Office document"),
    (b"\x7fELF", "ELF executable"),
    (b"MZ\x90\x00", "Windows executable"),
    (b"\x00asm", "WebAssembly module"),
    (b"OggS", "Ogg media"),
    (b"fLaC", "FLAC audio"),
    (b"wOFF", "WOFF font"),
    (b"wOF2", "WOFF2 font"),
)
_FIRST_BYTES = frozenset(magic[0] for magic, _ in _MAGIC)  # what a magic number starts with
# Containers whose format name sits after a size field.
_RIFF = re.compile(rb"RIFF.{4}(WEBP|WAVE|AVI )", re.DOTALL)
_ISO_MEDIA = re.compile(rb".{4}ftyp", re.DOTALL)  # MP4, MOV, HEIC, AVIF
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY", re.DOTALL)  # "BZh" alone starts English words

# Control characters that text does not carry: C0 except tab, newline, form feed, carriage
# return (and vertical tab, seen in old plain text), plus DEL.
_CONTROL_BYTES = bytes([*range(0x01, 0x09), *range(0x0E, 0x20), 0x7F])
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 text is half NULs and still text


def binary_kind(body: str | bytes) -> str | None:
    """What `body` is when it is not text ("PNG image", "gzip data", "control characters"),
    or None when it may be text. Looks at its first SNIFF_CHARS only."""
    kind = _magic(_head_bytes(body[:32]))
    if kind is not None:
        return kind
    sample = body[:SNIFF_CHARS]
    if isinstance(sample, bytes) and sample.startswith(_UTF16_BOMS):
        return None
    # A control character is one byte in UTF-8, and no other character's bytes are below 0x80:
    # a text's counts are its UTF-8's (the share stays one of its characters).
    controls, nuls = _control_counts(
        sample if isinstance(sample, bytes) else sample.encode("utf-8", "replace"))
    if sample and (controls / len(sample) > MAX_CONTROL_SHARE
                   or nuls / len(sample) > MAX_NUL_SHARE):
        return "control characters"
    return None


def _control_counts(data: bytes) -> tuple[int, int]:
    """(control bytes other than NUL, NULs): in one C pass where built."""
    if textwalk is not None:
        return textwalk.sniff_counts(data)
    return len(data) - len(data.translate(None, _CONTROL_BYTES)), data.count(0)


def _head_bytes(head: str | bytes) -> bytes:
    """The start of the body as bytes; a decoded character above U+00FF becomes 0x80, which
    the magic numbers read as "any byte >= 0x80"."""
    if isinstance(head, bytes):
        return head
    try:  # a start of characters below U+0100 (most pages) is its own Latin-1, in one C call
        return head.encode("latin-1")
    except UnicodeEncodeError:
        return bytes(ord(c) if ord(c) < 0x100 else 0x80 for c in head)


def _magic(head: bytes) -> str | None:
    if head and head[0] < 0x80 and head[0] not in _FIRST_BYTES:
        return _container(head)  # no magic number starts so: most pages ("<", a space)
    for magic, kind in _MAGIC:
        if not head or not _same_byte(head[0], magic[0]):
            continue  # the first byte already differs: most magic numbers, most pages
        pairs = list(zip(head, magic, strict=False))
        # Two bytes at least must match exactly: mojibake (U+FFFD after U+FFFD) is no JPEG.
        if len(head) >= len(magic) and sum(h == m for h, m in pairs) >= 2 and all(
            _same_byte(h, m) for h, m in pairs
        ):
            if kind == "bzip2 data" and not _BZIP2.match(head):
                continue
            return kind
    return _container(head)


def _container(head: bytes) -> str | None:
    if _RIFF.match(head):
        return "RIFF media"
    if _ISO_MEDIA.match(head) and head[8:12].isalnum():
        return "ISO media"
    return None


def _same_byte(head: int, magic: int) -> bool:
    """A byte of the body matches a byte of a magic number; 0x80 stands for any byte >= 0x80
    (a decoded character above U+00FF, see _head_bytes)."""
    return head == magic or (head == 0x80 and magic >= 0x80)
