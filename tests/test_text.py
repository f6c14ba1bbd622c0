"""HTML extraction and normalisation: real behaviour on crafted and hostile input."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_pipeline.text.decode import (
    DETECT_SAMPLE_BYTES,
    dammit_decode,
    declared_in,
    decode,
    decode_html,
)
from neardup_pipeline.text.extract import html_to_text
from neardup_pipeline.text.normalize import Normalizer, canonical_text, detect_language
from tests.corpora import installation_guide_pages, postgresql_pages
from tests.documents import STEMMED


def test_invisible_content_and_comments_are_dropped() -> None:
    html = (
        "<html><head><title>Title here</title><style>p{}</style><script>var x=1</script></head>"
        "<body><noscript>enable js</noscript><template><p>tpl</p></template>"
        "<p>Hello <b>wo</b>rld</p><!-- secret --><p>next</p></body></html>"
    )
    extracted = html_to_text(html)
    assert extracted.text == "Hello world next"
    assert extracted.title == "Title here"
    assert extracted.parser == "lxml"


def test_entities_from_a_dtd_are_never_expanded() -> None:
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        "<html><body><p>&lol2;</p><p>&amp; kept</p></body></html>"
    )
    text = html_to_text(bomb).text
    assert "lollol" not in text
    assert "& kept" in text


def test_external_entities_and_resources_are_not_loaded() -> None:
    html = (
        '<!DOCTYPE x [<!ENTITY ext SYSTEM "file:///etc/passwd">]>'
        '<html><body><p>&ext;</p><img src="http://127.0.0.1:9/x.png"></body></html>'
    )
    assert "root:" not in html_to_text(html).text


def test_bytes_are_decoded_by_declared_charset() -> None:
    html = '<meta charset="windows-1251"><p>Привет мир</p>'.encode("cp1251")
    extracted = html_to_text(html)
    assert extracted.text == "Привет мир"
    assert extracted.encoding == "windows-1251"


DECLARATIONS = [b"", b'<meta charset="utf-8">', b'<meta charset="UTF-8">', b"<meta charset=utf8>",
                b'<meta charset="iso-8859-1">', b'<?xml version="1.0" encoding="utf-8"?>',
                b'<meta http-equiv="Content-Type" content="text/html; charset=utf-8">']
BODIES = ["plain ascii", "d\u00e9j\u00e0 vu \u2014 \u041f\u0440\u0438\u0432\u0435\u0442",
          "\U0001f600 astral", "\ufeff inner BOM"]


@pytest.mark.parametrize("declared", [None, "utf-8", "UTF-8", "utf8", "windows-1252", "latin-1"])
def test_the_utf8_shortcut_decodes_as_unicode_dammit(declared: str | None) -> None:
    """Every page a strict UTF-8 decode may take (declared so, by the caller or the page)
    gives what UnicodeDammit alone gives: text, encoding name and the exact flag; with byte
    order marks, undecodable bytes, other declarations and pages past the detection sample."""
    pages = []
    for head in DECLARATIONS:
        for body in BODIES:
            page = head + f"<p>{body}</p>".encode()
            pages += [page, codecs.BOM_UTF8 + page, page + b"\xff\xfe broken", page.replace(
                b"<p>", "<p>\u00e9".encode("latin-1")), "\ufeff".encode("utf-16") + page]
    pages.append(DECLARATIONS[1] + b"<p>" + b"x " * DETECT_SAMPLE_BYTES + b"</p>")
    for page in pages:
        assert decode(page, declared) == dammit_decode(page, declared), (page[:60], declared)


# Pieces of markup around declarations: where bs4's search starts, stops and what it takes.
_PIECES = [b"<meta charset=", b"<META CHARSET='",
           b"<meta http-equiv=x content='text/html; charset=", b"<?xml version='1.0' encoding=",
           b"<?xml encoding='", b"?>", b"'", b'"', b" ", b"/",
           b";", b">", b"\n", b"utf-8", b"UTF-8", b"latin-1", b"", b"\xff\xfe", b"<p>x</p>",
           b"\xe9", b"x" * 700, b"  <", b"<  meta"]


def _bs4_declared(data: bytes) -> str | None:
    from bs4.dammit import EncodingDetector

    return EncodingDetector.find_declared_encoding(data, is_html=True)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12))
def test_the_declaration_is_found_where_bs4_finds_it(pieces: list[bytes]) -> None:
    """The UTF-8 shortcut reads a page's declaration without loading bs4, as bs4 reads it."""
    page = b"".join(pieces)
    assert declared_in(page) == _bs4_declared(page), page


def test_declarations_of_real_pages_are_found_where_bs4_finds_them() -> None:
    pages = [p.html for p in postgresql_pages()[:50]] + [
        head + body.encode() for head in DECLARATIONS for body in BODIES]
    pages += [b"<p>" + b"x" * 3000 + b"</p>" + DECLARATIONS[1],  # past the 2,048 searched
              b"x" * 60_000 + DECLARATIONS[1] + b"y" * 1_000]  # within a twentieth of the page
    for page in pages:
        assert declared_in(page) == _bs4_declared(page), page[:80]


def test_xhtml_with_encoding_declaration_parses_with_lxml() -> None:
    html = '<?xml version="1.0" encoding="UTF-8"?><html><body><p>é text</p></body></html>'
    extracted = html_to_text(html)
    assert (extracted.text, extracted.parser) == ("é text", "lxml")


def test_deep_nesting_keeps_the_text() -> None:
    depth = 20_000
    extracted = html_to_text("<div>" * depth + "deep text" + "</div>" * depth)
    assert extracted.text == "deep text"


def test_oversized_page_is_cut_not_refused() -> None:
    extracted = html_to_text("<p>" + "word " * 1000 + "</p>", max_bytes=100)
    assert extracted.truncated
    assert 0 < len(extracted.text) <= 100


_BYTES_CASES = [
    '<?xml version="1.0" encoding="UTF-8"?>\n<html><body><p>é text role</p></body></html>',
    '\u3000 <?xml version="1.0"?><p role="main">wide space before the declaration</p>',
    '<p role="navigation"><a href="/">home</a></p><h1>Title</h1><p>x</p>',
    "<p>caf\u00e9 \u2014 \x00 nul and \x7f del</p>",
]


def _read_alike_from_bytes_and_text(html: bytes, chromeless: bool) -> str:
    """The page's text read from its bytes, asserted equal (text and title) to that of its
    decoded str, which is encoded again before the parse."""
    from_bytes = html_to_text(html, chromeless=chromeless)
    from_text = html_to_text(decode_html(html)[0], chromeless=chromeless)
    assert (from_bytes.text, from_bytes.title) == (from_text.text, from_text.title)
    return from_bytes.text


@pytest.mark.parametrize("case", [
    *(text.encode("utf-8") for text in _BYTES_CASES),
    b"\xef\xbb\xbf<p>after a byte order mark</p>",
    '<meta charset="utf-8"><p>caf\u00e9</p>'.encode("utf-8") + b"\xff broken",
    '<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251"),
])
def test_utf8_bytes_read_in_place_give_what_their_decoded_text_gives(case: bytes) -> None:
    """UTF-8 input is parsed from its own bytes, not from its decoded text encoded again: the
    same text and title either way, with the declaration, BOM and bad bytes handled as before."""
    for chromeless in (False, True):
        assert _read_alike_from_bytes_and_text(case, chromeless)


def test_real_pages_read_in_place_give_what_their_decoded_text_gives() -> None:
    for page in [*postgresql_pages()[::40], *installation_guide_pages()[::60]]:
        _read_alike_from_bytes_and_text(page.html, chromeless=True)


_DECLARED_UTF8 = [
    '<meta charset="utf-8"><p>caf\u00e9 \u2014 \u041f\u0440\u0438\u0432\u0435\u0442</p>',
    '<?xml version="1.0" encoding="utf-8"?>\n<html><body><p>\u00e9 text role</p></body></html>',
    '\u3000 <?xml version="1.0"?><meta charset="utf-8"><p>wide space, then a declaration</p>',
    '\x1c<?XML version="1.0" ?><meta charset="utf-8"><p>a separator is whitespace too</p>',
    'x <?xml version="1.0"?><meta charset="utf-8"><p>text before: no declaration</p>',
    '<meta charset="utf-8"><?xml version="1.0"?><p>a declaration later on is markup</p>',
    '<?xml version="1.0" encoding="utf-8"?>',
    '<meta charset="utf-8"><p>\x00 nul, \x7f del, \U0001f600 astral</p>',
    '<meta charset="utf-8"><p>' + "x" * 300 + "</p>",
]


@pytest.mark.parametrize("case", [
    *(page.encode("utf-8") for page in _DECLARED_UTF8),
    '<meta charset="utf-8"><p>caf\u00e9</p>'.encode() + b"\xed\xa0\x80 a surrogate",
    '<meta charset="utf-8"><p>caf\u00e9</p>'.encode()[:-6],  # cut between characters: valid
    '<meta charset="utf-8"><p>\u00e9</p>'.encode()[:26],  # cut inside "\u00e9": not UTF-8
])
def test_a_page_read_in_place_is_read_as_its_decoded_text(
    case: bytes, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page declaring UTF-8 whose bytes are UTF-8 is read from them without being decoded:
    the same ExtractedText (text, title, encoding, reader, region) as through decode()."""
    from neardup_pipeline.text import extract

    in_place = [html_to_text(case, chromeless=c) for c in (False, True)]
    monkeypatch.setattr(extract, "utf8_in_place", lambda data, declared: False)
    assert in_place == [html_to_text(case, chromeless=c) for c in (False, True)]


def test_real_pages_read_in_place_are_read_as_their_decoded_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from neardup_pipeline.text import extract

    pages = [p.html for p in [*postgresql_pages()[::40], *installation_guide_pages()[::60]]]
    assert any(extract.utf8_in_place(page, None) for page in pages)
    in_place = [html_to_text(page, chromeless=True) for page in pages]
    monkeypatch.setattr(extract, "utf8_in_place", lambda data, declared: False)
    assert in_place == [html_to_text(page, chromeless=True) for page in pages]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"<", b">", b"\xc2", b"\xa0", b"\xe0", b"\xed", b"\x80",
                                 b"\xbf", b"\x9f", b"\xf0", b"\x90", b"\xf4", b"\x8f", b"\xff",
                                 b"\xc0", b"\xf5", "\u00e9".encode(), "\u6771".encode(),
                                 "\U0001f600".encode(), b"x" * 15, b"y" * 16]),
                max_size=16).map(b"".join))
def test_utf8_is_validated_as_python_decodes_it(data: bytes) -> None:
    from neardup_pipeline.text import _textwalk

    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert _textwalk.utf8_valid(data) is valid


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([" ", "\u3000", "\x1c", "\xa0", "x", "<", "?", ">", "<?xml",
                                 "<?XML", "?>", "\u00e9", "version='1.0'", "\n"]),
                max_size=10).map("".join))
def test_the_declaration_is_found_in_the_bytes_as_in_the_text(page: str) -> None:
    from neardup_pipeline.text import extract

    found = extract._XML_DECLARATION.match(page)
    expected = len(page[: found.end()].encode()) if found is not None else 0
    assert extract._declaration_bytes(page.encode()) == expected


def test_nul_bytes_and_invalid_utf8_do_not_break_parsing() -> None:
    extracted = html_to_text(b"<p>caf\xe9 \x00 ok \xff\xfe</p>")
    assert "ok" in extracted.text


@pytest.mark.parametrize(
    ("text", "language", "words"),
    [
        ("The quick brown foxes were jumping", "en", ["quick", "brown", "fox", "jump"]),
        ("Быстрые коричневые лисы прыгали через собак", "ru", ["быстр", "коричнев", "лис"]),
        ("Les guineus marrons saltaven per sobre dels gossos", "ca", ["guin", "marron", "salt"]),
    ],
)
def test_stop_words_and_stems(text: str, language: str, words: list[str]) -> None:
    result = Normalizer(language, **STEMMED).words(text)
    assert result.words[: len(words)] == words
    assert result.language == language


def test_persian_letter_forms_and_half_space_are_folded() -> None:
    arabic_forms = "كتاب‌هاي"  # Arabic kaf/yeh, ZWNJ
    persian_forms = "کتابهای"
    assert canonical_text(arabic_forms) == canonical_text(persian_forms)
    norm = Normalizer("fa", **STEMMED)
    assert norm.words("این کتاب‌ها را خواندم").words == norm.words("اين كتابها را خواندم").words
    assert "را" not in norm.words("این کتاب‌ها را خواندم").words  # a Persian stop word


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("This is a sentence written in plain English about databases and indexes.", "en"),
        ("Это предложение написано на русском языке о базах данных и индексах.", "ru"),
        ("Aquesta frase està escrita en català sobre les bases de dades i els índexs.", "ca"),
        ("این جمله به زبان فارسی درباره پایگاه داده و نمایه نوشته شده است.", "fa"),
    ],
)
def test_language_detection(text: str, code: str) -> None:
    assert detect_language(text) == code


def test_nfkc_and_casefold_make_variants_equal() -> None:
    norm = Normalizer("en")
    assert norm.words("ＳＴＲＡＳＳＥ ﬁle Straße").words == norm.words("strasse file STRASSE").words


def test_overlong_tokens_are_not_words() -> None:
    assert Normalizer("en", max_token_chars=10).words("short " + "x" * 50).words == ["short"]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.binary()))
def test_any_input_extracts_without_crashing(data: str | bytes) -> None:
    extracted = html_to_text(data)
    assert isinstance(extracted.text, str)
    Normalizer().words(extracted.text)


def test_words_as_they_are_whatever_the_language() -> None:
    """Stop words and stems off: the same word is the same word in a German and a Polish page,
    read from one table (the same objects page after page, which the word-hash memo keys on)."""
    plain = Normalizer()  # the defaults: words as they are
    german = plain.words("Die Katzen laufen schnell über die Straße und die Katzen schlafen")
    polish = plain.words("Koty biegają szybko. Die Katzen laufen schnell über die Straße")
    assert german.language == "de" and german.words[:4] == ["die", "katzen", "laufen", "schnell"]
    assert polish.words[-7:] == german.words[:7]
    assert all(a is b for a, b in zip(polish.words[-7:], german.words[:7], strict=True))
    stemmed = Normalizer(language="de", remove_stopwords=True, stem=True)
    assert stemmed.words("Die Katzen laufen").words == ["katz", "lauf"]  # the language's rules
