"""Main-content extraction: chrome removed, the chromeless text kept when too little is found.

Real pages: two article pages of two sites (tests/data/web-pages-multisite, with labelled snippets
of their article and their chrome) and the demo site.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import lxml.html

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.index.memory import MemoryIndex
from neardup_pipeline.scrapy.crawl import DEMO_SITE
from neardup_pipeline.text.content import MAIN_READER, main_content_text
from tests.documents import ARTICLE

MULTISITE = Path(__file__).parent / "data" / "web-pages-multisite"
ARTICLE_PAGE = "de.creativecommons.org.endlich.html"  # WordPress: article, comments, sidebar
HOST_PAGE = "creativecommons.at.faircoin.html"  # Drupal: menus, teasers, pager, footer
DEMO_MENU = ("A Brief History of PostgreSQL", "Asynchronous Commit", "Table Basics")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")

CHROME = (
    "<header><nav><ul>" + "".join(f"<li><a href='/s{i}'>Section {i} of the site</a></li>"
                                  for i in range(30)) + "</ul></nav></header>"
    "<aside><h3>Popular</h3><ul><li><a href='/x'>Ten tips for your garden</a></li>"
    "<li><a href='/y'>Weather this weekend</a></li></ul></aside>"
)
FOOTER = "<footer><p>Copyright 2026 Example Media. All rights reserved. Contact us.</p></footer>"


def page(body: str) -> str:
    return f"<html><head><title>T</title></head><body>{body}</body></html>"


def squeezed(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def word_jaccard(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / len(wa | wb)


def test_chrome_is_removed_from_an_article() -> None:
    paragraphs = "".join(f"<p>{s.strip()}.</p>" for s in ARTICLE[: len(ARTICLE) // 3].split(". "))
    extracted = main_content_text(page(CHROME + f"<article>{paragraphs}</article>" + FOOTER))
    assert extracted.parser == MAIN_READER
    assert "Section 12" not in extracted.text and "All rights reserved" not in extracted.text
    assert "Charikar's simhash maps a document" in extracted.text


def test_real_pages_keep_their_article_and_lose_their_chrome() -> None:
    labels = json.loads((MULTISITE / "labels.json").read_text(encoding="utf-8"))
    for entry in labels.values():
        extracted = main_content_text((MULTISITE / entry["file"]).read_bytes())
        text = squeezed(extracted.text)
        assert extracted.parser == MAIN_READER, entry["file"]
        assert all(squeezed(s) in text for s in entry["with"]), entry["file"]
        assert not any(squeezed(s) in text for s in entry["without"]), entry["file"]


def test_an_article_under_another_sites_chrome_reads_as_the_article() -> None:
    """One site's article placed into another site's page (its menus, teasers and footer kept):
    the main content of both pages is the article, so the copy is a near-duplicate."""
    original = (MULTISITE / ARTICLE_PAGE).read_bytes()
    host = lxml.html.fromstring((MULTISITE / HOST_PAGE).read_bytes())
    article = lxml.html.fromstring(original).find(".//*[@id='post-1185']")
    slot = host.find(".//*[@id='node-205']")  # the host's own article
    parent = None if slot is None else slot.getparent()
    assert article is not None and slot is not None and parent is not None
    parent.replace(slot, copy.deepcopy(article))
    hosted = lxml.html.tostring(host, encoding="utf-8")

    own, moved = main_content_text(original), main_content_text(hosted)
    assert own.parser == moved.parser == MAIN_READER
    assert word_jaccard(own.text, moved.text) > 0.9
    assert "Publikationen in Forschung" not in moved.text  # the host's sidebar teaser
    dedup = Deduplicator(MemoryIndex(), NearDupConfig().replace(content="main"))
    dedup.process(Document("original", original))
    assert dedup.process(Document("hosted", hosted)).duplicate_of == "original"


def test_demo_site_articles_are_read_without_their_menu_and_stay_apart() -> None:
    dedup = Deduplicator(MemoryIndex(), NearDupConfig().replace(content="main"))
    verdicts = {}
    for path in sorted(DEMO_SITE.glob("articles/*.html")):
        extracted = main_content_text(path.read_bytes())
        assert extracted.parser == MAIN_READER, path.name
        heading = lxml.html.fromstring(path.read_bytes()).findtext(".//h1") or ""
        assert extracted.text.startswith(squeezed(heading)), path.name
        assert not any(item in extracted.text for item in DEMO_MENU if item != heading)
        verdicts[path.name] = dedup.process(Document(path.name, path.read_bytes())).duplicate_of
    pairs = {frozenset((page, found)) for page, found in verdicts.items() if found is not None}
    assert pairs == {frozenset(("transactions.html", "transactions-revised.html"))}
    copied = (DEMO_SITE / "copy" / "async-commit.html").read_bytes()
    assert dedup.process(Document("copy", copied)).duplicate_of == "async-commit.html"
    mirrored = (DEMO_SITE / "mirror" / "history.html").read_bytes()  # another site's chrome
    assert dedup.process(Document("mirror", mirrored)).duplicate_of == "history.html"


def test_short_or_empty_pages_fall_back_to_the_chromeless_text() -> None:
    assert main_content_text(page("<p>Only a few words here.</p>")).text == "Only a few words here."
    # A long page whose "main content" is one short block keeps all of its text.
    many = "".join(f"<div><span>item {i} with some words of text</span></div>" for i in range(80))
    lopsided = main_content_text(page(many + "<article><p>A lone short paragraph.</p></article>"))
    assert "item 79" in lopsided.text
    assert main_content_text(page("")).text == ""
    nested = main_content_text("<div>" * 5000 + "deep words" + "</div>" * 5000)
    assert "deep words" in nested.text


def test_bytes_are_decoded_first() -> None:
    body = "<article><p>" + "Привет мир, это длинный текст о базах данных. " * 30 + "</p></article>"
    html = ('<meta charset="windows-1251">' + page(CHROME + body)).encode("cp1251")
    extracted = main_content_text(html)
    assert extracted.parser == MAIN_READER
    assert extracted.text.startswith("Привет мир") and "Section 12" not in extracted.text


def test_a_short_article_under_a_big_menu_falls_back_to_its_chromeless_text() -> None:
    """"Too little" is measured against the page without its chrome: against the whole page, a
    short article under a menu of 30 links fell back to the menu and all."""
    own = "<p>Only a few words of our own here.</p>"
    extracted = main_content_text(page(CHROME + own + FOOTER))
    assert extracted.text == "Only a few words of our own here."
