"""HTML -> visible text.

lxml.html parses (fast, libxml2); beautifulsoup4's UnicodeDammit decodes bytes by declared or
detected charset; BeautifulSoup is the fallback for markup lxml rejects. The parser never resolves
entities from a DTD, never loads external resources and never touches the network.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

import lxml.etree
from bs4 import BeautifulSoup, UnicodeDammit

# Elements whose content is never shown as page text.
INVISIBLE_TAGS: frozenset[str] = frozenset(
    {"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object"}
)
# Elements that separate words visually; their text must not run into a neighbour's.
BLOCK_TAGS: tuple[str, ...] = (
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
    "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "option", "p", "pre",
    "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "title", "tr", "ul",
    "body", "html", "img", "input", "button", "select", "textarea", "label",
)
# Matches only the "<" of a block tag (the rest is lookahead), so the replacement is the literal
# " <": no Python-level template work per match, and the scan skips ahead to each "<".
_BLOCK_TAG_OPEN = re.compile(r"<(?=/?(?:" + "|".join(BLOCK_TAGS) + r")\b)", re.IGNORECASE)
_WS = re.compile(r"\s+")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class ExtractedText:
    """The visible text of a page and how it was obtained."""

    text: str
    title: str
    encoding: str | None
    parser: str  # "lxml", "bs4" or "text"
    truncated: bool


def _parser() -> lxml.etree.HTMLParser:
    # Plain etree elements (no lxml.html class lookup: a Python call per element);
    # no_network: nothing outside the document is ever read; HTML parsing never loads a DTD.
    return lxml.etree.HTMLParser(
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        huge_tree=True,  # no size caps that silently drop the end of big pages
    )


_LOCAL = threading.local()  # libxml2 parsers are not thread-safe: one per thread


def _thread_parser() -> lxml.etree.HTMLParser:
    parser: lxml.etree.HTMLParser | None = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = _parser()
    return parser


def decode_html(data: bytes, declared_encoding: str | None = None) -> tuple[str, str | None]:
    """Bytes -> str using the declared charset, then the document's own, then detection."""
    known = [declared_encoding] if declared_encoding else []
    dammit = UnicodeDammit(data, known_definite_encodings=known, is_html=True)
    if dammit.unicode_markup is not None:
        return dammit.unicode_markup, dammit.original_encoding
    return data.decode("utf-8", errors="replace"), "utf-8"


def html_to_text(
    html: str | bytes,
    *,
    encoding: str | None = None,
    max_bytes: int = 20 * 1024 * 1024,
) -> ExtractedText:
    """Visible text of an HTML page (script, style, comments and the like removed)."""
    truncated = len(html) > max_bytes
    if truncated:
        html = html[:max_bytes]
    used_encoding: str | None = encoding
    if isinstance(html, bytes):
        html, used_encoding = decode_html(html, encoding)
    html = _CONTROL.sub(" ", html)  # NUL and friends break libxml2 and mean nothing as text
    # Already decoded: an XHTML encoding declaration would make lxml refuse the string.
    html = _XML_DECLARATION.sub("", html, count=1)
    if not html.strip():
        return ExtractedText("", "", used_encoding, "lxml", truncated)
    try:
        title, text = _lxml_text(html)
        parser = "lxml"
    except (lxml.etree.ParserError, ValueError, RecursionError):
        title, text = _bs4_text(html)
        parser = "bs4"
    return ExtractedText(text, title, used_encoding, parser, truncated)


def _lxml_text(html: str) -> tuple[str, str]:
    # Block boundaries separate words, inline tags (<b>, <a>) do not: one regex pass puts a space
    # before every block tag, far cheaper than walking the tree in Python.
    parser = _thread_parser()
    root = lxml.etree.fromstring(_BLOCK_TAG_OPEN.sub(" <", html), parser=parser)
    if root is None:
        return "", ""
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        # libxml2 stops at 2048 levels of nesting and drops the rest: let bs4 read it all.
        raise ValueError("markup nested beyond libxml2's depth limit")
    title_el = root.find(".//title")
    title = _WS.sub(" ", "".join(_strings(title_el))).strip() if title_el is not None else ""
    lxml.etree.strip_elements(root, *INVISIBLE_TAGS, lxml.etree.Comment, with_tail=False)
    return title, _WS.sub(" ", "".join(_strings(root))).strip()


def _strings(element: lxml.etree._Element) -> Iterator[str]:
    """Text nodes of an element (str under an HTML parser: lxml decodes as it parses)."""
    return cast("Iterator[str]", element.itertext())


def _bs4_text(html: str) -> tuple[str, str]:
    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for el in soup.find_all(list(INVISIBLE_TAGS)):
        el.decompose()
    return title, _WS.sub(" ", soup.get_text(" ")).strip()
