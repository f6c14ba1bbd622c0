"""Document -> signatures: extract, normalise, shingle, hash, sign. Pure: no I/O."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.document import Document as Document
from neardup_pipeline.methods.anchors.model import AnchorModel
from neardup_pipeline.methods.contract import (
    CorpusStats,
    Method,
    MethodCapabilities,
    lookup_keys,
)
from neardup_pipeline.methods.registry import build_methods
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.text.canonical import declared_canonical
from neardup_pipeline.text.content import main_content_text
from neardup_pipeline.text.extract import ExtractedText, html_to_text
from neardup_pipeline.text.normalize import Normalizer, canonical_text, detect_language
from neardup_pipeline.text.site import site_of
from neardup_pipeline.text.sniff import binary_kind
from neardup_pipeline.text.subject import subject_words

Status = Literal["ok", "no_text", "not_html"]

MIN_LANGUAGE_WORDS = 30  # a content region this long can name the page's language
_LANGUAGE_SAMPLE_CHARS = 4_000  # detection reads 1,000 canonical characters of it


def language_sample(text: str, region: str) -> str:
    """The text that names a page's language best: its content region when that holds most of
    the page's words, else the whole text. Another site's chrome before a copy (a standfirst, a
    cookie notice in the host's language) must not choose its stop words and stems; a code
    listing or a note in another language, a small part of a page, must not either."""
    region_words = len(region.split())
    if region_words >= MIN_LANGUAGE_WORDS and \
            2 * region_words > len(text.split(None, 2 * region_words)):
        return region
    return text


@dataclass(frozen=True)
class Fingerprint:
    """A document's signatures under each method, with the facts a verdict reports."""

    doc_id: str
    status: Status
    signatures: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, list[str]] = field(default_factory=dict)
    # The language the words were read in (see `language`, which is what compares).
    read_language: str | None = field(default=None, compare=False)
    word_count: int = 0
    title: str = ""
    text: str = ""
    truncated: bool = False
    content_hash: str = ""
    canonical_url: str | None = None  # the URL the page declares canonical (text/canonical.py)
    # The content region (text/blocks.py), "" for none: with `text`, what `language` reads
    # when the words were read in no language.
    region: str = field(default="", repr=False, compare=False)

    @cached_property
    def language(self) -> str | None:
        """The page's language: the one its words were read in, or, when the word rules read
        every language alike (words as they are), detected on first use only (a crawl that never
        asks pays no detection a page)."""
        if self.read_language is not None or not self.text:
            return self.read_language
        sample = language_sample(self.text, self.region)[:_LANGUAGE_SAMPLE_CHARS]
        return detect_language(canonical_text(sample))


class Fingerprinter:
    """Computes every configured method's signature of a document.

    `methods` by name, and `capabilities`: each method's optional capabilities, resolved when
    the methods are set (methods/contract.py).
    """

    def __init__(
        self,
        config: NearDupConfig | None = None,
        anchors_model: AnchorModel | None = None,
    ) -> None:
        self.config = config or NearDupConfig()
        self.methods = build_methods(self.config, anchors_model)
        text = self.text = self.config.text
        self.normalizer = Normalizer(
            text.language,
            remove_stopwords=text.remove_stopwords,
            stem=text.stem,
            max_token_chars=text.max_token_chars,
            max_words=text.max_words,
        )
        self.hasher = ShingleHasher(self.config.sketch.hash)

    @property
    def methods(self) -> dict[str, Method]:
        return self._methods

    @methods.setter
    def methods(self, methods: dict[str, Method]) -> None:
        self._methods = methods
        self.capabilities = {name: MethodCapabilities.of(m) for name, m in methods.items()}
        self._reads_region = any(c.across_sites is not None for c in self.capabilities.values())

    def params(self) -> dict[str, object]:
        """Everything that must match between two fingerprints for them to be comparable."""
        return {
            # Raised whenever the text a page is read to changes for the same settings: an index
            # filled under another reading then says so instead of mixing the two.
            "version": 2,
            "content": self.text.content,
            "text": self.normalizer.params(),
            "hash": self.hasher.params(),
            "methods": {name: m.params() for name, m in self.methods.items()},
        }

    def text_of(self, doc: Document) -> tuple[str, str, bool]:
        """(visible text, title, truncated) of a document: the text its signatures are made of."""
        extracted = self.extract(doc)
        return extracted.text, extracted.title, extracted.truncated

    def extract(self, doc: Document) -> ExtractedText:
        """The text a document is reduced to, and which reader produced it (`parser`: "text"
        for a document given as text, "binary" for an image or archive: no text, no words)."""
        reads_html = doc.html is not None and (doc.text is None or not str(doc.text).strip())
        body = doc.html if reads_html else doc.text
        if body is not None and binary_kind(body) is not None:
            return ExtractedText("", "", doc.encoding, "binary", False)
        if doc.html is not None and reads_html:
            content = self.text.content
            limits: dict[str, Any] = {"encoding": doc.encoding,
                                      "max_bytes": self.text.max_html_bytes,
                                      "max_tags": self.text.max_html_tags}
            return (
                main_content_text(doc.html, **limits) if content == "main"
                else html_to_text(doc.html, chromeless=content == "chromeless", **limits)
            )
        text = doc.text or ""
        if isinstance(text, bytes):
            text = text.decode(doc.encoding or "utf-8", errors="replace")
        truncated = len(text) > self.text.max_html_bytes
        return ExtractedText(text[: self.text.max_html_bytes], "", doc.encoding, "text", truncated)

    def fingerprint(self, doc: Document, stats: CorpusStats | None = None) -> Fingerprint:
        """Signatures of `doc`; status "no_text" when it has fewer than min_tokens words.

        `stats` (document frequencies, usually the index) completes the signatures of methods
        that need the corpus (rarewords); without it they treat every word as equally rare.
        """
        extracted = self.extract(doc)
        text, title, truncated = extracted.text, extracted.title, extracted.truncated
        canonical_url = declared_canonical(doc.html, doc.url)
        language: str | None = None
        if self.text.language is None and self.normalizer.reads_language:
            sample = language_sample(text, extracted.region)
            language = detect_language(sample) if sample is not text else None
        region: list[str] | None = None  # the content region's words, for copies across sites
        if extracted.region and self._reads_region:
            words, region = self.normalizer.words_with_passage(text, extracted.region, language)
        else:
            words = self.normalizer.words(text, language, detect=False)
        # Of the words' hashes, which the signatures read next (ShingleHasher memoises them):
        # the same words in the same order, the same hash, without joining the text again.
        content_hash = hashlib.blake2b(
            self.hasher.word_hashes(words.words).tobytes(), digest_size=16).hexdigest()
        if len(words.words) < self.text.min_tokens:
            return Fingerprint(
                doc.doc_id, "not_html" if extracted.parser == "binary" else "no_text",
                read_language=words.language,
                word_count=len(words.words), title=title, text=text, truncated=truncated,
                content_hash=content_hash, canonical_url=canonical_url,
                region=extracted.region,
            )
        signatures = {
            name: method.signature(words.words, self.hasher)
            for name, method in self.methods.items()
        }
        for name, caps in self.capabilities.items():  # two-step signatures: corpus DF is known
            if caps.completes is not None:
                signatures[name] = caps.completes.complete(signatures[name], stats, doc.doc_id)
        subject: list[str] | None = None
        for name, caps in self.capabilities.items():  # the title's subject: template-twin check
            if caps.uses_subject is not None:
                if subject is None:
                    subject = subject_words(title, lambda t: self.normalizer.words(
                        t, words.language, detect=False).words)
                signatures[name] = caps.uses_subject.with_subject(
                    signatures[name], subject, self.hasher)
        for name, caps in self.capabilities.items():  # copies under another site's chrome
            if caps.across_sites is not None:
                signatures[name] = caps.across_sites.with_site(
                    signatures[name], site_of(doc.url or doc.doc_id), region or [], self.hasher)
        keys = lookup_keys(self.methods, signatures)
        return Fingerprint(
            doc.doc_id, "ok", signatures, keys, words.language, len(words.words),
            title, text, truncated, content_hash, canonical_url, extracted.region,
        )

    def encode(self, fp: Fingerprint) -> dict[str, Any]:
        """Signatures in their stored (JSON-able) form."""
        return {name: self.methods[name].encode(sig) for name, sig in fp.signatures.items()}

    def decode(self, stored: dict[str, Any]) -> dict[str, Any]:
        """Stored signatures back to values, for the methods configured here."""
        return {
            name: self.methods[name].decode(raw)
            for name, raw in stored.items()
            if name in self.methods
        }
