"""Binary bodies are told from text by their first bytes: never fingerprinted as text."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.text.sniff import _head_bytes, binary_kind
from tests.cli_runner import neardup, write_jsonl

PAGE = b"<html><head><title>T</title></head><body><p>" + b"ordinary words " * 200 + b"</p>"
PNG = b"\x89PNG\r\n\x1a\n" + random.Random(1).randbytes(2048)


@pytest.mark.parametrize(("body", "kind"), [
    (PNG, "PNG image"),
    (PNG.decode("utf-8", "replace"), "PNG image"),  # a response's text: 0x89 became U+FFFD
    (PNG.decode("latin-1"), "PNG image"),
    (gzip.compress(PAGE, mtime=0), "gzip data"),  # (no timestamp: the same test id each run)
    (b"%PDF-1.7\n", "PDF document"),
    (b"GIF89a" + bytes(64), "GIF image"),
    (b"PK\x03\x04" + bytes(64), "zip archive"),
    (random.Random(2).randbytes(8192), "control characters"),
    ("\x01\x02text\x03" * 100, "control characters"),
    (b"\x00" * 4096, "control characters"),
    ("utf-16 read as bytes".encode("utf-16-le"), "control characters"),
])
def test_binary_bodies(body: str | bytes, kind: str) -> None:
    assert binary_kind(body) == kind


@pytest.mark.parametrize("body", [
    PAGE, PAGE.decode(), b"", "", "BZh is how a word may start",
    b"<p>a stray\x00NUL among many ordinary words of a real page, and another\x00one</p>",
    "\ufeffhello".encode("utf-16"),  # UTF-16: half NULs, and text
    "vacuum\x00tuples\x00" * 300,  # NULs between words: the words are still there
    "Каждая таблица содержит строки".encode("cp1251").decode("utf-8", "replace"),
])
def test_text_bodies(body: str | bytes) -> None:
    assert binary_kind(body) is None


def test_fingerprinter_reads_no_words_from_a_binary_body() -> None:
    """The CLI's path too: a PNG given as HTML or text is not_html (as the pipeline tags it),
    never signatures."""
    fingerprinter = Fingerprinter()
    gzipped = gzip.compress(PAGE).decode("latin-1")
    for doc in (Document("png", html=PNG), Document("gz", text=gzipped)):
        assert fingerprinter.extract(doc).parser == "binary"
        assert fingerprinter.fingerprint(doc).status == "not_html"
    assert fingerprinter.fingerprint(Document("page", html=PAGE)).status == "ok"


def test_dedup_says_not_html_of_an_image_as_the_pipeline_does(tmp_path: Path) -> None:
    """One word for one case on every path: a PNG line of `neardup dedup` is not_html."""
    corpus = write_jsonl(tmp_path / "in.jsonl", [
        {"id": "png", "html": PNG.decode("latin-1")},
        {"id": "page", "html": PAGE.decode()},
        {"id": "empty", "html": "<p></p>"},
    ])
    done = neardup("dedup", str(corpus))
    assert done.returncode == 0, done.stderr
    statuses = {row["id"]: row.get("status") for row in map(json.loads, done.stdout.splitlines())}
    assert statuses == {"png": "not_html", "page": None, "empty": "no_text"}


def test_control_counts_are_those_of_the_byte_tables() -> None:
    """The compiled count (64-byte blocks, then the tail) against bytes.translate and count,
    on every byte value at every place of a block and the tail, and on random samples."""
    from neardup_pipeline.text import sniff

    textwalk = pytest.importorskip("neardup_pipeline.text._textwalk")

    def reference(data: bytes) -> tuple[int, int]:
        return len(data) - len(data.translate(None, sniff._CONTROL_BYTES)), data.count(0)

    for value in range(256):
        for at in (0, 31, 63, 64, 100, 129):
            data = bytearray(b"x" * 130)
            data[at] = value
            assert textwalk.sniff_counts(bytes(data)) == reference(bytes(data)), (value, at)
    rng = random.Random(7)
    for size in (0, 1, 63, 64, 65, 4096):
        data = bytes(rng.randrange(256) for _ in range(size))
        assert textwalk.sniff_counts(data) == reference(data)


def test_a_text_body_counts_its_characters() -> None:
    """A str is counted through its UTF-8 (control characters are single bytes there), its
    share against its characters: wide characters do not dilute the controls."""
    noisy = ("é東" * 100 + "\x01" * 12) * 20
    assert binary_kind(noisy) == "control characters"
    assert binary_kind(noisy.encode()) is None  # 5 bytes a pair of characters: a smaller share
    assert binary_kind("\ud800 text with a lone surrogate " * 50) is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=32))
def test_the_start_of_a_decoded_body_reads_as_its_bytes(head: str) -> None:
    """Characters below U+0100 are their byte, the others 0x80 (Latin-1 where it can)."""
    assert _head_bytes(head) == bytes(ord(c) if ord(c) < 0x100 else 0x80 for c in head)
