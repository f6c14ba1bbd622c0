"""The C++ walk of lxml's tree (`_textwalk`) gives the pure-Python walk's text, to the character.

Both decide the same site chrome (landmarks, link-only blocks under a read limit, the blocks
before the title) and read the same visible text; the C++ one only reads the tree, so one parse
serves every chrome level. Compared here on every page of the PostgreSQL manual and the
installation guide, on generated chrome-heavy markup and on markup soup (hypothesis), at every
chrome level, with and without ARIA roles.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import lxml.etree
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.corpora import installation_guide_pages, postgresql_pages
from neardup_pipeline import extract
from neardup_pipeline.config import HTML_PARSERS
from neardup_pipeline.extract import Chrome, html_to_text

textwalk = extract._textwalk
EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "300"))


def test_the_extension_is_built_and_used_by_default() -> None:
    # setup.py builds it (optional=True: a machine without a C++ compiler falls back to the
    # Python walk); CI has g++, so a silent fallback there is a failure.
    assert textwalk is not None
    assert extract.NATIVE_WALK


def both_walks(markup: str | bytes, levels: tuple[Chrome, ...] = tuple(Chrome)) -> None:
    """Every chrome level, roles on and off: the same (text, marked) from both walks."""
    data = markup.encode("utf-8", "replace") if isinstance(markup, str) else markup
    data = data.translate(extract._CONTROL_TO_SPACE)  # as html_to_text hands it to libxml2
    try:
        root, _ = extract._lxml_tree(data)
    except (lxml.etree.ParserError, ValueError):
        return  # html_to_text reads such pages without a tree (bs4, scan)
    if root is None:
        return
    before = lxml.etree.tostring(root)
    limit = 4 * len(data)
    unstripped, _ = extract._lxml_tree(data, strip=False)  # html_to_text's (the walk skips them)
    assert unstripped is not None
    for roles in (True, False):
        walk = textwalk.chrome_walk(root, roles, limit)
        whole = textwalk.chrome_walk(unstripped, roles, limit)
        for level in levels:
            fresh, _ = extract._lxml_tree(data)
            assert fresh is not None
            expected = extract._python_walk(fresh, level, roles, limit)
            assert walk.text(level) == expected, (level, roles)
            assert whole.text(level) == expected, (level, roles)
    assert lxml.etree.tostring(root) == before  # read, never changed


def both_extractions(markup: str | bytes) -> None:
    for chromeless in (True, False):
        native, extract.NATIVE_WALK = extract.NATIVE_WALK, False
        try:
            python = html_to_text(markup, chromeless=chromeless)
        finally:
            extract.NATIVE_WALK = native
        assert html_to_text(markup, chromeless=chromeless) == python


@pytest.mark.shared_data
def test_same_text_on_every_page_of_two_real_sites() -> None:
    pages = [p.html for p in (*postgresql_pages(), *installation_guide_pages())]
    assert len(pages) > 4000
    for html in pages:
        both_extractions(html)


@pytest.mark.shared_data
def test_same_text_at_every_chrome_level_on_real_pages() -> None:
    pages = [p.html for p in (*postgresql_pages()[::25], *installation_guide_pages()[::25])]
    for html in pages:
        both_walks(extract.decode_html(html)[0].encode("utf-8"))


# One page that exercises every rule, for each parser's walk (tests/test_lexbor.py too): the
# script and the comment are never text.
WORKED_PAGE = (
    "<html><head><title>T</title></head><body>"
    "<div class=menu><a href=/>Home</a> | <a href=/docs>Docs</a></div>"
    "<header>Site banner</header><nav><a href=/x>X</a></nav>"
    "<div role=navigation>aria menu</div><h1>Title <a href=#>#</a></h1>"
    "<p>Own words <a href=/y>with a link</a> and a tail.</p>"
    "<article><header>Article header</header><ul><li><a href=#a>A</a></li></ul></article>"
    "<footer>Copyright</footer><script>var x;</script><!-- a comment --></body></html>"
)
_OWN = "Title # Own words with a link and a tail. Article header A"
WORKED_TEXTS = {
    Chrome.KEEP: f"Home | Docs Site banner X aria menu {_OWN} Copyright",
    Chrome.LANDMARKS: f"Home | Docs {_OWN}",  # nav, page header and footer, ARIA landmark out
    # the menu before the title goes; the article's own table of contents stays (marked main)
    Chrome.LINKS_BEFORE_TITLE: _OWN,
    Chrome.LINKS: _OWN,
}


def assert_worked_example(walk: Any) -> None:
    """WORKED_PAGE read by `walk` at every chrome level; without the landmarks, the page is seen
    to mark its main content (the article)."""
    for level, text in WORKED_TEXTS.items():
        assert walk.text(level)[0] == text, level
    assert walk.text(Chrome.LANDMARKS)[1]


@pytest.mark.parametrize("markup", [
    b"<p>no title at all</p>", b"<html><head><title></title></head></html>",
    b"<svg><title>the svg's <b>own</b></title></svg><title>page</title>",
    b"<title>a &amp; b <![CDATA[c]]></title><title>second</title>",
    "<title>d\u00e9j\u00e0 \U0001f600</title>".encode(), b"<body><div><title>late</title></div>",
])
def test_the_title_is_lxmls_first_title_as_a_string(markup: bytes) -> None:
    """libxml2_title is string(root.find(".//title")): the first in document order, even in an
    invisible element, with everything inside it as text."""
    root = lxml.etree.fromstring(markup, parser=extract._thread_parser())
    found = root.find(".//title")
    assert textwalk.libxml2_title(root) == (
        None if found is None else extract._STRING_VALUE(found))


def test_worked_example_of_each_rule() -> None:
    assert_worked_example(textwalk.chrome_walk(
        extract._lxml_tree(WORKED_PAGE.encode())[0], True, 10_000))
    both_walks(WORKED_PAGE)


_TAG = st.sampled_from([
    "div", "p", "span", "li", "ul", "ol", "td", "tr", "table", "a", "b", "i", "nav", "aside",
    "menu", "header", "footer", "article", "main", "section", "h1", "h2", "br", "dd", "dt",
    "script", "svg", "em", "code",
])
_ATTR = st.sampled_from([
    "", " href='#'", " role=navigation", " role=' Main '", " role=BANNER", " role=search",
    " role=complementary", " role=contentinfo", " role=main", " role=''", " role=presentation",
])
_WORDS = st.one_of(
    st.sampled_from(["", " ", "word", "two words", " | ", " > ", "\u00a0x\u2003y", "\u3000",
                     "éàü", "\U0001f600", "a\x1cb", "\u0085", "  \n\t "]),
    st.text(max_size=12),
)


def _element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def markup(tag: str, attr: str, text: str, inner: str, tail: str) -> str:
        return f"<{tag}{attr}>{text}{inner}</{tag}>{tail}"

    return st.builds(markup, _TAG, _ATTR, _WORDS, children, _WORDS)


_TREE = st.recursive(_WORDS, lambda inner: st.lists(_element(inner), max_size=4).map("".join),
                     max_leaves=40)
_SOUP = st.lists(st.one_of(_TAG.map(lambda t: f"<{t}>"), _TAG.map(lambda t: f"</{t}>"), _WORDS,
                           st.sampled_from(["<a href=x>", "<p", "&amp;", "&nbsp;", "<!--"])),
                 max_size=50).map("".join)


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_TREE, _SOUP), st.integers(0, 3))
def test_same_text_on_generated_markup(body: str, padding: int) -> None:
    markup = f"<html><head><title>t</title></head><body>{body}{' <p>w</p>' * padding}</body></html>"
    both_walks(markup)
    both_extractions(markup)


def test_a_read_limit_stops_both_walks_at_the_same_block() -> None:
    menu = "<ul>" + "".join(f"<li><a href=/{n}>item {n}</a></li>" for n in range(200)) + "</ul>"
    page = f"<html><body><div>{menu}<p>own words here</p></div>{menu}</body></html>"
    data = page.encode()
    for limit in (0, 50, 500, 2_000, 5_000, 10_000):
        root, _ = extract._lxml_tree(data)
        assert root is not None
        expected = extract._python_walk(root, Chrome.LINKS, False, limit)
        root, _ = extract._lxml_tree(data)
        assert textwalk.chrome_walk(root, False, limit).text(Chrome.LINKS) == expected


_MARKUP = st.lists(st.sampled_from(["<", ">", "a", "Z", "1", " ", "role", "rol", "é", "東", "😀",
                                    "\u2028", "<p", "</b>", "\x00"]), max_size=60).map("".join)


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(_MARKUP, st.integers(0, 12), st.integers(0, 12))
def test_markup_facts_answer_what_the_text_scans_answer(
    text: str, max_tags: int, long_tag_chars: int,
) -> None:
    """One pass over the UTF-8 tells what html_to_text asked of the decoded text: the role
    attribute's name, the count of "<", and a tag longer than the cap (extract._LONG_TAG)."""
    import re

    from neardup_pipeline import _textwalk

    data = text.encode("utf-8")
    long_tag = re.compile(r"<[A-Za-z][^<>]{" + str(long_tag_chars) + ",}")
    assert _textwalk.markup_facts(data, max_tags, long_tag_chars) == (
        "role" in text, text.count("<") > max_tags, bool(long_tag.search(text)))


def test_a_tag_past_the_cap_is_still_read_by_the_scan() -> None:
    page = "<p>before</p><a " + "x" * extract.MAX_TAG_CHARS + ">" + "<p>after &amp; more</p>"
    for parser in HTML_PARSERS:
        extracted = html_to_text(page.encode(), parser=parser)
        assert extracted.parser == "scan" and "before" in extracted.text
    assert html_to_text("<p role='main'>x</p>" * 3, max_tags=2).parser == "scan"
