"""Fingerprinter and Deduplicator properties on any input and on simple real-looking text."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_pipeline import Deduplicator, Document, Fingerprinter, NearDupConfig
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.text.extract import html_to_text
from neardup_pipeline.text.normalize import detect_language
from tests.documents import ARTICLE, STEMMED


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(), st.binary()), st.booleans())
def test_any_document_gives_a_fingerprint(content: str | bytes, as_html: bool) -> None:
    fp = Fingerprinter()
    doc = (
        Document("x", html=content)
        if as_html or isinstance(content, bytes)
        else Document("x", text=content)
    )
    result = fp.fingerprint(doc)
    assert result.status in ("ok", "no_text", "not_html")
    if result.status == "ok":
        assert 0 <= result.signatures["simhash"] < 2**64
        assert "simhash" not in result.keys  # beside the bag, simhash only verifies
        assert len(result.keys["bag"]) >= 21


def test_simhash_alone_looks_pages_up_by_its_blocks() -> None:
    text = " ".join(f"word{n % 97} other{n % 13}" for n in range(300))
    alone = Fingerprinter(NearDupConfig(methods=("simhash",))).fingerprint(
        Document("x", text=text))
    assert len(alone.keys["simhash"]) == 4
    both = Fingerprinter().fingerprint(Document("x", text=text))
    assert both.signatures["simhash"] == alone.signatures["simhash"]
    assert set(both.keys) == {"bag"}


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1))
def test_identical_texts_give_identical_fingerprints(text: str) -> None:
    a = Fingerprinter().fingerprint(Document("a", text=text))
    b = Fingerprinter().fingerprint(Document("b", text=text))
    assert a.signatures == b.signatures and a.keys == b.keys


def test_html_and_its_text_give_the_same_fingerprint() -> None:
    fp = Fingerprinter()
    html = f"<html><body><nav></nav><p>{ARTICLE}</p><script>x()</script></body></html>"
    assert (
        fp.fingerprint(Document("a", html=html)).signatures
        == fp.fingerprint(Document("b", text=ARTICLE)).signatures
    )


def test_small_edit_is_a_duplicate_and_other_text_is_not() -> None:
    dedup = Deduplicator(MemoryIndex())
    assert not dedup.process(Document("orig", text=ARTICLE)).is_duplicate
    # A 360-word text with a dateline added: 2 of 64 bits change (a one-word substitution in a
    # text this short can move more than k = 3 bits; the quality issue measures that on real pages).
    edited = dedup.process(Document("edit", text="Posted on Monday. " + ARTICLE))
    assert edited.duplicate_of == "orig" and edited.cluster == "orig"
    # The default (auto) keeps every method's score; the most similar verdict names its method.
    assert set(edited.scores) == {"simhash", "bag"} and edited.method in edited.scores
    assert edited.similarity is not None and edited.scores["simhash"] >= 1 - 3 / 64
    other = dedup.process(Document("other", text=ARTICLE[::-1]))
    assert not other.is_duplicate and other.cluster == "other"


def test_a_page_is_never_its_own_duplicate() -> None:
    dedup = Deduplicator(MemoryIndex())
    dedup.process(Document("same", text=ARTICLE))
    again = dedup.process(Document("same", text=ARTICLE))
    assert not again.is_duplicate


def test_clusters_follow_the_first_document_of_a_group() -> None:
    dedup = Deduplicator(MemoryIndex())
    dedup.process(Document("first", text=ARTICLE))
    dedup.process(Document("second", text=ARTICLE + " One more sentence."))
    third = dedup.process(Document("third", text=ARTICLE + " Another closing line."))
    assert third.cluster == "first"


def test_order_of_unrelated_documents_does_not_matter() -> None:
    rng = random.Random(5)
    vocabulary = [f"term{i}" for i in range(5000)]
    docs = [" ".join(rng.choice(vocabulary) for _ in range(300)) for _ in range(30)]

    def verdicts(order: list[int]) -> dict[str, tuple[str | None, str | None]]:
        dedup = Deduplicator(MemoryIndex())
        out = {}
        for i in order:
            v = dedup.process(Document(str(i), text=docs[i]))
            out[str(i)] = (v.duplicate_of, v.cluster)
        return out

    forward = verdicts(list(range(30)))
    backward = verdicts(list(reversed(range(30))))
    assert forward == backward
    assert all(dup is None for dup, _ in forward.values())


def test_xxh64_configuration_works_end_to_end() -> None:
    dedup = Deduplicator(MemoryIndex(), NearDupConfig().replace(hash="xxh64"))
    dedup.process(Document("a", text=ARTICLE))
    assert dedup.process(Document("b", text=ARTICLE + " tail")).duplicate_of == "a"


def test_empty_and_textless_pages_are_no_text() -> None:
    dedup = Deduplicator(MemoryIndex())
    for doc in [Document("e", html=""), Document("t", html="<div><img src=x></div>")]:
        verdict = dedup.process(doc)
        assert verdict.status == "no_text" and not verdict.is_duplicate
    assert dedup.index.count() == 0


GERMAN = ("Die Katzen laufen schnell über die Straße, und am Abend schlafen sie lange im warmen "
          "Haus, während der Regen auf das Dach fällt und die Kinder Geschichten erzählen. ") * 4


def test_the_language_is_detected_on_first_use_when_the_words_need_none() -> None:
    """Words as they are (the default) read every language alike: a page's language is only
    detected when something asks for it (a record, `compare`), never on the check path."""
    fp = Fingerprinter().fingerprint(Document("de", text=GERMAN))
    assert fp.read_language is None and "language" not in vars(fp)  # nothing detected yet
    assert fp.language == "de"
    no_words = Fingerprinter().fingerprint(Document("empty", text="  "))
    assert no_words.status == "no_text" and no_words.language is None


def test_with_stop_words_and_stems_the_words_are_read_in_the_detected_language() -> None:
    stemmed = Fingerprinter(NearDupConfig.from_mapping(STEMMED))
    fp = stemmed.fingerprint(Document("de", text=GERMAN))
    assert fp.read_language == fp.language == "de"
    assert stemmed.normalizer.words(GERMAN, "de").words[:2] == ["katz", "lauf"]


def test_an_article_in_another_language_than_its_hosts_chrome_is_read_in_its_own() -> None:
    """The content region names the language when it holds most of the page's words: the
    host's English menus and notice around a German article do not make it English."""
    teaser = ("<div class='teaser'><h3>More from Daily Site</h3><p>Our reporters spent a "
              "week with the fishermen of the northern coast, who tell how the storms of this "
              "winter changed the harbour and the lives of the families around it.</p></div>")
    paragraphs = "".join(f"<p>{GERMAN}</p>" for _ in range(3))
    page = (f"<html><head><title>Katzen | Daily Site</title></head><body>{teaser * 3}"
            f"<article><h1>Katzen</h1>{paragraphs}</article>"
            f"<footer>About us, contact, privacy policy and terms of use.</footer></body></html>")
    extracted = html_to_text(page, chromeless=True)
    assert extracted.region and extracted.text.startswith("More from Daily Site")
    assert detect_language(extracted.text) == "en"  # the start of the page: the host's
    for config in (NearDupConfig(), NearDupConfig.from_mapping(STEMMED)):
        fp = Fingerprinter(config).fingerprint(Document("p", html=page, url="https://x.co.uk/"))
        assert fp.language == "de"
