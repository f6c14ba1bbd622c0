"""The lexbor parser (NearDupConfig.html_parser = "lexbor"): libxml2's text from an HTML5 parser.

One walk reads both parsers' trees (`_textwalk` copies either into its flat tree), so the text
differs only where the two parsers build different trees. Compared here on every page of the
PostgreSQL manual and the installation guide, title and text, at every chrome level. The one
difference found on real pages is HTML5's: a link inside a link is closed first (the
PostgreSQL glossary nests them), so the link-only blocks are counted over other links.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.corpora import installation_guide_pages, postgresql_pages
from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.errors import ConfigError, IndexParamsError
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index.sqlite.store import SqliteIndex
from neardup_pipeline.text import extract
from neardup_pipeline.text.extract import Chrome, html_to_text

from .test_cli import CORPUS, neardup, write_jsonl
from .test_textwalk import _SOUP, _TREE, EXAMPLES, WORKED_PAGE, assert_worked_example

textwalk = extract._textwalk


def utf8(html: bytes | str) -> bytes:
    """Markup as html_to_text hands it to either parser."""
    text = extract.decode_html(html)[0] if isinstance(html, bytes) else html
    return text.encode("utf-8", "replace").translate(extract._CONTROL_TO_SPACE)


def test_lexbor_is_available_where_the_tests_run() -> None:
    # the test extra installs selectolax and CI builds the walk: a silent skip would be a failure
    assert extract.lexbor_available()


def both_trees(data: bytes) -> tuple[object, object, str, str]:
    root, title = extract._lxml_tree(data)
    assert root is not None
    roles = b"role" in data
    lexbor, raw_title = textwalk.lexbor_walk(data, roles, 4 * len(data))
    return (textwalk.chrome_walk(root, roles, 4 * len(data)), lexbor, title,
            extract._collapse_spaces(raw_title or ""))


@pytest.mark.shared_data
def test_same_title_and_text_at_every_chrome_level_on_two_real_sites() -> None:
    pages = [p.html for p in (*postgresql_pages(), *installation_guide_pages())]
    assert len(pages) > 4000
    differing = []
    for html in pages:
        data = utf8(html)
        lxml_walk, lexbor_walk, lxml_title, lexbor_title = both_trees(data)
        assert lexbor_title == lxml_title
        for level in Chrome:
            if lexbor_walk.text(level) != lxml_walk.text(level):  # type: ignore[attr-defined]
                differing.append((level, data))
    # the glossary of both releases, at the link-block level only: nested links
    assert [level for level, _ in differing] == [Chrome.LINKS, Chrome.LINKS]
    for _, data in differing:
        root, _ = extract._lxml_tree(data)
        assert root is not None and root.xpath("//a//a")


@pytest.mark.shared_data
def test_same_fingerprints_from_both_parsers_on_real_pages() -> None:
    lxml_side = Fingerprinter(NearDupConfig())
    lexbor_side = Fingerprinter(NearDupConfig(html_parser="lexbor"))
    for page in postgresql_pages()[::40]:
        ours = lexbor_side.fingerprint(Document(page.doc_id, html=page.html))
        theirs = lxml_side.fingerprint(Document(page.doc_id, html=page.html))
        assert (ours.title, ours.text) == (theirs.title, theirs.text)
        assert lexbor_side.encode(ours) == lxml_side.encode(theirs)


@pytest.mark.shared_data
def test_threads_parse_at_once_and_read_the_same_text() -> None:
    # the parse runs without the GIL: each call has its own lexbor document and flat tree
    pages = [p.html for p in postgresql_pages()[:120]]
    alone = [html_to_text(h, chromeless=True, parser="lexbor") for h in pages]
    mismatches: list[int] = []

    def read(start: int) -> None:
        for i in range(start, len(pages), 4):
            got = html_to_text(pages[i], chromeless=True, parser="lexbor")
            if (got.title, got.text) != (alone[i].title, alone[i].text):
                mismatches.append(i)

    for _ in range(2):
        threads = [threading.Thread(target=read, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not mismatches


def test_custom_elements_are_plain_elements_page_after_page() -> None:
    # a custom element's tag id is an address in its document, reused by the next document's
    # names: no kind may stick to it (a custom name is never chrome, never a block)
    for i in range(300):
        page = (f"<html><body><x-nav-{i}>own {i}</x-nav-{i}><nav>menu</nav>"
                f"<p>words <my-el{i % 7}>inside</my-el{i % 7}> here</p></body></html>")
        text = html_to_text(page, chromeless=True, parser="lexbor").text
        assert text == f"own {i} words inside here", text


def test_worked_example_of_each_rule() -> None:
    walk, title = textwalk.lexbor_walk(WORKED_PAGE.encode(), True, 10_000)
    assert title == "T"
    assert_worked_example(walk)


def test_a_link_inside_a_link_is_where_the_parsers_part() -> None:
    # the glossary's markup: libxml2 keeps the inner link inside the outer one (it closes a
    # link only at a link of its own parent); HTML5's adoption agency closes the outer first
    data = (b"<html><body><p><a href=1><em><a href=2>two</a></em></a> and words</p>"
            b"</body></html>")
    lxml_walk, lexbor_walk, _, _ = both_trees(data)
    assert lexbor_walk.text(Chrome.KEEP) == lxml_walk.text(Chrome.KEEP)  # type: ignore[attr-defined]
    root, _ = extract._lxml_tree(data)
    assert root is not None and len(root.xpath("//a//a")) == 1


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_TREE, _SOUP))
def test_generated_markup_keeps_every_visible_word(body: str) -> None:
    """lexbor never loses text libxml2 shows. On broken markup HTML5 may move text (a table's
    stray text goes before the table), ignore a misplaced tag (a cell outside a table: the
    words either side run together) and show what libxml2 hides (an HTML block inside <svg>
    leaves the SVG, as in a browser). Every chrome level reads."""
    data = utf8(f"<html><head><title>t</title></head><body>{body}</body></html>")
    try:
        lxml_walk, lexbor_walk, lxml_title, lexbor_title = both_trees(data)
    except ValueError:
        return
    assert lexbor_title == lxml_title
    ours = lexbor_walk.text(Chrome.KEEP)[0]  # type: ignore[attr-defined]
    theirs = lxml_walk.text(Chrome.KEEP)[0]  # type: ignore[attr-defined]
    assert not Counter("".join(theirs.split())) - Counter("".join(ours.split()))
    for level in Chrome:
        text, marked = lexbor_walk.text(level)  # type: ignore[attr-defined]
        assert isinstance(text, str) and isinstance(marked, bool)


@pytest.mark.parametrize("markup", [
    b"", b" ", b"plain words, no tags", b"<!-- only a comment -->", b"<title>Only a title</title>",
    b"<html>", b"</html></body>", b"<p>unclosed <b>bold <i>both", b"<svg><title>x</title></svg>w",
    b"<table>stray<tr><td>cell</td></tr></table>", b"<template><p>unseen</p></template>seen",
    "caf\u00e9 \u65e5\u672c \U0001f600 <p>\u00a0spaced\u2003out</p>".encode(),
])
def test_bad_and_odd_markup_reads_as_lxml_reads_it(markup: bytes) -> None:
    for chromeless in (False, True):
        ours = html_to_text(markup, chromeless=chromeless, parser="lexbor")
        theirs = html_to_text(markup, chromeless=chromeless)
        assert (ours.title, ours.text) == (theirs.title, theirs.text)
        assert ours.parser in ("lexbor", "lxml")  # lxml: empty markup is never parsed


def test_markup_nested_beyond_libxml2s_limit_goes_to_bs4_at_the_same_depth() -> None:
    for depth, parser in ((2046, "lexbor"), (2047, "bs4"), (5000, "bs4")):
        nested = f"{'<div>' * depth}deep words{'</div>' * depth}"
        page = f"<html><body>{nested}<p>after</p></body></html>"
        ours = html_to_text(page, parser="lexbor")
        theirs = html_to_text(page)
        assert ours.parser == parser and theirs.parser == parser.replace("lexbor", "lxml")
        assert ours.text == theirs.text == "deep words after"


def test_the_choice_is_validated_and_remembered_by_the_index(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="html_parser"):
        NearDupConfig(html_parser="html5lib")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parser"):
        html_to_text("<p>x</p>", parser="html5lib")
    assert "parser" not in Fingerprinter(NearDupConfig()).params()  # older indexes still match
    assert Fingerprinter(NearDupConfig(html_parser="lexbor")).params()["parser"] == "lexbor"
    page = Document("a", html=f"<html><body><p>{CORPUS[1]['text']}</p></body></html>")
    index = SqliteIndex(str(tmp_path / "fp.sqlite"))
    Deduplicator(index, NearDupConfig()).process(page)
    with pytest.raises(IndexParamsError, match="parser"):
        Deduplicator(index, NearDupConfig(html_parser="lexbor")).process(page)


def test_dedup_command_with_the_lexbor_parser(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", list(CORPUS))
    runs = {}
    for parser in ("lxml", "lexbor"):
        out = tmp_path / f"{parser}.jsonl"
        result = neardup("dedup", str(source), "--html-parser", parser, "-o", str(out))
        assert result.returncode == 0, result.stderr
        runs[parser] = [json.loads(line) for line in out.read_text().splitlines()]
    assert runs["lexbor"] == runs["lxml"]
    assert {line["id"]: line["cluster"] for line in runs["lexbor"]}["copy"] == "orig"


def test_without_selectolax_the_choice_is_a_clear_error() -> None:
    script = (
        "import sys\n"
        "class NoSelectolax:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.startswith('selectolax'):\n"
        "            raise ImportError('not installed')\n"
        "sys.meta_path.insert(0, NoSelectolax())\n"
        "from neardup_pipeline import NearDupConfig\n"
        "from neardup_pipeline.fingerprint import Fingerprinter\n"
        "Fingerprinter(NearDupConfig())\n"
        "Fingerprinter(NearDupConfig(html_parser='lexbor'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1
    assert "ConfigError: html_parser 'lexbor' needs selectolax" in done.stderr
