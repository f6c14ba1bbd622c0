"""Canonical words of a text: NFKC, casefold, Unicode word tokens, stop words out, Snowball stems.

The same rules apply to every document, so two copies of a page always give the same words.
Stop-word lists come from the `stop-words` package and stemmers from Snowball (PyStemmer's C
implementation when installed); language is configured or detected with py3langid.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice

import snowballstemmer
from stop_words import StopWordError, get_stop_words

# ISO 639-1 -> Snowball algorithm name, for every language Snowball stems.
SNOWBALL_LANGUAGES: dict[str, str] = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
REQUIRED_LANGUAGES = ("en", "ru", "ca", "fa")

_WORD = re.compile(r"\w+")
# Persian/Arabic orthography: one canonical letter for each look-alike, no diacritics, no tatweel;
# ZWNJ (half-space) joins the parts of one word, so it is removed rather than split on.
_PERSIAN_FOLD = str.maketrans(
    {
        "\u064a": "\u06cc",  # Arabic yeh -> Persian yeh
        "\u0649": "\u06cc",  # alef maksura -> Persian yeh
        "\u0643": "\u06a9",  # Arabic kaf -> Persian keheh
        "\u0629": "\u0647",  # teh marbuta -> heh
        "\u0640": None,  # tatweel
        "\u200c": None,  # zero-width non-joiner
        "\u200d": None,  # zero-width joiner
        **{chr(c): None for c in range(0x064B, 0x0660)},  # harakat
        "\u0670": None,  # superscript alef
        **{chr(0x06F0 + d): str(d) for d in range(10)},  # Persian digits
        **{chr(0x0660 + d): str(d) for d in range(10)},  # Arabic-Indic digits
    }
)
# Hostile-input cap: words read per document (a long novel has ~200k). Text beyond
# max_words * _CHARS_PER_WORD characters is not read either, so a 20 MB text never becomes
# millions of token objects (50 MB of paragraphs: 471 MB and 14 s without the cap).
DEFAULT_MAX_WORDS = 200_000
_CHARS_PER_WORD = 32
_STEM_CACHE_LIMIT = 500_000  # words per language; a crawl's vocabulary rarely exceeds it


@dataclass(frozen=True)
class Words:
    """The canonical words of a document, in order, and the language they were read in."""

    words: list[str]
    language: str | None


_ARABIC_SCRIPT = re.compile("[\u0600-\u06ff\u200c\u200d]")


def canonical_text(text: str) -> str:
    """NFKC + casefold + Persian/Arabic letter folding: the form every rule below reads."""
    text = unicodedata.normalize("NFKC", text).casefold()
    # translate() with a dict is slow on long texts: fold only texts in Arabic script.
    return text.translate(_PERSIAN_FOLD) if _ARABIC_SCRIPT.search(text) else text


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of the text's language (py3langid, offline), or None for no text."""
    sample = text[:1000]  # enough for a stable guess; the cost grows with it
    if not _WORD.search(sample):
        return None
    return str(_langid().classify(sample)[0])


@lru_cache(maxsize=1)
def _langid():  # type: ignore[no-untyped-def]
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=False)


@lru_cache(maxsize=64)
def stop_words_for(language: str) -> frozenset[str]:
    """Stop words of a language in canonical form (empty when no list exists)."""
    try:
        words = get_stop_words(language)
    except StopWordError:
        return frozenset()
    return frozenset(canonical_text(w) for w in words)


class _Stemmer:
    """A Snowball stemmer with a per-word cache (stemming dominates text cost without one)."""

    def __init__(self, algorithm: str) -> None:
        self._stemmer = snowballstemmer.stemmer(algorithm)
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def stem_all(self, words: list[str]) -> list[str]:
        cache = self._cache
        missing = [w for w in set(words) if w not in cache]
        if missing:
            with self._lock:  # Snowball stemmer objects keep state between calls
                stems = self._stemmer.stemWords(missing)
            if len(cache) > _STEM_CACHE_LIMIT:
                cache.clear()
            cache.update(zip(missing, stems, strict=True))
        return [cache[w] for w in words]


@lru_cache(maxsize=64)
def stemmer_for(language: str) -> _Stemmer | None:
    """The cached Snowball stemmer of a language, or None when Snowball has none."""
    algorithm = SNOWBALL_LANGUAGES.get(language)
    return _Stemmer(algorithm) if algorithm else None


class Normalizer:
    """Text -> canonical words, with one fixed set of rules for every document."""

    def __init__(
        self,
        language: str | None = None,
        *,
        remove_stopwords: bool = True,
        stem: bool = True,
        max_token_chars: int = 64,
        max_words: int = DEFAULT_MAX_WORDS,
    ) -> None:
        self.language = language
        self.max_words = max_words
        self.remove_stopwords = remove_stopwords
        self.stem = stem
        self.max_token_chars = max_token_chars

    def params(self) -> dict[str, object]:
        """What decides the words: an index built with other rules cannot be compared."""
        return {
            "language": self.language or "detect",
            "stopwords": self.remove_stopwords,
            "stem": self.stem,
            "max_token_chars": self.max_token_chars,
            "snowball": snowballstemmer.__version__ if hasattr(snowballstemmer, "__version__")
            else "3",
        }

    def words(self, text: str) -> Words:
        """Canonical words of `text` (stop words removed, stems), in document order."""
        canon = canonical_text(text[: self.max_words * _CHARS_PER_WORD])
        limit = self.max_token_chars
        found = (m.group() for m in _WORD.finditer(canon))
        tokens = list(islice((t for t in found if len(t) <= limit), self.max_words))
        language = self.language or detect_language(canon) if tokens else self.language
        if not tokens or language is None:
            return Words(tokens, language)
        if self.remove_stopwords:
            stops = stop_words_for(language)
            if stops:
                kept = [t for t in tokens if t not in stops]
                # A text made only of stop words ("to be or not to be") keeps its words.
                tokens = kept or tokens
        if self.stem:
            stemmer = stemmer_for(language)
            if stemmer is not None:
                tokens = stemmer.stem_all(tokens)
        return Words(tokens, language)
