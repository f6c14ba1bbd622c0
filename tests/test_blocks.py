"""The default reading of a page: its running text, block by block (text/blocks.py, the C++ walk's
BLOCKS level), on the real article pages of tests/data/web-pages-multisite."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import lxml.html
import pytest

from neardup_pipeline.text import extract
from neardup_pipeline.text.blocks import CHROME_NAMED, CONTENT_NAMED, Block, keeps, name_kind
from neardup_pipeline.text.chrome import Chrome
from neardup_pipeline.text.extract import html_to_text
from tests.test_textwalk import both_walks

MULTISITE = Path(__file__).parent / "data" / "web-pages-multisite"
ARTICLE_PAGE = "de.creativecommons.org.endlich.html"  # WordPress: article, comments, sidebar
HOST_PAGE = "creativecommons.at.faircoin.html"  # Drupal: menus, teasers, pager, footer
_SPACE = re.compile(r"\s+")


def squeezed(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def hosted_copy(beside: bool = False) -> bytes:
    """The WordPress article inside the Drupal site's page, in place of its own article (or
    `beside` it: an aggregator's page of two articles)."""
    host = lxml.html.fromstring((MULTISITE / HOST_PAGE).read_bytes())
    article = lxml.html.fromstring((MULTISITE / ARTICLE_PAGE).read_bytes()).find(
        ".//*[@id='post-1185']")
    slot = host.find(".//*[@id='node-205']")
    parent = None if slot is None else slot.getparent()
    assert article is not None and slot is not None and parent is not None
    if beside:
        slot.addnext(copy.deepcopy(article))
    else:
        parent.replace(slot, copy.deepcopy(article))
    return bytes(lxml.html.tostring(host, encoding="utf-8"))


def test_class_and_id_words_name_chrome_and_content() -> None:
    assert name_kind("commentlist") == CHROME_NAMED  # a word beginning with a chrome stem
    assert name_kind("share-buttons") == name_kind("newsletterBox") == CHROME_NAMED
    assert name_kind("entry-content") == name_kind("post_body") == CONTENT_NAMED
    assert name_kind("sidebar Blog") == CHROME_NAMED and name_kind("Blog1") == 0
    # Page builders call every box a widget: "elementor-widget-container" holds the article.
    assert name_kind("elementor-widget-container") == 0
    assert name_kind("node node-promoted") == 0  # words, not substrings
    assert name_kind("comment-content") == CHROME_NAMED | CONTENT_NAMED


def test_each_block_is_judged_alone_by_its_words_and_links() -> None:
    prose = Block("x", 40, 2, False)
    linked_prose = Block("x", 40, 14, False)
    menu_item = Block("x", 3, 3, True)
    cell = Block("x", 2, 0, True)
    byline = Block("x", 6, 0, False)
    blocks = [menu_item, prose, byline, cell, linked_prose]
    assert keeps(blocks) == [False, True, False, True, False]
    assert keeps(blocks[::-1]) == keeps(blocks)[::-1]  # reordered, the same decisions


def test_real_articles_keep_their_text_and_lose_their_chrome() -> None:
    labels = json.loads((MULTISITE / "labels.json").read_text(encoding="utf-8"))
    for entry in labels.values():
        text = squeezed(html_to_text((MULTISITE / entry["file"]).read_bytes(),
                                     chromeless=True).text)
        assert all(squeezed(s) in text for s in entry["with"]), entry["file"]
        leaked = [s for s in entry["without"] if squeezed(s) in text]
        # A teaser's summary is running text too: the faircoin page's one of the sidebar's
        # news teasers stays; its menu, teaser titles and pager go.
        assert leaked in ([], ["Nach fast zwei Jahren Arbeit"]), (entry["file"], leaked)


def test_comments_and_the_sidebar_are_not_read() -> None:
    text = html_to_text((MULTISITE / ARTICLE_PAGE).read_bytes(), chromeless=True).text
    assert text.startswith("Endlich wird es spannend: Die NC-Einschränkug")  # its headline
    assert text.endswith("dass dies nicht ernsthaft das letzte Wort sein kann.")  # its last
    assert "Das LG Köln hat einfach keine Ahnung" not in text  # a reader's comment
    assert "Schreibe einen Kommentar" not in text  # the comment form
    whole = html_to_text((MULTISITE / ARTICLE_PAGE).read_bytes()).text
    assert "Das LG Köln hat einfach keine Ahnung" in whole


def test_an_article_under_another_sites_chrome_reads_as_the_same_blocks() -> None:
    """The copy's reading holds the original's whole reading: every block of the article is
    judged alike under either site's chrome. What it adds is the host's sidebar news teasers,
    whose summaries are running text (on this short article: a bag similarity of 0.49, a miss)."""
    original = (MULTISITE / ARTICLE_PAGE).read_bytes()
    own, moved = (html_to_text(page, chromeless=True).text for page in (original, hosted_copy()))
    assert own in moved
    assert "Nach fast zwei Jahren Arbeit" in moved  # a teaser's summary
    assert "Publikationen in Forschung" not in moved  # the teasers' titles (links) go
    host = html_to_text((MULTISITE / HOST_PAGE).read_bytes(), chromeless=True).text
    assert not set(own.split()) & set(host.split()) - {"der", "die", "und", "in", "zu", "CC"} \
        or len(set(own.split()) & set(host.split())) < 0.2 * len(set(own.split()))


def test_a_structure_holds_its_own_blocks_not_a_layout_tables_column() -> None:
    """A short line in a list item or a cell is the page's own list or table; a short line
    three blocks down a layout table's cell is judged as any block (an article under an old
    site's table layout reads as it does elsewhere)."""
    prose = " ".join(f"word{n}" for n in range(20))
    own = (f"<html><body><p>{prose}</p><ul><li><p>a short item</p></li></ul>"
           "<table><tr><td>a short cell</td></tr></table></body></html>")
    text = html_to_text(own, chromeless=True).text
    assert "a short item" in text and "a short cell" in text
    layout = (f"<html><body><table><tr><td><div id='content'><div class='post'><p>{prose}</p>"
              "<p>a short line</p></div></div></td></tr></table></body></html>")
    assert "a short line" not in html_to_text(layout, chromeless=True).text
    both_walks(own.encode(), (Chrome.BLOCKS,))
    both_walks(layout.encode(), (Chrome.BLOCKS,))


def test_a_page_with_little_running_text_is_read_without_its_chrome_instead() -> None:
    cells = "".join(f"<tr><td><a href='/f{i}'>f{i}</a></td><td>x</td></tr>" for i in range(5))
    page = (f"<html><body><nav><a href='/'>Home</a></nav><h1>Functions</h1><table>{cells}"
            "</table></body></html>")
    assert html_to_text(page, chromeless=True).text == (
        "Functions f0 x f1 x f2 x f3 x f4 x")


@pytest.mark.parametrize("name", [ARTICLE_PAGE, HOST_PAGE])
def test_every_walk_reads_the_same_running_text(name: str) -> None:
    both_walks((MULTISITE / name).read_bytes(), (Chrome.BLOCKS,))
    both_walks(hosted_copy(), (Chrome.BLOCKS,))
    page = (MULTISITE / name).read_bytes()
    texts = set()
    for switched_off in ("NATIVE_WALK", "LIBXML2_EVENTS", None):
        with pytest.MonkeyPatch.context() as patch:
            if switched_off is not None:
                patch.setattr(extract, switched_off, False)
            texts.add(html_to_text(page, chromeless=True))
    assert len(texts) == 1
