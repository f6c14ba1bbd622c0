"""Write the real-page samples in tests/data from ../shared/data (seeded, byte-for-byte pages).

The suite reads only the samples, so it runs on a clone with nothing beside it; this script is
how they were made, and lives with the other readers of ../shared/data. Usage (from the
repository root):
    python benchmarks/make_test_samples.py [SHARED_DATA]
"""

from __future__ import annotations

import csv
import io
import random
import shutil
import sys
import tarfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
HERE = REPOSITORY / "tests" / "data"  # where the samples go
SEED = 25

# Pages the tests name: menus (index, sql-commands, admin), the glossary's nested links, template
# twins of the bag and title-subject checks.
PG_NAMED = (
    "admin.html", "app-clusterdb.html", "app-dropdb.html", "app-reindexdb.html",
    "contrib-dblink-build-sql-insert.html", "contrib-dblink-build-sql-update.html",
    "glossary.html", "index.html", "infoschema-attributes.html", "infoschema-domains.html",
    "reference.html", "sql-commands.html", "sql-commit.html", "sql-dropforeigntable.html",
    "sql-droptable.html", "sql-droptsdictionary.html", "sql-droptsparser.html",
    "sql-droptstemplate.html", "sql-end.html",
)
PG_EDITED_MAX_WORDS = 3000  # every edited page but the longest release notes
# Every page tests/test_chrome.py's `manual()` reads (15.18, at most 600 words of text): its
# seeded draws then pick the very pages they pick from the whole manual.
PG_SHORT_WORDS = 600
GUIDE_NAMED = ("ch04s03.html", "ch05s01.html", "pr01.html")  # titled after their architecture
GUIDE_OTHER_LANGUAGE_FILES = 24


def _archive(target: Path, root: Path, members: list[str]) -> None:
    """A tar.xz of `members` (paths under `root`) with no owner or time: the same bytes again."""

    def anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
        for member in members:
            tar.add(root / member, arcname=member, filter=anonymous)
    target.write_bytes(buffer.getvalue())


def _write_csv(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def postgresql(shared: Path, unpacked: Path) -> None:
    """Named pages, every edited page up to PG_EDITED_MAX_WORDS words and every page of at most
    PG_SHORT_WORDS words of text in 15.18, each in both releases."""
    from neardup_pipeline.text.extract import html_to_text

    source = shared / "postgresql-doc-15-two-releases"
    with tarfile.open(next(source.glob("*.tar.xz")), "r:xz") as tar:
        tar.extractall(unpacked, filter="data")
    with (source / "PAIRS.csv").open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields, rows = list(reader.fieldnames or ()), list(reader)
    edited = {r["file"] for r in rows
              if r["text_identical"] == "0" and int(r["words_15.18"]) <= PG_EDITED_MAX_WORDS}
    html = unpacked / "pg" / "15.18" / "html"
    short = {r["file"] for r in rows
             if len(html_to_text((html / r["file"]).read_bytes()).text.split()) <= PG_SHORT_WORDS}
    names = sorted({*PG_NAMED, *edited, *short})
    target = HERE / "postgresql-doc-15"
    target.mkdir(exist_ok=True)
    # one page's two releases side by side: xz stores the second as a few edits of the first
    _archive(target / "pages.tar.xz", unpacked,
             [f"pg/{release}/html/{name}" for name in names for release in ("15.18", "15.20")])
    _write_csv(target / "PAIRS.csv", fields, [r for r in rows if r["file"] in names])
    shutil.copyfile(source / "copyright.debian", target / "copyright.debian")


def installation_guide(shared: Path, unpacked: Path) -> None:
    """Every English page (9 architectures) and, in Russian and Catalan, GUIDE_NAMED and
    GUIDE_OTHER_LANGUAGE_FILES other file names, for every architecture."""
    source = shared / "debian-installation-guide-9arch"
    with tarfile.open(next(source.glob("*.tar.xz")), "r:xz") as tar:
        tar.extractall(unpacked, filter="data")
    with (source / "MANIFEST.csv").open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields, rows = list(reader.fieldnames or ()), list(reader)
    files = sorted({r["file"] for r in rows} - set(GUIDE_NAMED))
    other = {*GUIDE_NAMED, *random.Random(SEED).sample(files, GUIDE_OTHER_LANGUAGE_FILES)}
    kept = sorted((r for r in rows if r["lang"] == "en" or r["file"] in other),
                  key=lambda r: (r["lang"], r["file"], r["arch"]))
    target = HERE / "debian-installation-guide"
    target.mkdir(exist_ok=True)
    _archive(target / "pages.tar.xz", unpacked,
             [f"ig/{r['arch']}/{r['lang']}/{r['file']}" for r in kept])
    _write_csv(target / "MANIFEST.csv", fields, kept)
    shutil.copyfile(source / "copyright.debian", target / "copyright.debian")


def main(argv: list[str]) -> int:
    import tempfile

    shared = Path(argv[0]) if argv else REPOSITORY.parent / "shared" / "data"
    with tempfile.TemporaryDirectory() as unpacked:
        postgresql(shared, Path(unpacked))
        installation_guide(shared, Path(unpacked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
