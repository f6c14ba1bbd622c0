"""Text of markup too big for a tree parser, by a linear scan (see extract.html_to_text's caps)."""

from __future__ import annotations

import re
from html import unescape

from neardup_pipeline.text.chrome import collapse_spaces
from neardup_pipeline.text.htmltags import INVISIBLE_TAGS

_TAG = re.compile(r"<[^<>]*>")  # stops at the next "<": an unclosed "<" never scans to the end
_TITLE = re.compile(r"<title\b[^<>]*>([^<]*)", re.IGNORECASE)
_INVISIBLE_OPEN = re.compile(
    r"<(" + "|".join(sorted(INVISIBLE_TAGS - {"head"})) + r")\b[^<>]*>|<!--", re.IGNORECASE
)


def scan_text(html: str) -> tuple[str, str]:
    """(title, text) in linear time: invisible elements and comments cut out (an unclosed one
    runs to the end, as in a browser), tags replaced by spaces, entities unescaped by the HTML5
    table (no DTD, no expansion beyond one character per reference)."""
    found = _TITLE.search(html)
    title = collapse_spaces(unescape(found.group(1))) if found else ""
    kept: list[str] = []
    pos = 0
    while (opening := _INVISIBLE_OPEN.search(html, pos)) is not None:
        kept.append(html[pos : opening.start()])
        closer = "-->" if opening.group(0) == "<!--" else f"</{opening.group(1)}"
        found_end = re.compile(re.escape(closer), re.IGNORECASE).search(html, opening.end())
        if found_end is None:
            pos = len(html)
            break
        close_end = html.find(">", found_end.start())
        pos = len(html) if close_end < 0 else close_end + 1
    kept.append(html[pos:])
    text = _TAG.sub(" ", "".join(kept))
    return title, collapse_spaces(unescape(text))
