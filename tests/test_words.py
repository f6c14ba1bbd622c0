"""The compiled tokenizer (`_words.word_tokens`) returns exactly re.findall(r"\\w+"), on any text,
the stem table (`_words.StemTable`) reads a text to exactly the stems the dict gives its
tokens, and `_words.casefold` is str.casefold.

Normalizer.words reads its tokens from them; the regex and the dict stay as the fallback of a
build without a compiler. Compared on arbitrary Unicode (hypothesis), on every script's letters
and digits, and on the casefolded text of real pages in English, Russian and Catalan.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_pipeline.text import normalize
from neardup_pipeline.text._words import (
    StemTable,
    arabic_script,
    casefold,
    known_stems,
    word_tokens,
)
from neardup_pipeline.text.extract import html_to_text
from tests.corpora import installation_guide_pages, postgresql_pages
from tests.documents import STEMMED

WORD = re.compile(r"\w+")
EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "300"))


def test_normalizer_reads_its_tokens_from_the_compiled_tokenizer() -> None:
    assert normalize._word_tokens is word_tokens


def test_casefold_is_str_casefold_on_every_code_point() -> None:
    """Each character alone and in texts of each width (1, 2, 4 bytes a character), with the
    folds that grow a text ("ß" -> "ss", U+0390 -> 3 characters) and widen it ("\u00b5" -> "μ")."""
    assert normalize._casefold is casefold
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    for start in range(0, len(every), 4096):
        chunk = every[start : start + 4096]
        assert casefold(chunk) == chunk.casefold(), hex(start)
    for code in range(0x20000):  # one character at a time: no fold may hide in a neighbour's
        char = chr(code)
        assert casefold("\u00e9" + char) == ("\u00e9" + char).casefold()
    for text in ("Straße", "\u00b5m", "ΐ", "İstanbul", "Ǆ", "𐐀x", "ÀÉÎ", "", "ASCII"):
        folded = casefold(text)
        assert folded == text.casefold() and type(folded) is str


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=5))
@given(st.text(min_size=0, max_size=200))
def test_casefold_is_str_casefold_on_any_text(text: str) -> None:
    assert casefold(text) == text.casefold()
    assert casefold(text + "\U0001f600") == (text + "\U0001f600").casefold()  # 4-byte kind


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


def test_same_tokens_on_real_pages_in_three_languages() -> None:
    guide = installation_guide_pages()
    pages = [*postgresql_pages()[::10], *(p for p in guide[::7] if p.info.get("lang") != "en")]
    languages = {p.info.get("lang") for p in guide[::7]}
    assert {"ru", "ca"} <= languages
    for page in pages:
        canon = normalize.canonical_text(html_to_text(page.html, chromeless=True).text)
        assert word_tokens(canon) == WORD.findall(canon)


# Words of one-, two- and four-byte characters, so a table key and the text around it are often
# of different string kinds ("ab" is stored in one byte a character, read from a text in two).
_PIECES = st.sampled_from(["a", "b", "ab", "é", "ж", "жa", "東", "😀", "a😀", "_", "9"])
_TABLE_WORDS = st.lists(_PIECES, min_size=1, max_size=3).map("".join)


def _reference_stems(text: str, table: dict[str, str], limit: int, max_chars: int,
                     max_words: int) -> list[str] | None:
    tokens = WORD.findall(text)
    tokens = tokens if limit < 0 else tokens[:limit]
    tokens = [t for t in tokens if max_chars < 0 or len(t) <= max_chars]
    tokens = tokens if max_words < 0 else tokens[:max_words]
    if any(t not in table for t in tokens):
        return None
    return [table[t] for t in tokens if table[t]] or None


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(st.dictionaries(_TABLE_WORDS, st.sampled_from(["", "s", "стем", "😀"])),
       st.lists(_TABLE_WORDS | st.sampled_from([" ", ", ", "-", "\u2019", "\U0001f600 "])),
       st.integers(-1, 12), st.integers(-1, 6), st.integers(-1, 12))
def test_stem_table_reads_a_text_as_the_dict_reads_its_tokens(
    table: dict[str, str], pieces: list[str], limit: int, max_chars: int, max_words: int,
) -> None:
    text = " ".join(pieces)
    stems = StemTable()
    stems.update(table)
    assert len(stems) == len(table)
    assert stems.stems(text, limit, max_chars, max_words) == _reference_stems(
        text, table, limit, max_chars, max_words)


def test_stem_table_grows_replaces_and_clears() -> None:
    words = {f"w{i}x": f"s{i % 97}" for i in range(60_000)}
    words["the"] = ""
    stems = StemTable()
    stems.update(words)
    text = " ".join(words)
    assert stems.stems(text) == [s for s in words.values() if s]
    stems.update({"the": "the"})  # a known word's stem is replaced, not added
    assert len(stems) == len(words) and stems.stems("the w1x") == ["the", "s1"]
    assert stems.stems("the unknown") is None and stems.stems("") is None
    endless = "x" * 70_000  # past a slot's length field: left to the dict, never wrong
    stems.update({endless: "x"})
    assert len(stems) == len(words) and stems.stems(f"{endless} w1x") is None
    stems.clear()
    assert len(stems) == 0 and stems.stems("the") is None
    with pytest.raises(TypeError, match="str tokens to str stems"):
        stems.update({"a": 1})  # type: ignore[dict-item]


def test_stem_table_holds_and_releases_its_strings() -> None:
    token, stem = "".join(["tok", "en"]), "".join(["st", "em"])  # fresh objects, not interned
    before = sys.getrefcount(token), sys.getrefcount(stem)
    stems = StemTable()
    stems.update({token: stem})
    assert (sys.getrefcount(token), sys.getrefcount(stem)) == (before[0] + 1, before[1] + 1)
    stems.update({token: stem})
    assert (sys.getrefcount(token), sys.getrefcount(stem)) == (before[0] + 1, before[1] + 1)
    del stems
    assert (sys.getrefcount(token), sys.getrefcount(stem)) == before


def _words_without_the_table(normalizer: normalize.Normalizer, text: str) -> normalize.Words:
    """The words by the dict alone, from rule sets made for this and then forgotten."""
    normalize.word_rules_for.cache_clear()
    for language in ("en", "ru", "ca", "de", "fr"):
        rules = normalize.word_rules_for(language, normalizer.remove_stopwords, normalizer.stem)
        rules._table = None
    try:
        return normalizer.words(text)
    finally:
        normalize.word_rules_for.cache_clear()


def test_normalizer_gives_the_same_words_with_and_without_the_table() -> None:
    """Read twice (the second time every word is known and the table decides), in three
    languages, and on the edge texts: stop words only, no words, words of no detected language."""
    guide = installation_guide_pages()
    texts = [html_to_text(page.html, chromeless=True).text
             for page in [*postgresql_pages()[::25], *guide[::15]]]
    texts += ["to be or not to be", "", " ,.; ", "1234 5678", "The the THE a"]
    normalizer = normalize.Normalizer(**STEMMED)
    expected = [_words_without_the_table(normalizer, text) for text in texts]
    assert [normalizer.words(text) for text in texts] == expected  # the dict, learning
    assert [normalizer.words(text) for text in texts] == expected  # the table
    assert {words.language for words in expected} >= {"en", "ru", "ca", None}
    assert len(normalize.word_rules_for("en", True, True)._table or ()) > 1000


def test_threads_learning_words_read_what_one_thread_reads() -> None:
    """Four threads read pages whose words are new to a fresh rule set (they learn into the
    dict and the table while the others read both): each gets the sequential words."""
    texts = [" ".join(f"word{i}x{j} the running" for j in range(300)) for i in range(40)]
    expected = [normalize.Normalizer(language="en").words(t).words for t in texts]
    normalize.word_rules_for.cache_clear()
    normalizer = normalize.Normalizer(language="en")
    results: dict[int, list[str]] = {}

    def read(start: int) -> None:
        for index in range(start, len(texts), 4):
            for _ in range(3):
                results[index] = normalizer.words(texts[index]).words

    threads = [threading.Thread(target=read, args=(start,)) for start in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [results[i] for i in range(len(texts))] == expected


def _read_apart(normalizer: normalize.Normalizer, text: str, passage: str,
                language: str | None) -> tuple[list[str], list[str]]:
    whole = normalizer.words(text, language, detect=False)
    return whole.words, normalizer.words(passage, whole.language, detect=False).words


def test_a_passage_read_with_its_text_has_the_words_read_apart() -> None:
    """The content region read within its page (one pass) gives the page's words and the
    region's, as two readings do: real pages of three languages, words as they are, stop words
    and stems of a given language."""
    guide = installation_guide_pages()
    pages = [*postgresql_pages()[::5], *guide[::5]]
    readers = [(normalize.Normalizer(), None),
               (normalize.Normalizer(remove_stopwords=True, stem=True), "en"),
               (normalize.Normalizer(remove_stopwords=True, stem=True), None)]
    found = 0
    for page in pages:
        extracted = html_to_text(page.html, chromeless=True)
        if not extracted.region:
            continue
        found += extracted.text.find(extracted.region) >= 0
        for normalizer, language in readers:
            words, passage = normalizer.words_with_passage(
                extracted.text, extracted.region, language)
            assert (words.words, passage) == _read_apart(
                normalizer, extracted.text, extracted.region, language)
    assert found >= 20


_BLOCK_PIECES = st.sampled_from(["word", "ﬁne", "Straße", "e\u0301", "\u0301", "كتاب",
                                 "\u200c", "ـ", "١٢", "東京", "😀", ", ", " ", "\n", "\xa0"])
_BLOCKS = st.lists(st.lists(_BLOCK_PIECES, max_size=8).map("".join), min_size=1, max_size=6)


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True)
@given(_BLOCKS, st.integers(0, 5), st.integers(1, 6), st.sampled_from([" ", "\n"]),
       st.integers(1, 30))
def test_a_passage_of_blocks_anywhere_reads_as_apart(
    blocks: list[str], start: int, length: int, separator: str, max_words: int,
) -> None:
    """Any run of blocks, the page's first or last among them, ligatures, combining marks,
    Arabic letters and joiners at its edges, a word cap that cuts the page: the same words."""
    text = separator.join(blocks)
    passage = separator.join(blocks[start:start + length]) or text
    normalizer = normalize.Normalizer(max_words=max_words)
    words, inside = normalizer.words_with_passage(text, passage)
    assert (words.words, inside) == _read_apart(normalizer, text, passage, None)


def test_the_nfkc_table_leaves_out_every_character_a_composition_ends_with() -> None:
    """Over all of Unicode: a character that ends a canonical two-character decomposition, or
    that NFKC changes alone, is never taken as stable."""
    import unicodedata

    stable = normalize._nfkc_stable_table()
    for code in range(0x110000):
        decomposition = unicodedata.decomposition(chr(code))
        if decomposition and not decomposition.startswith("<"):
            parts = decomposition.split()
            if len(parts) == 2 and int(parts[1], 16) < 0x10000:
                assert not stable[int(parts[1], 16)], decomposition
    for code in range(0x10000):
        if stable[code]:
            assert unicodedata.normalize("NFKC", chr(code)) == chr(code), hex(code)


_NFKC_CHARS = st.one_of(
    st.sampled_from("aeouAEOU가각각\u0301\u0308\u0327ﬁ①²ＡÅÅ\u212bकि\u093c\u094dা\u09bcো"
                    "\u0b47\u0b3e\u0cc6\u0cd5\u0d46\u0d3e “”—\xa0\u3000ſ\u0345"),
    st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)),
    st.characters(exclude_categories=("Cs",)),
)


@settings(max_examples=EXAMPLES * 3, deadline=timedelta(seconds=2), derandomize=True)
@given(st.lists(_NFKC_CHARS, max_size=40).map("".join))
def test_a_text_the_table_calls_unchanged_is_its_own_nfkc(text: str) -> None:
    """Bases and the marks that compose with them, Hangul jamo, Indic vowel signs, ligatures,
    compatibility forms, any character: the table never calls a text unchanged that NFKC
    changes, and the canonical text is the same either way."""
    import unicodedata

    from neardup_pipeline.text._words import nfkc_unchanged

    if nfkc_unchanged(text, normalize._nfkc_stable_table()):
        assert unicodedata.normalize("NFKC", text) == text
    assert normalize.canonical_text(text) == unicodedata.normalize("NFKC", text).casefold() \
        or normalize._arabic_script(unicodedata.normalize("NFKC", text))


def test_the_nfkc_table_reads_real_pages_as_the_database_does() -> None:
    import unicodedata

    from neardup_pipeline.text._words import nfkc_unchanged

    guide = installation_guide_pages()
    unchanged = 0
    for page in [*postgresql_pages()[::10], *guide[::7]]:
        text = html_to_text(page.html, chromeless=True).text
        table_says = nfkc_unchanged(text, normalize._nfkc_stable_table())
        assert not table_says or unicodedata.normalize("NFKC", text) == text
        unchanged += table_says and not text.isascii()
    assert unchanged >= 5  # pages with quotes, dashes, Cyrillic: read by the table
