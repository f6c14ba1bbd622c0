"""Canonical words of a text: NFKC, casefold, Unicode word tokens, stop words out, Snowball stems.

The same rules apply to every document, so two copies of a page always give the same words.
Stop-word lists come from the `stop-words` package and stemmers from Snowball (PyStemmer's C
implementation when installed); language is configured or detected by CLD2 (pycld2, a C library,
an order of magnitude faster than py3langid), with py3langid for the texts CLD2 cannot call.
With both off (`remove_stopwords`, `stem`), each word is kept as it is whatever the page's
language: one table serves every language, as fast as the stemmed path.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import pycld2
import snowballstemmer
from stop_words import StopWordError, get_stop_words

try:  # re.findall(r"\w+"), the stem cache, casefold, the Arabic-script and NFKC tests in C loops
    # (setup.py); without a compiler, Python
    from neardup_pipeline.text._words import StemTable as _StemTable
    from neardup_pipeline.text._words import arabic_script as _arabic_script
    from neardup_pipeline.text._words import casefold as _casefold
    from neardup_pipeline.text._words import known_stems as _known_stems
    from neardup_pipeline.text._words import nfkc_unchanged as _nfkc_unchanged
    from neardup_pipeline.text._words import word_tokens as _word_tokens
except ImportError:  # pragma: no cover - a build without the extension
    _word_tokens = None  # type: ignore[assignment]
    _known_stems = None  # type: ignore[assignment]
    _arabic_script = None  # type: ignore[assignment]
    _casefold = None  # type: ignore[assignment]
    _nfkc_unchanged = None  # type: ignore[assignment]
    _StemTable = None  # type: ignore[assignment,misc]

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
ANY_LANGUAGE = ""  # the word rules of no language: each word as it is

_WORD = re.compile(r"\w+")
_BLOCK_SEPARATORS = " \n"  # what the walks join blocks with: never inside a word
_ASCII_WORD = re.compile(r"[a-z0-9_]+")
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
    if not text.isascii() and (  # (ASCII is its own NFKC: no table built for it)
            _nfkc_unchanged is None or not _nfkc_unchanged(text, _nfkc_stable_table())):
        text = unicodedata.normalize("NFKC", text)
    text = _casefold(text) if _casefold is not None else text.casefold()  # the same str
    # translate() with a dict is slow on long texts: fold only texts in Arabic script. isascii()
    # rules most texts out for free; on the rest the C scan is 8x faster than the regex's.
    if not text.isascii() and (
        _arabic_script(text) if _arabic_script is not None else _ARABIC_SCRIPT.search(text)
    ):
        return text.translate(_PERSIAN_FOLD)
    return text


@lru_cache(maxsize=1)
def _nfkc_stable_table() -> bytes:
    """1 for each BMP character NFKC leaves in place whatever surrounds it (Unicode's quick
    check "yes" with no combining class, UAX #15): its own normal form, no canonical ordering
    to take part in, and never the second of a pair that composes (the trailing part of a
    canonical two-character decomposition, a Hangul vowel or final jamo). A text of such
    characters is its own NFKC. Built once from this Python's unicodedata, the database its
    normalize() reads."""
    composes_backward = {0x1161 + v for v in range(21)} | {0x11A8 + t for t in range(27)}
    for code in range(0x20000):  # past plane 1 only singletons decompose (CJK compatibility)
        decomposition = unicodedata.decomposition(chr(code))
        if decomposition and not decomposition.startswith("<"):
            parts = decomposition.split()
            if len(parts) == 2:
                composes_backward.add(int(parts[1], 16))
    table = bytearray(0x10000)
    for code in range(0x10000):
        char = chr(code)
        table[code] = not (0xD800 <= code <= 0xDFFF or code in composes_backward
                           or unicodedata.combining(char)
                           or unicodedata.normalize("NFKC", char) != char)
    return bytes(table)


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of the text's language (offline), or None for no text."""
    sample = text[:1000]  # enough for a stable guess; the cost grows with it
    if not _WORD.search(sample):
        return None
    try:
        found = str(pycld2.detect(sample.encode("utf-8", "replace"))[2][0][1])
    except pycld2.error:  # bytes CLD2 refuses (it checks UTF-8 validity itself)
        found = "un"
    if found != "un":
        base = found.split("-")[0]
        return _CLD2_CODES.get(base, base)
    return str(_langid().classify(sample)[0])  # too short or too mixed for CLD2


# CLD2's codes that differ from ISO 639-1 (Hebrew, Javanese, Norwegian Bokmal).
_CLD2_CODES = {"iw": "he", "jw": "jv", "nb": "no"}
LANGUAGE_DETECTOR = f"cld2-{pycld2.__version__}+py3langid"


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


class _WordRules:
    """Stop-word removal and Snowball stemming of one language, one cached dict lookup per word.

    The cache maps a token to its stem, or to "" for a stop word; stemming dominates text cost
    without it, and one lookup replaces a set test and a stem lookup. The compiled StemTable holds
    the same pairs keyed by characters, so a text whose words are all known is read to its stems
    without a token object (`known_stems_of`).
    """

    def __init__(self, language: str, remove_stopwords: bool, stem: bool) -> None:
        algorithm = SNOWBALL_LANGUAGES.get(language) if stem else None
        self._stemmer = snowballstemmer.stemmer(algorithm) if algorithm else None
        self._stops = stop_words_for(language) if remove_stopwords else frozenset()
        self._cache: dict[str, str] = {}
        self._stems: dict[str, str] = {}  # stop words too: a text of stop words only keeps them
        self._table = _StemTable() if _StemTable is not None else None
        self._lock = threading.Lock()

    def known_stems_of(
        self, text: str, room: int, max_chars: int, max_words: int
    ) -> list[str] | None:
        """apply(word tokens of `text`) read straight from the text, when every word is known
        and one is kept; None otherwise (the caller makes the tokens and calls apply)."""
        if self._table is None:
            return None
        return self._table.stems(text, room, max_chars, max_words)

    def apply(self, tokens: list[str]) -> list[str]:
        """Stems of the tokens that are not stop words; all tokens stemmed when none is left."""
        cache, stems = self._cache, self._stems  # only grow: full ones are replaced, not cleared
        # Every word known (most pages of a crawl): no set of the page's words at all.
        kept = _known_stems(tokens, cache) if _known_stems is not None else _cached(tokens, cache)
        if kept is None:
            cache, stems = self._learn(set(tokens))
            kept = list(filter(None, map(cache.__getitem__, tokens)))  # "" (a stop word) is out
        if kept or not tokens:
            return kept
        return list(map(stems.__getitem__, tokens))  # "to be or not to be" keeps its words

    def _learn(self, needed: set[str]) -> tuple[dict[str, str], dict[str, str]]:
        """Stem the words not known yet; the returned dicts hold every needed word."""
        with self._lock:  # Snowball stemmer objects keep state between calls
            cache, stems = self._cache, self._stems
            missing = list(needed.difference(cache))
            found = self._stemmer.stemWords(missing) if self._stemmer else missing
            new_stems = dict(zip(missing, found, strict=True))
            new = {w: "" if w in self._stops else s for w, s in new_stems.items()}
            if len(cache) > _STEM_CACHE_LIMIT:
                known = needed.difference(new)
                new.update((w, cache[w]) for w in known)
                new_stems.update((w, stems[w]) for w in known)
                self._cache, self._stems = new, new_stems
                if self._table is not None:  # its pairs stay right, but its size follows
                    self._table.clear()
                    self._table.update(new)
                return new, new_stems
            stems.update(new_stems)  # stems first: a word in the cache always has its stem
            cache.update(new)
            if self._table is not None:
                self._table.update(new)
            return cache, stems


def _cached(tokens: list[str], cache: dict[str, str]) -> list[str] | None:
    """The cache's non-empty values of the tokens, or None when one is not in it (known_stems
    of a build without the extension)."""
    try:
        return list(filter(None, map(cache.__getitem__, tokens)))
    except KeyError:
        return None


@lru_cache(maxsize=256)
def word_rules_for(language: str, remove_stopwords: bool, stem: bool) -> _WordRules:
    """The shared, cached word rules of a language (one per rule set)."""
    return _WordRules(language, remove_stopwords, stem)


class Normalizer:
    """Text -> canonical words, with one fixed set of rules for every document."""

    def __init__(
        self,
        language: str | None = None,
        *,
        remove_stopwords: bool = False,
        stem: bool = False,
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
            "language": self.language or f"detect:{LANGUAGE_DETECTOR}",
            "stopwords": self.remove_stopwords,
            "stem": self.stem,
            "max_token_chars": self.max_token_chars,
            "snowball": snowballstemmer.__version__ if hasattr(snowballstemmer, "__version__")
            else "3",
        }

    @property
    def reads_language(self) -> bool:
        """Whether the words depend on the text's language (its stop words, its stems)."""
        return self.remove_stopwords or self.stem

    def _rules_language(self, language: str) -> str:
        """Whose word rules read a text: its language's when they stem or drop stop words, else
        the one table every language shares (the same word objects page after page, which the
        word-hash memo keys on)."""
        return language if self.reads_language else ANY_LANGUAGE

    def words(self, text: str, language: str | None = None, *, detect: bool = True) -> Words:
        """Canonical words of `text` in document order (stop words removed and stems, where
        configured); `language` (else the configured one, else detected) decides the stop words
        and stems, and is the one the words are said to be in. `detect=False`: no detection when
        the rules read every language alike (the words are the same; their language is None)."""
        canon = canonical_text(text[: self.max_words * _CHARS_PER_WORD])
        limit = self.max_token_chars
        room = self.max_words * 2  # for the long ones dropped
        given = language or self.language
        # Detected before the tokens are made, so that a text of known words is read straight
        # to its stems; a text without words keeps no detected language, as if never detected.
        detects = detect or self.reads_language
        language = given or (detect_language(canon) if detects else None)
        rules = (word_rules_for(self._rules_language(language or ANY_LANGUAGE),
                                self.remove_stopwords, self.stem)
                 if language is not None or not detects else None)
        if rules is not None:
            kept = rules.known_stems_of(canon, room, limit, self.max_words)
            if kept is not None:
                return Words(kept, language)
        if _word_tokens is not None:
            tokens = _word_tokens(canon, room, limit)
        else:  # on ASCII text (casefolded) \w is [a-z0-9_], which matches 2.4x faster
            tokens = (_ASCII_WORD if canon.isascii() else _WORD).findall(canon)[:room]
            if tokens and max(map(len, tokens)) > limit:
                tokens = [t for t in tokens if len(t) <= limit]
        del tokens[self.max_words :]
        if not tokens:
            return Words(tokens, given)
        if rules is None:
            return Words(tokens, language)
        return Words(rules.apply(tokens), language)

    def words_with_passage(
        self, text: str, passage: str, language: str | None = None,
    ) -> tuple[Words, list[str]]:
        """The words of `text` (as `words(text, language, detect=False)`) and those of `passage`,
        a run of its blocks (the content region), reading each character once where the passage
        lies in the text between block separators: every rule reads a word at a time, and a
        block separator ends a word, so the text's words are those of its three parts in turn.
        Elsewhere (a passage not found so, a text past the caps, rules that detect a language
        part by part) each is read on its own."""
        at = text.find(passage) if passage else -1
        end = at + len(passage)
        if at >= 0 and (not at or text[at - 1] in _BLOCK_SEPARATORS) and (
                end == len(text) or text[end] in _BLOCK_SEPARATORS) and \
                len(text) <= self.max_words * _CHARS_PER_WORD and \
                not (self.reads_language and (language or self.language) is None):
            before, inside, after = (self.words(part, language, detect=False)
                                     for part in (text[:at], passage, text[end:]))
            words = before.words + inside.words + after.words
            if len(words) < self.max_words:  # else the caps may have cut a part
                return Words(words, inside.language), inside.words
        whole = self.words(text, language, detect=False)
        return whole, self.words(passage, whole.language, detect=False).words
