"""Site chrome out of the text (content "chromeless", the default): landmarks and link-only blocks.

Without it, a site whose menu outweighs a short page's own words makes every such page a
near-duplicate of every other. Measured when written, 970 distinct PostgreSQL pages (up to 1,500
words) under one menu of 40-300 links, default methods: whole page 24,787-453,628 false pairs,
chromeless 1 (menu in <nav>) or 5 (menu in plain <div>s; on pages with under 50 words of their
own only the link-only blocks before the title go); 1 with no menu at all.
(benchmarks/chrome_stress.py)
"""

from __future__ import annotations

import itertools
import random
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.text import extract
from neardup_pipeline.text.chrome import Chrome
from neardup_pipeline.text.extract import MIN_CHROMELESS_WORDS, html_to_text
from tests.corpora import postgresql_pages
from tests.crawl_harness import crawl, crawl_settings, describe, serve_pages
from tests.documents import ARTICLE

ARTICLE_HTML = "".join(f"<p>{s.strip()}.</p>" for s in ARTICLE.split(". ") if s.strip())


def page(body: str) -> str:
    return f"<html><head><title>T</title></head><body>{body}</body></html>"


def chromeless(html: str) -> str:
    """The page without its chrome: the levels the default falls back to when a page has little
    running text (text/blocks.py; tests/test_blocks.py tests the running text itself)."""
    levels = extract._CHROMELESS_LEVELS[1:]
    assert levels[0] == Chrome.LINKS
    return extract._tree_text_at(html.encode(), levels, "role" in html)[1]


def test_landmarks_are_chrome_but_an_articles_own_header_and_footer_are_not() -> None:
    html = page(
        "<header><p>Example Media: news since 1901</p></header>"
        "<nav>Sections: politics sport weather</nav>"
        "<div role='navigation'>Jump to a topic of the day</div>"
        "<div role='Banner '>The banner of the site</div>"
        f"<article><header><h1>The article's own title</h1></header>{ARTICLE_HTML}"
        "<footer>Filed under databases by the author</footer></article>"
        "<aside>Popular this week: ten tips</aside>"
        "<footer><p>Copyright 2026 Example Media</p></footer>"
    )
    text = chromeless(html)
    for chrome in ("news since 1901", "politics", "Jump to", "banner of the site", "ten tips",
                   "Copyright"):
        assert chrome not in text
    assert "The article's own title" in text and "Filed under databases" in text
    assert "Charikar's simhash maps a document" in text
    assert "politics" in html_to_text(html).text  # whole page: everything


def test_link_only_blocks_are_chrome_and_text_with_links_is_content() -> None:
    menu = "<div class='menu'>" + "".join(
        f"<div><a href='/s{i}'>Section {i} of the site</a></div>" for i in range(30)
    ) + "</div>"
    crumbs = "<div><a href='/'>Home</a> &gt; <a href='/db'>Databases</a> » <a>Hashing</a></div>"
    row = "<p><a>Modules</a> | <a>Directives</a> | <a>FAQ</a> | <a>Glossary</a></p>"
    linked = "<p>Read <a href='/c'>the original paper by Charikar</a> before this one.</p>"
    text = chromeless(page(menu + crumbs + row + ARTICLE_HTML + linked))
    assert "Section 12" not in text and "Home" not in text and "Directives" not in text
    assert "Read the original paper by Charikar before this one." in text
    assert "Charikar's simhash maps a document" in text


def test_text_after_removed_chrome_stays_and_does_not_join_its_neighbour() -> None:
    html = page("<div>before<nav><a>menu</a></nav>after, and " + ARTICLE_HTML + "</div>")
    text = chromeless(html)
    assert text.startswith("before after, and") and "menu" not in text


def test_a_table_of_contents_is_the_pages_content() -> None:
    """Link-only blocks that leave under MIN_CHROMELESS_WORDS words were the content (a table of
    contents, an index page): then only the landmarks go."""
    toc = "<ul>" + "".join(f"<li><a href='/c{i}'>Chapter {i}: hashing for duplicates</a></li>"
                           for i in range(20)) + "</ul>"
    text = chromeless(page("<nav><a>Home</a> <a>Search</a></nav><h1>Contents</h1>" + toc))
    assert "Chapter 19: hashing for duplicates" in text and "Search" not in text
    assert len(text.split()) > MIN_CHROMELESS_WORDS


def test_on_a_short_page_the_link_only_blocks_before_its_title_are_the_menu() -> None:
    menu = "".join(f"<div><a href='/s{i}'>Section {i} of the site</a></div>" for i in range(30))
    logo = "<h1><a href='/'>Example Media</a></h1>"  # a logo in an h1 link is no title
    toc = "<ul>" + "".join(f"<li><a href='/c{i}'>Chapter {i}</a></li>" for i in range(5)) + "</ul>"
    text = chromeless(page(logo + menu + "<h1>Contents</h1>" + toc + "<div><a>Next</a></div>"))
    assert text == "Example Media Contents Chapter 0 Chapter 1 Chapter 2 Chapter 3 Chapter 4 Next"
    assert chromeless(page(menu + "<h2>Moved</h2><p>This page has moved.</p>")) == (
        "Moved This page has moved."
    )
    no_title = chromeless(page(menu + "<p>This page has moved.</p>"))
    assert "Section 29" in no_title  # no title to tell a menu from a content list: all stays


def test_a_page_that_marks_its_main_content_keeps_the_links_inside_it_only() -> None:
    """`main`, `article` or role main says where the content is: link-only blocks inside stay
    (a table of contents), those outside go however little is left (no floor to fall back on)."""
    menu = "<div class='menu'>" + "".join(f"<div><a href='/s{i}'>Section {i} of the site</a></div>"
                                          for i in range(30)) + "</div>"
    toc = "<ul>" + "".join(f"<li><a href='/c{i}'>Chapter {i}</a></li>" for i in range(5)) + "</ul>"
    for region in ("<main>{}</main>", "<article>{}</article>", "<div role='main'>{}</div>"):
        text = chromeless(page(menu + region.format("<h1>Contents</h1>" + toc)))
        assert text == "Contents Chapter 0 Chapter 1 Chapter 2 Chapter 3 Chapter 4"
        short = chromeless(page(menu + region.format("<p>This page has moved.</p>")))
        assert short == "This page has moved."
    all_links = page(menu + "<main>" + toc + "</main>")
    assert "Chapter 4" in chromeless(all_links) and "Section 1 " not in chromeless(all_links)


def test_a_page_that_is_all_chrome_keeps_its_whole_text() -> None:
    html = page("<nav><ul><li><a>Home</a></li><li><a>About us</a></li></ul></nav>")
    assert chromeless(html) == "Home About us" == html_to_text(html).text
    assert chromeless(page("")) == ""


def test_nested_link_lists_cost_linear_time() -> None:
    """Each block is judged by reading its text; 1,500 nested blocks around 40,000 links would
    read the same text 1,500 times. The reading is capped at four times the page's size."""
    links = "".join(f"<a href='/{i}'>link number {i}</a> " for i in range(40_000))
    html = page("<div>" * 1500 + links + "</div>" * 1500)
    started = time.perf_counter()
    text = chromeless(html)
    assert time.perf_counter() - started < 20
    assert "link number 39999" in text  # the blocks past the cap stay


def test_default_content_is_chromeless_and_is_part_of_the_index_parameters() -> None:
    from neardup_pipeline import Fingerprinter

    assert NearDupConfig().text.content == "chromeless"
    assert Fingerprinter(NearDupConfig()).params()["content"] == "chromeless"
    assert Fingerprinter(NearDupConfig().replace(content="whole")).params()["content"] == "whole"


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _is_subsequence(part: str, whole: str) -> bool:
    letters = iter(whole)
    return all(letter in letters for letter in part)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "<nav>", "</nav>", "<aside>", "</aside>", "<header>", "</header>", "<footer>", "</footer>",
    "<article>", "</article>", "<div>", "</div>", "<p>", "</p>", "<ul>", "</ul>", "<li>",
    "</li>", "<a href='x'>", "</a>", "<span>", "</span>", "<div role='navigation'>", " | ",
    " words of text ", "link", "&gt;", "<td>", "<table>", "</table>", "<br>",
]), max_size=60))
def test_chromeless_text_only_removes_never_adds_or_reorders(parts: list[str]) -> None:
    html = page("".join(parts))
    whole, lean = html_to_text(html).text, chromeless(html)
    assert _is_subsequence(_squeezed(lean), _squeezed(whole))


# --- real pages -----------------------------------------------------------------------------

MENU_LABELS = 120  # link texts of the manual's own tables of contents: a mega-menu of ~450 words


@pytest.fixture(scope="module")
def manual() -> list[tuple[str, str]]:
    """(id, html) of 15.18's pages with at most 600 words, and a menu made of the manual's own
    link texts."""
    pages = [p for p in postgresql_pages() if "15.18" in p.doc_id]
    return [(p.doc_id, p.html.decode() if isinstance(p.html, bytes) else p.html) for p in pages
            if len(html_to_text(p.html).text.split()) <= 600]


def _menu_labels(pages: list[tuple[str, str]]) -> list[str]:
    import lxml.html

    labels: list[str] = []
    for doc_id, html in pages:
        if doc_id.endswith(("index.html", "sql-commands.html", "admin.html")):
            labels += [a.text_content().strip()
                       for a in lxml.html.document_fromstring(html.encode()).iter("a")
                       if a.text_content().strip()]
    return labels[:MENU_LABELS]


def _under_menu(html: str, labels: list[str], tag: str) -> str:
    menu = f"<{tag}><ul>" + "".join(f"<li><a href='#'>{label}</a></li>" for label in labels)
    menu += f"</ul></{tag}>"
    return re.sub(r"(<body[^>]*>)", lambda found: found.group(1) + menu, html, count=1)


def _false_pairs(docs: list[tuple[str, str]], content: str) -> int:
    dedup = Deduplicator(MemoryIndex(), NearDupConfig().replace(content=content))  # type: ignore[arg-type]
    clusters: dict[str, list[str]] = defaultdict(list)
    for doc_id, html in docs:
        verdict = dedup.process(Document(doc_id, html=html))
        clusters[verdict.cluster or doc_id].append(doc_id)
    return sum(len(list(itertools.combinations(members, 2))) for members in clusters.values())


def test_distinct_short_pages_under_one_big_menu_do_not_collide(
    manual: list[tuple[str, str]],
) -> None:
    labels = _menu_labels(manual)
    sample = random.Random(20261201).sample(manual, 150)
    in_nav = [(d, _under_menu(h, labels, "nav")) for d, h in sample]
    in_divs = [(d, _under_menu(h, labels, "div")) for d, h in sample]
    # what the menu alone does to the whole text: it folds distinct pages together
    assert _false_pairs(in_nav, "whole") > 1
    assert _false_pairs(in_nav, "chromeless") <= 1
    # A menu of plain <div>s: on pages with under MIN_CHROMELESS_WORDS words of their own, the
    # link-only blocks after the title could be content and stay; the menu comes before it.
    assert _false_pairs(in_divs, "chromeless") <= 5


@pytest.mark.parametrize("mirror_tag", ["nav", "div"])
def test_the_same_page_under_another_sites_menu_is_still_a_near_duplicate(
    manual: list[tuple[str, str]], mirror_tag: str,
) -> None:
    """A mirror with its own menu: found whenever its menu is chrome to the rules, a <nav>
    always, plain <div>s on a page with words enough of its own."""
    labels = _menu_labels(manual)
    pages = manual if mirror_tag == "nav" else [
        (d, h) for d, h in manual if len(html_to_text(h).text.split()) >= 2 * MIN_CHROMELESS_WORDS
    ]
    sample = random.Random(7).sample(pages, 40)
    dedup = Deduplicator(MemoryIndex(), NearDupConfig())
    for doc_id, html in sample:
        dedup.process(Document(doc_id, html=_under_menu(html, labels[:60], "nav")))
    found = sum(
        dedup.process(Document(f"mirror:{doc_id}", html=_under_menu(html, labels[60:], mirror_tag)))
        .duplicate_of == doc_id
        for doc_id, html in sample
    )
    assert found == len(sample)


# --- a real crawl -------------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_crawl_of_a_site_with_a_big_menu_drops_the_mirrors_only(
    manual: list[tuple[str, str]], tmp_path: Path,
) -> None:
    """24 distinct short pages of one site under its menu, and 3 of them again under another
    site's menu: the default drops exactly the 3, and so does the whole page's text (with the
    title-subject check and without it: word order keeps these pages apart)."""
    labels = _menu_labels(manual)
    lengths = {d: len(html_to_text(h).text.split()) for d, h in manual}
    chosen = random.Random(3).sample([(d, h) for d, h in manual if 120 <= lengths[d] <= 400], 24)
    pages: dict[str, tuple[str, bytes]] = {}
    for number, (_, html) in enumerate(chosen):
        pages[f"/p{number}.html"] = ("text/html", _under_menu(html, labels[:80], "nav").encode())
    for number, (_, html) in enumerate(chosen[:3]):
        other_site = _under_menu(html, labels[40:], "div")
        pages[f"/mirror{number}.html"] = ("text/html", other_site.encode())
    index = "".join(f"<a href='{path}'>{path}</a> " for path in pages)
    pages["/index.html"] = ("text/html", page(index).encode())
    expected = {f"/mirror{n}.html": f"/p{n}.html" for n in range(3)}
    with serve_pages(pages) as base:
        result = await crawl(base, crawl_settings(f"sqlite:{tmp_path / 'c.sqlite'}",
                                                  NEARDUP_METHODS=["auto"]))
        assert {path: result.path(str(exc.verdict.duplicate_of))  # type: ignore[attr-defined]
                for path, exc in result.dropped.items()} == expected, describe(result)
        whole = await crawl(base, crawl_settings(f"sqlite:{tmp_path / 'w.sqlite'}",
                                                 NEARDUP_METHODS=["auto"], NEARDUP_CONTENT="whole",
                                                 NEARDUP_BAG_SUBJECT_MARGIN=0))
        assert set(whole.dropped) == set(expected), describe(whole)
        titled = await crawl(base, crawl_settings(
            f"sqlite:{tmp_path / 't.sqlite'}", NEARDUP_METHODS=["auto"], NEARDUP_CONTENT="whole"))
        assert set(titled.dropped) == set(expected), describe(titled)
