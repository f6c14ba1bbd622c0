"""A text's content words with their character spans, so that passages found on words map back
to the exact characters of the text the caller gave.

The words follow the project's rules (text/normalize.py): word characters (\\w), NFKC and
casefold, the language's stop words out, Snowball stems. They are applied token by token on the
original text, where `Normalizer` reads a folded copy whose offsets differ; the word and shingle
hashes are the project's Rabin fingerprints (sketch/shingles.py). Numbers and one-character
tokens are not content words either: a list's numbering, a table of figures, a calendar or an
elided article (Catalan l', d') would pair unrelated texts (English's stop words hold every
letter already).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import snowballstemmer

from neardup_pipeline.reuse.settings import ReuseSettings
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.text.normalize import (
    DEFAULT_MAX_WORDS,
    SNOWBALL_LANGUAGES,
    canonical_text,
    detect_language,
    stop_words_for,
)

I64Array = npt.NDArray[np.int64]

_TOKEN = re.compile(r"\w+")
_MAX_TOKEN_CHARS = 64  # as Normalizer: longer runs are identifiers or junk, not words
_CACHE_LIMIT = 500_000  # tokens per rule set before the cache starts again


@dataclass(frozen=True)
class Tokens:
    """Content words of a text: word and shingle hashes, and each word's [start, end) in the
    text."""

    hashes: U64Array  # hash of each word
    shingles: U64Array  # hash of the `shingle`-word run starting at each word (none if shorter)
    starts: I64Array
    ends: I64Array
    language: str | None

    @property
    def words(self) -> int:
        return len(self.starts)


class _WordRules:
    """token -> canonical stem, or "" for a word that is not a content word; cached, as tokens
    repeat across texts."""

    def __init__(self, language: str | None, stopwords: bool, stem: bool) -> None:
        algorithm = SNOWBALL_LANGUAGES.get(language or "") if stem else None
        self._stemmer = snowballstemmer.stemmer(algorithm) if algorithm else None
        self._stops = stop_words_for(language) if stopwords and language else frozenset()
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()  # Snowball stemmers keep state between calls

    def stems(self, tokens: list[str]) -> list[str]:
        cache = self._cache
        missing = set(tokens).difference(cache)
        if missing:
            with self._lock:
                if len(cache) > _CACHE_LIMIT:
                    cache = self._cache = {}
                    missing = set(tokens)
                for token in missing:
                    cache[token] = self._canonical(token)
        return [cache[t] for t in tokens]

    def _canonical(self, token: str) -> str:
        # NFKC may split a token into several runs (a vulgar fraction): they stay one word.
        word = "".join(_TOKEN.findall(canonical_text(token)))
        if len(word) < 2 or word.isdigit() or word in self._stops:
            return ""
        return self._stemmer.stemWord(word) if self._stemmer is not None else word


@lru_cache(maxsize=64)
def _rules(language: str | None, stopwords: bool, stem: bool) -> _WordRules:
    return _WordRules(language, stopwords, stem)


_HASHER = ShingleHasher("rabin")


@dataclass(frozen=True)
class Words:
    """Every word token of a text with its [start, end), before any language's rules."""

    tokens: list[str]
    spans: I64Array  # shape (tokens, 2)


def read_words(text: str) -> Words:
    """The word tokens (runs of \\w, as Normalizer's) of `text` and their spans; at most
    DEFAULT_MAX_WORDS, none longer than Normalizer's token limit."""
    tokens: list[str] = []
    spans: list[tuple[int, int]] = []
    for match in _TOKEN.finditer(text):
        if len(tokens) >= DEFAULT_MAX_WORDS:
            break
        token = match.group()
        if len(token) <= _MAX_TOKEN_CHARS:
            tokens.append(token)
            spans.append(match.span())
    return Words(tokens, np.array(spans, dtype=np.int64).reshape(-1, 2))


def content_words(words: Words, language: str | None, settings: ReuseSettings) -> Tokens:
    """The content words of a text read in `language` (its stop words out, its stems), with
    their shingle hashes."""
    stems = _rules(language, settings.stopwords, settings.stem).stems(words.tokens)
    kept = [n for n, stem in enumerate(stems) if stem]
    bounds = words.spans[kept]
    content = [stems[n] for n in kept]
    if len(content) < settings.shingle:
        shingles = np.empty(0, dtype=np.uint64)
    else:
        shingles = _HASHER.shingle_hashes(content, settings.shingle)
    return Tokens(_HASHER.word_hashes(content) if content else np.empty(0, dtype=np.uint64),
                  shingles, bounds[:, 0].copy(), bounds[:, 1].copy(), language)


def text_language(text: str, settings: ReuseSettings) -> str | None:
    """The language a text is read in: the settings', else detected on three samples from its
    body (detection reads 1,000 characters: a book's or a page's first ones are often front
    matter, a scanner's stamp, a menu)."""
    if settings.language:
        return settings.language
    if len(text) <= 2000:
        return detect_language(text)
    return detect_language(" ".join(text[int(len(text) * f) :][:333] for f in (0.25, 0.5, 0.75)))


def tokenize(text: str, settings: ReuseSettings, language: str | None = None) -> Tokens:
    """The content words of `text` in `language` (else the settings', else detected)."""
    return content_words(read_words(text), language or text_language(text, settings), settings)
