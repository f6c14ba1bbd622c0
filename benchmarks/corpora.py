"""Loaders for the real corpora in ../shared/data (read in place from their archives).

The tests read small samples of these in tests/data instead; benchmarks need the whole corpora
and stop with a message naming what is missing when ../shared/data is not beside the checkout.
"""

from __future__ import annotations

import csv
import io
import json
import lzma
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from neardup_pipeline.text.canonical import declared_canonical
from tests.corpora import Page, archive_members

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PG_DIR = SHARED_DATA / "postgresql-doc-15-two-releases"
IG_DIR = SHARED_DATA / "debian-installation-guide-9arch"
MULTISITE_DIR = SHARED_DATA / "web-pages-multisite"
MULTISITE_SPLITS = {"cache": "cache-pages.tar.xz", "eval": "eval-pages.tar.xz"}



def _require(folder: Path, *patterns: str) -> list[Path]:
    """The files of `folder` matching each pattern, or SystemExit saying which is missing."""
    found = [next(folder.glob(pattern), None) for pattern in patterns]
    missing = [f"{folder}/{p}" for p, f in zip(patterns, found, strict=True) if f is None]
    if missing:
        raise SystemExit("benchmarks need ../shared/data (see its README): missing "
                         + ", ".join(missing))
    return [f for f in found if f is not None]



@lru_cache(maxsize=2)
def postgresql_pages() -> tuple[Page, ...]:
    """Both releases' pages; group = file name (same page, two releases). PAIRS.csv rows in info."""
    (archive,) = _require(PG_DIR, "*.tar.xz")
    files = dict(archive_members(archive))
    pairs_name = next(name for name in files if name.endswith("PAIRS.csv"))
    rows = {row["file"]: row for row in csv.DictReader(io.StringIO(files[pairs_name].decode()))}
    pages = []
    for name, data in sorted(files.items()):
        parts = name.split("/")
        if not name.endswith(".html") or parts[-1] not in rows:
            continue
        release = parts[-3]
        pages.append(Page(f"{release}/{parts[-1]}", data, parts[-1], rows[parts[-1]]))
    return tuple(pages)


def guide_groups(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], str]:
    """(arch, lang, file) -> gold group: (lang, title_key), as the data's README says (the same
    file name is not always the same section).

    A section titled after its own architecture ("Installing Debian GNU/Linux 12 for amd64" /
    "... for arm64", "5.1. Booting the Installer on 64-bit PC" / "... on 32-bit PC") is a group
    per title: by the data's definition, pages about two architectures are two pages.
    """
    return {(r["arch"], r["lang"], r["file"]): f"{r['lang']}|{r['title_key']}" for r in rows}


@lru_cache(maxsize=2)
def installation_guide_pages() -> tuple[Page, ...]:
    """All 2,193 pages; group = the same section for another architecture (`guide_groups`)."""
    manifest_file, archive = _require(IG_DIR, "MANIFEST.csv", "*.tar.xz")
    rows = list(csv.DictReader(manifest_file.open(encoding="utf-8")))
    manifest = {(row["arch"], row["lang"], row["file"]): row for row in rows}
    groups = guide_groups(rows)
    pages = []
    for name, data in archive_members(archive):
        parts = name.split("/")
        if len(parts) < 3:
            continue
        key = (parts[-3], parts[-2], parts[-1])
        row = manifest.get(key)
        if row is None:
            continue
        pages.append(Page("/".join(key), data, groups[key], row))
    return tuple(sorted(pages, key=lambda p: p.doc_id))


@dataclass(frozen=True)
class LabelledPage:
    """A real page of web-pages-multisite with its labels: snippets of its main content
    (`main_snippets`, the labels' "with") and of its boilerplate (`chrome_snippets`, "without")."""

    doc_id: str  # the file name in its archive
    url: str
    split: str  # "cache" or "eval": the archive it comes from
    html: bytes
    main_snippets: tuple[str, ...]
    chrome_snippets: tuple[str, ...]


@lru_cache(maxsize=4)
def multisite_pages(split: str = "all") -> tuple[LabelledPage, ...]:
    """The labelled pages of one archive ("cache", "eval") or of both ("all"), by file name.

    Pages without a label and labels without a page (the data has both) are left out. A
    page the labels name by file only ("hard::name") takes the URL it declares canonical.
    """
    if split not in (*MULTISITE_SPLITS, "all"):
        raise ValueError(f"split {split!r}: one of {', '.join(MULTISITE_SPLITS)}, all")
    wanted = list(MULTISITE_SPLITS) if split == "all" else [split]
    labels_file, *archives = _require(MULTISITE_DIR, "evaldata.json.xz",
                                      *(MULTISITE_SPLITS[name] for name in wanted))
    labels = json.loads(lzma.decompress(labels_file.read_bytes()))
    by_file = {entry["file"]: (url, entry) for url, entry in labels.items()}
    pages = []
    for name, archive in zip(wanted, archives, strict=True):
        for member, data in archive_members(archive):
            file = member.rsplit("/", 1)[-1]
            if file not in by_file:
                continue
            url, entry = by_file[file]
            if not url.startswith(("http://", "https://")):  # a few labels name no URL
                url = declared_canonical(data, None) or url  # the page's own, if it says
            pages.append(LabelledPage(file, url, name, data, tuple(entry.get("with") or ()),
                                      tuple(entry.get("without") or ())))
    return tuple(sorted(pages, key=lambda p: p.doc_id))
