"""DOCS/GOLD files of the natural near-duplicates in ../shared/data, for `neardup eval`.

- postgresql: the 15.18 and 15.20 manuals; group = page name (same page, two releases).
- guide-en|ru|ca: the installation guide per language, 9 architectures; group = the same
  section rendered for another architecture: MANIFEST.csv's (lang, title_key), as the data's
  README defines it (`corpora.guide_groups`).
Usage: python benchmarks/natural_gold.py OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import Page, installation_guide_pages, postgresql_pages


def write(out: Path, name: str, pages: Sequence[Page]) -> None:
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "DOCS.jsonl").open("w", encoding="utf-8") as docs, \
            (folder / "GOLD.jsonl").open("w", encoding="utf-8") as gold:
        for page in pages:
            html = page.html.decode("utf-8", errors="replace")
            docs.write(json.dumps({"id": page.doc_id, "html": html, "url": page.doc_id}) + "\n")
            gold.write(json.dumps({"id": page.doc_id, "group": page.group, "kind": None}) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="folder for one DOCS/GOLD pair per corpus")
    out = parser.parse_args(argv).out
    write(out, "postgresql", postgresql_pages())
    guide = installation_guide_pages()
    for lang in ("en", "ru", "ca"):
        write(out, f"guide-{lang}", [p for p in guide if p.info["lang"] == lang])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
