"""The real pages the batch tests judge (tests/data), as `dedup` input rows, and how to read a
batch job's output back."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.corpora import DATA, installation_guide_pages, postgresql_pages


def corpus_rows(groups: int = 60, guide_step: int = 12) -> list[dict[str, Any]]:
    """Both releases of `groups` PostgreSQL pages, every `guide_step`-th page of the Debian
    guide (9 architectures of one section are copies), the two multisite pages and the three
    legal texts, sorted by id; each page its own URL, a few declaring another canonical."""
    pg = postgresql_pages()
    chosen = sorted({p.group for p in pg})[:groups]
    guide = installation_guide_pages()[::guide_step]
    pages = [p for p in pg if p.group in set(chosen)] + list(guide)
    rows: list[dict[str, Any]] = [
        {"id": p.doc_id, "url": f"https://docs.example/{p.doc_id}",
         "html": p.html.decode("utf-8", "replace")} for p in pages]
    for name in ("creativecommons.at.faircoin.html", "de.creativecommons.org.endlich.html"):
        html = (DATA / "web-pages-multisite" / name).read_text(encoding="utf-8", errors="replace")
        rows.append({"id": name, "url": f"https://{name}", "html": html})
    for text in sorted((DATA / "textreuse-legal").glob("*.txt")):
        rows.append({"id": text.name, "text": text.read_text(encoding="utf-8")})
    return sorted(rows, key=lambda r: str(r["id"]))


def shuffled(rows: list[dict[str, Any]], seed: int = 48) -> list[dict[str, Any]]:
    out = list(rows)
    random.Random(seed).shuffle(out)
    return out


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def read_lines(folder: Path) -> list[dict[str, Any]]:
    """A JSONL output folder's records, in part-file order (the input's order)."""
    return [json.loads(line) for part in sorted(folder.glob("part-*"))
            for line in part.read_text(encoding="utf-8").splitlines()]


def partition(records: list[dict[str, Any]]) -> set[frozenset[str]]:
    """The clusters of an output, as sets of ids (the repeated lines left out)."""
    clusters: dict[str, set[str]] = defaultdict(set)
    for record in records:
        if record.get("status") != "repeated":
            clusters[record["cluster"]].add(record["id"])
    return {frozenset(members) for members in clusters.values()}


def canonicals(records: list[dict[str, Any]]) -> dict[str, str]:
    return {r["id"]: r["cluster"] for r in records}
