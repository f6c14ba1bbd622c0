"""Main content of a page (the article, not its site chrome) with the chromeless page as fallback.

trafilatura (maintained, lxml-based) finds the main text; when it finds too little, compared with
the page without its chrome (chrome.drop_chrome), that text is used instead, so an unusual layout
never loses its text. Compared with the whole page instead, a short article under a big menu
would be "too little" and fall back to the menu and all. Site chrome (navigation, sidebars,
footers) is what makes distinct pages of one site look alike and syndicated copies of one article
look different; removing it helps both ways.
"""

from __future__ import annotations

import logging
import re

from neardup_pipeline.text.decode import decode_html
from neardup_pipeline.text.extract import DEFAULT_MAX_TAGS, ExtractedText, html_to_text

# Pages above this size skip main-content detection (its cost grows with the tree) and are read
# whole: boilerplate matters little against that much text.
MAX_MAIN_CONTENT_BYTES = 2 * 1024 * 1024
_WORD = re.compile(r"\w+")

logging.getLogger("trafilatura").setLevel(logging.ERROR)  # it warns on every odd page


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
    (extractors sometimes keep one block of a long page).
    """
    lean = html_to_text(html, encoding=encoding, max_bytes=max_bytes, max_tags=max_tags,
                        chromeless=True)
    if (len(html) > MAX_MAIN_CONTENT_BYTES or lean.parser == "scan"
            or len(lean.text.split(None, min_words)) < min_words):
        return lean  # under min_words without its chrome: nothing for an extractor to find
    markup = decode_html(html, encoding)[0] if isinstance(html, bytes) else html
    main = _trafilatura_text(markup)
    if main is None:
        return lean
    main_words, lean_words = len(_WORD.findall(main)), len(_WORD.findall(lean.text))
    if main_words < min(min_words, lean_words) or main_words < min_share * lean_words:
        return lean
    return ExtractedText(main, lean.title, lean.encoding, "trafilatura", lean.truncated)


def _trafilatura_text(markup: str) -> str | None:
    import trafilatura

    try:
        text = trafilatura.extract(
            markup,
            fast=True,  # no fallback extractors: ~20 ms a page instead of ~30
            include_comments=False,
            include_tables=True,
            include_links=False,
            include_images=False,
            include_formatting=False,
            deduplicate=False,
        )
    except (ValueError, RecursionError, MemoryError):  # markup its tree code cannot take
        return None
    return " ".join(text.split()) if text else None
