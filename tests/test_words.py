"""The compiled tokenizer (`_words.word_tokens`) returns exactly re.findall(r"\\w+"), on any text.

Normalizer.words reads its tokens from it; the regex stays as the fallback of a build without a
compiler. Compared on arbitrary Unicode (hypothesis), on every script's letters and digits, and
on the casefolded text of real pages in English, Russian and Catalan.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.corpora import installation_guide_pages, postgresql_pages
from neardup_pipeline import normalize
from neardup_pipeline._words import arabic_script, known_stems, word_tokens
from neardup_pipeline.extract import html_to_text

WORD = re.compile(r"\w+")
EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "300"))


def test_normalizer_reads_its_tokens_from_the_compiled_tokenizer() -> None:
    assert normalize._word_tokens is word_tokens


def test_worked_example() -> None:
    text = "Déjà vu, 2x_speed! Привет-мир 東京 ٣٤٥ x\u0301y don't"
    assert word_tokens(text) == WORD.findall(text) == [
        "Déjà", "vu", "2x_speed", "Привет", "мир", "東京", "٣٤٥", "x", "y", "don", "t"]
    assert word_tokens(text, 3) == ["Déjà", "vu", "2x_speed"]
    assert word_tokens(text, 0) == []
    assert word_tokens("") == word_tokens(" ,.;") == []


@settings(max_examples=EXAMPLES * 3, deadline=timedelta(seconds=2), derandomize=True)
@given(st.text(), st.integers(-1, 20))
def test_same_tokens_as_the_regex_on_any_text(text: str, limit: int) -> None:
    expected = WORD.findall(text)
    assert word_tokens(text, limit) == (expected if limit < 0 else expected[:limit])


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.text(), st.integers(-1, 20), st.integers(0, 8))
def test_long_tokens_are_left_out_but_counted_against_the_limit(
    text: str, limit: int, max_chars: int,
) -> None:
    """As Normalizer.words without the extension: the first `limit` tokens, then the long ones
    dropped."""
    expected = WORD.findall(text)
    expected = expected if limit < 0 else expected[:limit]
    assert word_tokens(text, limit, max_chars) == [t for t in expected if len(t) <= max_chars]


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(st.sampled_from("abcdefg")), st.dictionaries(
    st.sampled_from("abcdefg"), st.sampled_from(["", "x", "stem"])))
def test_known_stems_reads_the_cache_as_the_python_path_does(
    tokens: list[str], cache: dict[str, str],
) -> None:
    assert known_stems(tokens, cache) == normalize._cached(tokens, cache)
    assert normalize._known_stems is known_stems


def test_same_decision_as_the_regex_for_every_code_point() -> None:
    every = "".join(chr(c) + " " for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    assert word_tokens(every) == WORD.findall(every)


def test_arabic_script_test_agrees_with_the_regex_for_every_code_point() -> None:
    """Each code point alone and after a wide character (so the scan, not the one-byte shortcut,
    decides), and Persian text is folded through it."""
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        for text in (chr(code), "\u2019" + chr(code)):
            assert arabic_script(text) == bool(normalize._ARABIC_SCRIPT.search(text)), hex(code)
    assert normalize._arabic_script is arabic_script
    assert normalize.canonical_text("كتاب") == normalize.canonical_text("\u06a9\u062a\u0627\u0628")


@pytest.mark.shared_data
def test_same_tokens_on_real_pages_in_three_languages() -> None:
    guide = installation_guide_pages()
    pages = [*postgresql_pages()[::10], *(p for p in guide[::7] if p.info.get("lang") != "en")]
    languages = {p.info.get("lang") for p in guide[::7]}
    assert {"ru", "ca"} <= languages
    for page in pages:
        canon = normalize.canonical_text(html_to_text(page.html, chromeless=True).text)
        assert word_tokens(canon) == WORD.findall(canon)
