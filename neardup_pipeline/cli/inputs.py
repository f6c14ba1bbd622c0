"""Documents in, lines out: how every command reads its corpus and writes its results."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlparse

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.document import Document
from neardup_pipeline.errors import InputError
from neardup_pipeline.feed import parse_document

__all__ = ["corpus_documents", "load_document", "open_input", "open_output", "parse_document"]

TEXT_SUFFIXES = (".html", ".htm", ".xhtml", ".txt", ".text")


def load_document(ref: str) -> Document:
    """A file path or file:// URL -> Document (HTML when it looks like markup)."""
    parsed = urlparse(ref)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
    elif parsed.scheme in ("", "c", "d") or len(parsed.scheme) == 1:
        path = Path(ref)
    else:
        raise InputError(f"{ref}: only local files and file:// URLs can be compared")
    data = path.read_bytes()
    head = data[:2048].lstrip().lower()
    is_html = path.suffix.lower() in (".html", ".htm", ".xhtml") or head.startswith(
        (b"<!doctype", b"<html", b"<?xml")
    )
    url = path.resolve().as_uri()  # a relative path has no file:// form of its own
    if is_html:
        return Document(str(path), html=data, url=url)
    return Document(str(path), text=data.decode("utf-8", errors="replace"), url=url)


def corpus_documents(path: Path) -> Iterator[Document]:
    """Documents of a JSONL file, or of every HTML/text file under a folder (sorted paths)."""
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES):
            yield load_document(str(file))
        return
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    yield parse_document(line)
                except InputError as exc:
                    print(f"neardup: {path}:{number}: {exc} (skipped)", file=sys.stderr)


def corpus_texts(path: Path, config: NearDupConfig) -> Iterator[str]:
    """The text each document of a corpus is fingerprinted on, as `config` extracts it."""
    from neardup_pipeline.fingerprint import Fingerprinter  # the pipeline: once a page is read

    extractor = Fingerprinter(config.replace(methods=("simhash",)))
    for doc in corpus_documents(path):
        yield extractor.text_of(doc)[0]


class open_input:
    """Context manager over the lines of a file or stdin ('-')."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def __enter__(self) -> Iterator[str]:
        if str(self.path) == "-":
            return iter(sys.stdin)
        self._file = self.path.open(encoding="utf-8", errors="replace")
        return iter(self._file)

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()


class open_output:
    """Context manager over the output file (its folder made if missing) or stdout (none, or
    '-' as for the input)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        if self.path is None or str(self.path) == "-":
            return sys.stdout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        return self._file

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()
