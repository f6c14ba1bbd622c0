"""Main content of a page (the article, not its site chrome) with the chromeless page as fallback.

resiliparse (compiled, lexbor's HTML5 parser; its main-content rules drop navigation, headers,
footers, sidebars, comment sections and hidden blocks) finds the main text; when it finds too
little, compared with the page without its chrome (chrome.drop_chrome), that text is used instead,
so an unusual layout never loses its text. Compared with the whole page instead, a short article
under a big menu would be "too little" and fall back to the menu and all. Site chrome (navigation,
sidebars, footers) is what makes distinct pages of one site look alike and syndicated copies of one
article look different; removing it helps both ways.

Chosen by benchmarks/main_content.py over trafilatura (fast mode), readability-lxml and jusText:
on real pages of a few hundred sites it keeps the most main-content snippets, at a fifth to a
tenth of trafilatura's time a page, and distinct pages of the PostgreSQL manual and the
installation guide stay apart (trafilatura's text pairs some of them). It lets more boilerplate
through (bylines, dates, teasers) than trafilatura, and it drops every <ul> list, an article's
own too; both readings of a copy lose the same lists. Its choice of the main container is made
for the page as a whole, so a copy under another site's chrome can be read differently from its
original; the default reading (text/blocks.py) judges each block alone and finds more of such
copies (benchmarks/RESULTS.md, cross_site.py).
"""

from __future__ import annotations

import re

from neardup_pipeline.text.extract import DEFAULT_MAX_TAGS, ExtractedText, html_to_text

MAIN_READER = "resiliparse"  # ExtractedText.parser of a text its main-content rules found
# Pages above this size skip main-content detection and are read without their chrome: against
# that much text, boilerplate matters little.
MAX_MAIN_CONTENT_BYTES = 2 * 1024 * 1024
_WORD = re.compile(r"\w+")


def main_content_text(
    html: str | bytes,
    *,
    encoding: str | None = None,
    max_bytes: int = 20 * 1024 * 1024,
    max_tags: int = DEFAULT_MAX_TAGS,
    min_words: int = 50,
    min_share: float = 0.2,
) -> ExtractedText:
    """The page's main text, or its chromeless text when the main text is too small.

    Too small: fewer than `min_words` words, or under `min_share` of the chromeless page's words
    (extractors sometimes keep one block of a long page). `parser` says which: MAIN_READER, or
    the chromeless text's own reader.
    """
    lean = html_to_text(html, encoding=encoding, max_bytes=max_bytes, max_tags=max_tags,
                        chromeless=True)
    if (len(html) > MAX_MAIN_CONTENT_BYTES or lean.parser == "scan"
            or len(lean.text.split(None, min_words)) < min_words):
        return lean  # under min_words without its chrome: nothing for an extractor to find
    main = _resiliparse_text(html[:max_bytes], lean.encoding)
    if main is None:
        return lean
    main_words, lean_words = len(_WORD.findall(main)), len(_WORD.findall(lean.text))
    if main_words < min(min_words, lean_words) or main_words < min_share * lean_words:
        return lean
    return ExtractedText(main, lean.title, lean.encoding, MAIN_READER, lean.truncated)


def _resiliparse_text(html: str | bytes, encoding: str | None) -> str | None:
    """resiliparse's main content, whitespace collapsed; bytes are decoded by the encoding the
    chromeless reading found (lexbor's own decoder, without a second detection)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLParserException, HTMLTree

    try:
        tree = (HTMLTree.parse(html) if isinstance(html, str)
                else HTMLTree.parse_from_bytes(html, encoding or "utf-8", errors="replace"))
        text = extract_plain_text(tree, preserve_formatting=False, main_content=True,
                                  comments=False)
    except (HTMLParserException, LookupError, UnicodeError, ValueError):
        return None  # markup or an encoding name it cannot take
    return " ".join(text.split()) or None
