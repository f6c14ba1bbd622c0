"""The C++ walk (`_textwalk`) gives the pure-Python walk's text, to the character.

Both decide the same site chrome (landmarks, link-only blocks under a read limit, the blocks
before the title) and read the same visible text; the C++ one only reads the page, so one parse
serves every chrome level. It reads libxml2 two ways: lxml's tree (`chrome_walk`) and, by
default, the parse's events without a tree (`libxml2_walk`); the three walks are compared here
on every page of the PostgreSQL manual and the installation guide, on generated chrome-heavy
markup and on markup soup (hypothesis), at every chrome level, with and without ARIA roles.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import lxml.etree
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_pipeline.text import extract, walk
from neardup_pipeline.text.chrome import STRING_VALUE, Chrome, python_walk
from neardup_pipeline.text.decode import decode_html
from neardup_pipeline.text.extract import html_to_text, walk_in_use
from tests.corpora import installation_guide_pages, postgresql_pages

textwalk = walk.textwalk
EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "300"))


def test_the_extension_is_built_and_used_by_default() -> None:
    # setup.py builds it (optional=True: a machine without a C++ compiler falls back to the
    # Python walk); CI has g++, so a silent fallback there is a failure.
    assert textwalk is not None
    assert extract.NATIVE_WALK
    assert extract.LIBXML2_EVENTS  # lxml's wheels export the libxml2 functions it calls
    assert textwalk.running_libxml2() == textwalk.LIBXML2_HEADERS
    version = ".".join(map(str, textwalk.LIBXML2_HEADERS))
    assert walk_in_use() == f"libxml2 {version} events (C++)"


def test_another_libxml2_than_the_headers_one_gets_the_tree_walk_and_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """The event reader lays out libxml2's structs as its headers do: against any other
    libxml2 it is refused, with one warning naming both versions, and the tree walk reads."""
    headers = ".".join(map(str, textwalk.LIBXML2_HEADERS))
    monkeypatch.setattr(walk, "running_libxml2", lambda: (2, 9, 14))
    with caplog.at_level("WARNING", logger="neardup"):
        refusal = walk.libxml2_events_refusal()
    assert refusal == f"running libxml2 2.9.14 differs from headers {headers}"
    assert [r.getMessage() for r in caplog.records] == [
        f"neardup reads lxml's tree, not libxml2's parse events: {refusal}"]
    monkeypatch.setattr(extract, "_EVENTS_REFUSAL", refusal)
    monkeypatch.setattr(extract, "LIBXML2_EVENTS", refusal is None)
    assert walk_in_use() == f"lxml tree (C++): {refusal}"
    page = WORKED_PAGE.encode()
    with pytest.MonkeyPatch.context() as patch:  # the event reader would fail the test if run
        patch.setattr(textwalk, "libxml2_walk", None)
        assert html_to_text(page, chromeless=True).text == WORKED_TEXTS[Chrome.LINKS]


def test_a_mismatch_found_at_import_chooses_the_tree_walk() -> None:
    """At load (extract loaded again, in a fresh interpreter) with a libxml2 that reads as another
    version than the headers': the tree walk is chosen, said so once on the neardup logger, and
    reads the same text."""
    script = (
        "import importlib, logging, sys\n"
        "from neardup_pipeline.text import extract, walk\n"
        "logging.basicConfig(stream=sys.stdout, format='%(levelname)s %(name)s %(message)s')\n"
        "walk.running_libxml2 = lambda: (2, 9, 14)\n"
        "importlib.reload(extract)\n"
        "print(extract.LIBXML2_EVENTS)\n"
        "print(extract.walk_in_use())\n"
        "print(extract.html_to_text(sys.argv[1], chromeless=True).text)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, WORKED_PAGE], capture_output=True,
                          text=True, check=True, timeout=120)
    headers = ".".join(map(str, textwalk.LIBXML2_HEADERS))
    reason = f"running libxml2 2.9.14 differs from headers {headers}"
    assert done.stdout.splitlines() == [
        f"WARNING neardup neardup reads lxml's tree, not libxml2's parse events: {reason}",
        "False", f"lxml tree (C++): {reason}", WORKED_TEXTS[Chrome.LINKS]]


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
        events, _ = textwalk.libxml2_walk(data, roles, limit)
        for level in levels:
            fresh, _ = extract._lxml_tree(data)
            assert fresh is not None
            expected = python_walk(fresh, level, roles, limit)
            assert walk.text(level) == expected, (level, roles)
            assert whole.text(level) == expected, (level, roles)
            assert events.text(level) == expected, (level, roles)
    assert lxml.etree.tostring(root) == before  # read, never changed


def both_extractions(markup: str | bytes) -> None:
    """html_to_text alike with the Python walk, the C++ walk of lxml's tree and (the default)
    the C++ walk of libxml2's events: text, title, parser, encoding."""
    for chromeless in (True, False):
        texts = []
        for switched_off in ("NATIVE_WALK", "LIBXML2_EVENTS", None):  # Python, tree, events
            with pytest.MonkeyPatch.context() as patch:
                if switched_off is not None:
                    patch.setattr(extract, switched_off, False)
                texts.append(html_to_text(markup, chromeless=chromeless))
        python, tree, events = texts
        assert tree == python
        assert events == python


def test_same_text_on_every_page_of_two_real_sites() -> None:
    pages = [p.html for p in (*postgresql_pages(), *installation_guide_pages())]
    assert len(pages) > 2700  # every page of tests/data
    for html in pages:
        both_extractions(html)


def test_same_text_at_every_chrome_level_on_real_pages() -> None:
    pages = [p.html for p in (*postgresql_pages()[::25], *installation_guide_pages()[::25])]
    for html in pages:
        both_walks(decode_html(html)[0].encode("utf-8"))


# One page that exercises every rule, for each walk: the script and the comment are never text.
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
    b"<html><body>x</body></html><title>after the root</title>", b"<title>never closed",
    b"<title>a<!-- c -->b<?pi x?>c</title>", b"<head><script><title>s</title></script></head>",
])
def test_the_title_is_lxmls_first_title_as_a_string(markup: bytes) -> None:
    """libxml2_title is string(root.find(".//title")): the first in document order, even in an
    invisible element, with everything inside it as text."""
    root = lxml.etree.fromstring(markup, parser=extract._thread_parser())
    found = root.find(".//title")
    expected = None if found is None else STRING_VALUE(found)
    assert textwalk.libxml2_title(root) == expected
    assert textwalk.libxml2_walk(markup, False, 0)[1] == expected


def test_worked_example_of_each_rule() -> None:
    assert_worked_example(textwalk.chrome_walk(
        extract._lxml_tree(WORKED_PAGE.encode())[0], True, 10_000))
    assert_worked_example(textwalk.libxml2_walk(WORKED_PAGE.encode(), True, 10_000)[0])
    both_walks(WORKED_PAGE)


@pytest.mark.parametrize("markup", [
    # raw text and RCDATA elements: their text comes as CDATA blocks or as characters
    "<body><xmp>a <b>b</b></xmp><iframe>c</iframe><noembed>d</noembed><noframes>e</noframes>"
    "<textarea>f &amp; g</textarea><noscript>h</noscript><style>i</style>j</body>",
    "<body><p>a<plaintext>b <i>c</i></p> d",
    # markup around and outside the root; misplaced html and body tags with their attributes
    "text before <html role=main><body role=navigation>x</body></html> after <p>late</p>",
    "<body><div>a</div><html role=main><body role=banner>b<div role>c</div>",
    "<div role=x role=main ROLE=navigation>first of three</div><p>own words</p>",
    "</p></div></body>unmatched<p>end tags</p></html></html>",
    "<!DOCTYPE html><?xml-stylesheet x?><!-- c --><html><!-- d -->words<?pi?></html>",
    "<table><tr><td>a<td>b</table><ul><li>c<li>d</ul><select><option>e<option>f</select>",
    "<p>a\u00a0b&nbsp;&#233;&#x1F600;&bogus;&amp</p>", "<svg><text>s</text></svg><math>m</math>",
    "<div>" * 40 + "deep" + "</div>" * 40, "", "<html></html>", "<p>only</p>" * 300,
])
def test_libxml2s_events_read_as_its_tree(markup: str) -> None:
    both_walks(markup)
    both_extractions(markup)


def test_libxml2s_depth_limit_holds_for_its_events() -> None:
    """The tree builder stops at 2048 open elements (html and body count): html_to_text sends
    such a page to bs4 whichever way libxml2 is read."""
    for depth, refused in ((2046, False), (2047, True)):
        data = b"<div>" * depth + b"deep"
        reads: tuple[Callable[[bytes], object], ...] = (
            lambda page: extract._lxml_tree(page, strip=False),
            lambda page: textwalk.libxml2_walk(page, False, 0))
        for read in reads:
            if refused:
                with pytest.raises(ValueError, match="depth limit"):
                    read(data)
            else:
                read(data)
        assert html_to_text(data).parser == ("bs4" if refused else "lxml")
    invisible = b"<div>" * 1000 + b"<noscript>" + b"<b>" * 1100 + b"x"
    with pytest.raises(ValueError):  # the elements inside an invisible one count too
        textwalk.libxml2_walk(invisible, False, 0)
    both_extractions(invisible)


def test_libxml2s_events_past_the_names_a_parser_keeps() -> None:
    """A parser context is replaced after it has kept MAX_KEPT_NAMES names: made-up tag names
    in their tens of thousands still read as lxml's tree, before the swap and after it."""
    for start in range(0, 60_000, 6_000):
        page = "".join(f"<x{n}>w{n} </x{n}>" for n in range(start, start + 6_000))
        page += "<nav>menu</nav><main><p>own words</p></main>"
        walk, _ = textwalk.libxml2_walk(page.encode(), True, 0)
        root, _ = extract._lxml_tree(page.encode(), strip=False)
        for level in Chrome:
            assert walk.text(level) == textwalk.chrome_walk(root, True, 0).text(level)


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
        expected = python_walk(root, Chrome.LINKS, False, limit)
        root, _ = extract._lxml_tree(data)
        assert textwalk.chrome_walk(root, False, limit).text(Chrome.LINKS) == expected


_MARKUP = st.lists(st.sampled_from(["<", ">", "a", "Z", "1", " ", "role", "rol", "é", "東", "😀",
                                    "\u2028", "<p", "</b>", "\x00", "\x07", "\x7f", "\t",
                                    "\n", "\r", "\x1f"]), max_size=120).map("".join)


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(_MARKUP, st.integers(0, 12), st.integers(0, 12))
def test_markup_facts_answer_what_the_text_scans_answer(
    text: str, max_tags: int, long_tag_chars: int,
) -> None:
    """One pass over the UTF-8 tells what html_to_text asked of the decoded text: the role
    attribute's name, the count of "<", a tag longer than the cap (extract._LONG_TAG), and
    whether a control character is there for extract._CONTROL to replace."""
    import re

    from neardup_pipeline.text import _textwalk

    data = text.encode("utf-8")
    long_tag = re.compile(r"<[A-Za-z][^<>]{" + str(long_tag_chars) + ",}")
    assert _textwalk.markup_facts(data, max_tags, long_tag_chars) == (
        "role" in text, text.count("<") > max_tags, bool(long_tag.search(text)),
        bool(extract._CONTROL.search(text)))


def test_a_control_byte_is_found_wherever_it_lies() -> None:
    """The control scan reads 64-byte blocks, then the tail: a byte in any block or in the
    tail is found, and libxml2 reads the page with it as a space."""
    from neardup_pipeline.text import _textwalk

    page = b"<html><body><p>" + b"words and more words " * 20 + b"</p></body></html>"
    assert _textwalk.markup_facts(page, 10_000, 10_000)[3] is False
    for at in (0, 63, 64, 130, len(page) - 1):
        for control in (b"\x00", b"\x0b", b"\x7f"):
            marked = page[:at] + control + page[at + 1:]
            assert _textwalk.markup_facts(marked, 10_000, 10_000)[3] is True
    nul = page.replace(b"and more", b"and\x00more")
    assert html_to_text(nul).text == html_to_text(page).text


def test_a_tag_past_the_cap_is_still_read_by_the_scan() -> None:
    page = "<p>before</p><a " + "x" * extract.MAX_TAG_CHARS + ">" + "<p>after &amp; more</p>"
    extracted = html_to_text(page.encode())
    assert extracted.parser == "scan" and "before" in extracted.text
    assert html_to_text("<p role='main'>x</p>" * 3, max_tags=2).parser == "scan"


def test_a_region_leaves_out_the_text_of_a_block_above_it() -> None:
    """An inline element holding blocks also holds text whose block element is above it: that
    text is between the region's blocks, not in the region, in every walk."""
    body = "<h1><span><div><h1>word</h1></div>word<li>word</li></span></h1>"
    both_walks(f"<html><head><title>t</title></head><body>{body}</body></html>")
    root, _ = extract._lxml_tree(f"<html><body>{body}</body></html>".encode())
    assert python_walk(root, Chrome.BLOCKS, False, 0) == ("word word word", False, "word word")
