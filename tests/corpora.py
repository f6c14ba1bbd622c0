"""The real pages in tests/data (samples of ../shared/data, see each folder's SOURCE.txt), and the
word edit that tests and benchmarks/make_variants.py apply to them.

The benchmarks import `Page`, `archive_members` and the edit helpers from here: tests must not
import benchmarks, and the two must not drift apart."""

from __future__ import annotations

import csv
import io
import random
import re
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import lxml.html

DATA = Path(__file__).resolve().parent / "data"
PG_DIR = DATA / "postgresql-doc-15"
IG_DIR = DATA / "debian-installation-guide"

WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Page:
    """One HTML page of a corpus with what its truth file says about it."""

    doc_id: str
    html: bytes
    group: str  # pages of one group are the same document (gold near-duplicates)
    info: dict[str, str]


def archive_members(archive: Path) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                yield member.name, handle.read()


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


@lru_cache(maxsize=1)
def postgresql_pages() -> tuple[Page, ...]:
    """Both releases of the sample's pages, by id "<release>/<file>"; group = the file name (one
    page, two releases); info = its PAIRS.csv row."""
    rows = {row["file"]: row for row in _rows(PG_DIR / "PAIRS.csv")}
    pages = []
    for name, html in archive_members(PG_DIR / "pages.tar.xz"):
        release, file = name.split("/")[-3], name.split("/")[-1]
        if file in rows:
            pages.append(Page(f"{release}/{file}", html, file, rows[file]))
    return tuple(sorted(pages, key=lambda p: p.doc_id))


@lru_cache(maxsize=1)
def installation_guide_pages() -> tuple[Page, ...]:
    """The sample's pages by id "<arch>/<lang>/<file>"; group = (lang, title_key), as the data's
    README says (the same file name is not always the same section); info = its MANIFEST row."""
    manifest = {(r["arch"], r["lang"], r["file"]): r for r in _rows(IG_DIR / "MANIFEST.csv")}
    pages = []
    for name, html in archive_members(IG_DIR / "pages.tar.xz"):
        key = tuple(name.split("/")[-3:])
        row = manifest.get(key)  # type: ignore[arg-type]
        if row is not None:
            pages.append(Page("/".join(key), html, f"{row['lang']}|{row['title_key']}", row))
    return tuple(sorted(pages, key=lambda p: p.doc_id))


# --- make_variants' words edit ------------------------------------------------------------------


def parse(page: Page) -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(page.html)


def serialize(root: lxml.html.HtmlElement) -> str:
    return lxml.html.tostring(root, encoding="unicode", method="html")


def text_nodes(root: lxml.html.HtmlElement) -> list[tuple[lxml.html.HtmlElement, str]]:
    """(element, "text"|"tail") slots holding visible text inside <body>."""
    body = root.find("body")
    slots: list[tuple[lxml.html.HtmlElement, str]] = []
    if body is None:
        return slots
    for el in body.iter():
        if not isinstance(el.tag, str) or el.tag in ("script", "style"):
            continue
        if el.text and el.text.strip():
            slots.append((el, "text"))
        if el is not body and el.tail and el.tail.strip():
            slots.append((el, "tail"))
    return slots


def replace_words(fraction: float) -> Callable[..., None]:
    """An edit replacing `fraction` of the page's words by words drawn from `vocabulary`."""

    def edit(root: lxml.html.HtmlElement, rng: random.Random, *, vocabulary: list[str],
             **_: object) -> None:
        slots = text_nodes(root)
        positions = [
            (n, m.start(), m.end())
            for n, (el, slot) in enumerate(slots)
            for m in WORD.finditer(getattr(el, slot))
        ]
        chosen = rng.sample(positions, max(1, round(fraction * len(positions))))
        by_slot: dict[int, list[tuple[int, int]]] = {}
        for n, start, end in chosen:
            by_slot.setdefault(n, []).append((start, end))
        for n, spans in by_slot.items():
            el, slot = slots[n]
            text = getattr(el, slot)
            for start, end in sorted(spans, reverse=True):
                text = text[:start] + rng.choice(vocabulary) + text[end:]
            setattr(el, slot, text)

    return edit
