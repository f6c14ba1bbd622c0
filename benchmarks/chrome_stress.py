"""Distinct pages under one site's menu: how many (false) near-duplicate pairs each text rule makes.

Usage: python benchmarks/chrome_stress.py [--links 0 40 120 300] [--content whole chromeless]
                                          [--tags nav div] [--max-words 1500]

Pages: the PostgreSQL 15.18 manual of ../shared/data, those with at most --max-words words of
their own (970 at 1,500), all distinct. Each is given the same menu: a list of --links link texts
taken from the manual's own tables of contents (index, SQL commands, administration), inside a
<nav> or inside plain <div>s, and a footer line. Every page goes through Deduplicator (default
methods, memory index) with the given `content`; every pair in a predicted cluster is false.
Printed: pairs, and per length band how many pages are in a false pair.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import lxml.html

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import postgresql_pages
from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.text.extract import html_to_text

MENU_SOURCES = ("index.html", "reference.html", "sql-commands.html", "functions.html",
                "admin.html")
FOOTER = ("Copyright 1996-2026 The PostgreSQL Global Development Group. Privacy policy, code of"
          " conduct, about, contact, donate, report a documentation bug, mailing lists.")
BANDS = (100, 200, 400, 800, 1500)


def menu_labels(pages: list[tuple[str, str]], links: int) -> list[str]:
    labels: list[str] = []
    for doc_id, html in pages:
        if doc_id.endswith(MENU_SOURCES):
            root = lxml.html.document_fromstring(html.encode())
            labels += [a.text_content().strip() for a in root.iter("a") if a.text_content().strip()]
    return labels[:links]


def under_menu(html: str, labels: list[str], tag: str) -> str:
    items = "".join(f"<li><a href='#'>{label}</a></li>" for label in labels)
    footer_tag = "footer" if tag == "nav" else tag
    menu = f"<{tag}><ul>{items}</ul></{tag}>" if labels else ""
    footer = f"<{footer_tag}><p>{FOOTER}</p></{footer_tag}>" if labels else ""
    html = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + menu, html, count=1)
    return html.replace("</body>", footer + "</body>", 1)


def band(words: int) -> str:
    return next(f"<{limit}" for limit in BANDS if words < limit or limit == BANDS[-1])


def false_pairs(docs: list[tuple[str, str, int]], content: str) -> tuple[int, Counter[str]]:
    dedup = Deduplicator(MemoryIndex(), NearDupConfig().replace(content=content))  # type: ignore[arg-type]
    clusters: dict[str, list[str]] = defaultdict(list)
    for doc_id, html, _ in docs:
        clusters[dedup.process(Document(doc_id, html=html)).cluster or doc_id].append(doc_id)
    words = {doc_id: n for doc_id, _, n in docs}
    in_pair = {d for members in clusters.values() if len(members) > 1 for d in members}
    pairs = sum(1 for members in clusters.values() for _ in itertools.combinations(members, 2))
    return pairs, Counter(band(words[d]) for d in in_pair)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, nargs="+", default=[0, 40, 120, 300])
    parser.add_argument("--content", nargs="+", default=["whole", "chromeless"])
    parser.add_argument("--tags", nargs="+", default=["nav", "div"])
    parser.add_argument("--max-words", type=int, default=1500)
    args = parser.parse_args()
    pages = [(p.doc_id, p.html.decode() if isinstance(p.html, bytes) else p.html)
             for p in postgresql_pages() if "15.18" in p.doc_id]
    own = {doc_id: len(html_to_text(html).text.split()) for doc_id, html in pages}
    chosen = [(d, h) for d, h in pages if own[d] <= args.max_words]
    totals = Counter(band(own[d]) for d, _ in chosen)
    print(f"{len(chosen)} distinct pages; pages per band: "
          + ", ".join(f"{b} words {totals[b]}" for b in (f"<{n}" for n in BANDS)))
    print("\n| menu | tag | content | menu words | false pairs "
          "| pages in a false pair, by own words |")
    print("|---|---|---|---|---|---|")
    for links in args.links:
        labels = menu_labels(pages, links)
        for tag in args.tags if links else args.tags[:1]:
            docs = [(d, under_menu(h, labels, tag), own[d]) for d, h in chosen]
            added = len(html_to_text(docs[0][1]).text.split()) - own[docs[0][0]]
            for content in args.content:
                pairs, bands = false_pairs(docs, content)
                spread = ", ".join(f"{b}: {bands[b]}/{totals[b]}" for b in (f"<{n}" for n in BANDS))
                where = tag if links else "-"
                print(f"| {links} links | {where} | {content} | {added} | {pairs:,} | {spread} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
