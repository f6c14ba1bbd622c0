"""Main-content extraction: chrome removed, the whole page kept when extraction finds too little."""

from __future__ import annotations

from neardup_pipeline.text.content import main_content_text
from tests.documents import ARTICLE

CHROME = (
    "<header><nav><ul>" + "".join(f"<li><a href='/s{i}'>Section {i} of the site</a></li>"
                                  for i in range(30)) + "</ul></nav></header>"
    "<aside><h3>Popular</h3><ul><li><a href='/x'>Ten tips for your garden</a></li>"
    "<li><a href='/y'>Weather this weekend</a></li></ul></aside>"
)
FOOTER = "<footer><p>Copyright 2026 Example Media. All rights reserved. Contact us.</p></footer>"


def page(body: str) -> str:
    return f"<html><head><title>T</title></head><body>{body}</body></html>"


def test_chrome_is_removed_from_an_article() -> None:
    paragraphs = "".join(f"<p>{s.strip()}.</p>" for s in ARTICLE[: len(ARTICLE) // 3].split(". "))
    extracted = main_content_text(page(CHROME + f"<article>{paragraphs}</article>" + FOOTER))
    assert extracted.parser == "trafilatura"
    assert "Section 12" not in extracted.text and "All rights reserved" not in extracted.text
    assert "Charikar's simhash maps a document" in extracted.text


def test_short_or_empty_pages_fall_back_to_the_whole_text() -> None:
    assert main_content_text(page("<p>Only a few words here.</p>")).text == "Only a few words here."
    # A long page whose "main content" is one short block keeps all of its text.
    many = "".join(f"<div><span>item {i} with some words of text</span></div>" for i in range(80))
    lopsided = main_content_text(page(many + "<article><p>A lone short paragraph.</p></article>"))
    assert "item 79" in lopsided.text
    assert main_content_text(page("")).text == ""
    nested = main_content_text("<div>" * 5000 + "deep words" + "</div>" * 5000)
    assert "deep words" in nested.text


def test_bytes_are_decoded_first() -> None:
    body = "<p>" + "Привет мир, это длинный текст о базах данных. " * 30 + "</p>"
    html = ('<meta charset="windows-1251">' + page(body)).encode("cp1251")
    assert "Привет мир" in main_content_text(html).text


def test_a_short_article_under_a_big_menu_falls_back_to_its_chromeless_text() -> None:
    """"Too little" is measured against the page without its chrome: against the whole page, a
    short article under a menu of 30 links fell back to the menu and all."""
    own = "<p>Only a few words of our own here.</p>"
    extracted = main_content_text(page(CHROME + own + FOOTER))
    assert extracted.text == "Only a few words of our own here."
