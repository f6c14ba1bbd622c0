"""HTML -> visible text.

lxml.html parses (fast, libxml2); beautifulsoup4's UnicodeDammit decodes bytes by declared or
detected charset; BeautifulSoup is the fallback for markup lxml rejects. The parser never resolves
entities from a DTD, never loads external resources and never touches the network.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from html import unescape

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
_DROPPED: tuple[object, ...] = (*sorted(INVISIBLE_TAGS), lxml.etree.Comment)
_STRING_VALUE = lxml.etree.XPath("string()")  # all text nodes, concatenated in C
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Hostile-input caps (see README, "Hostile input"). libxml2 and BeautifulSoup build a node per tag:
# millions of tiny or unclosed tags cost gigabytes and minutes (3 M unclosed <i>: 3.4 GB, 214 s
# through the bs4 fallback). Above the cap the page is read by a linear scan instead of a parser.
DEFAULT_MAX_TAGS = 200_000
# Bytes read to decide the encoding of a page that declares none (chardet is pure Python).
DETECT_SAMPLE_BYTES = 256 * 1024
# The bs4 fallback (deep nesting) is pure Python: only pages up to this size may take it.
MAX_BS4_BYTES = 4 * 1024 * 1024
# libxml2 checks a tag's attributes for duplicates pairwise: 40k attributes take 7 s. A tag longer
# than this sends the page to the linear scan as well.
MAX_TAG_CHARS = 65_536
_LONG_TAG = re.compile(r"<[A-Za-z][^<>]{" + str(MAX_TAG_CHARS) + ",}")
_TAG = re.compile(r"<[^<>]*>")  # stops at the next "<": an unclosed "<" never scans to the end
_TITLE = re.compile(r"<title\b[^<>]*>([^<]*)", re.IGNORECASE)
_INVISIBLE_OPEN = re.compile(
    r"<(" + "|".join(sorted(INVISIBLE_TAGS - {"head"})) + r")\b[^<>]*>|<!--", re.IGNORECASE
)


@dataclass(frozen=True)
class ExtractedText:
    """The visible text of a page and how it was obtained."""

    text: str
    title: str
    encoding: str | None
    parser: str  # "lxml", "bs4", "scan" (above the tag cap) or "text"
    truncated: bool


def _parser() -> lxml.etree.HTMLParser:
    # Plain etree elements (no lxml.html class lookup: a Python call per element);
    # no_network: nothing outside the document is ever read; HTML parsing never loads a DTD.
    # UTF-8 bytes in, declared as such: a str makes libxml2 convert from UCS-4 (25% slower
    # parse), and the page's own <meta charset> must not override the decoding done already.
    return lxml.etree.HTMLParser(
        encoding="utf-8",
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
    if len(data) > DETECT_SAMPLE_BYTES:
        # UnicodeDammit runs chardet over the whole input when nothing is declared (20 MB:
        # 12-40 s): decide on a sample cut at an ASCII byte (never inside a character).
        limit = DETECT_SAMPLE_BYTES
        cut = max(data.rfind(b"\n", 0, limit), data.rfind(b" ", 0, limit))
        sample = UnicodeDammit(data[: cut if cut > 0 else DETECT_SAMPLE_BYTES],
                               known_definite_encodings=known, is_html=True)
        found = sample.original_encoding
        encoding = "utf-8" if found in (None, "ascii") else str(found)
        try:
            return data.decode(encoding, errors="replace"), encoding
        except LookupError:
            return data.decode("utf-8", errors="replace"), "utf-8"
    dammit = UnicodeDammit(data, known_definite_encodings=known, is_html=True)
    if dammit.unicode_markup is not None:
        return dammit.unicode_markup, dammit.original_encoding
    return data.decode("utf-8", errors="replace"), "utf-8"


def html_to_text(
    html: str | bytes,
    *,
    encoding: str | None = None,
    max_bytes: int = 20 * 1024 * 1024,
    max_tags: int = DEFAULT_MAX_TAGS,
) -> ExtractedText:
    """Visible text of an HTML page (script, style, comments and the like removed).

    Bounded: the first `max_bytes` are read; a page with more than `max_tags` tags is read by a
    linear scan (tags stripped, entities unescaped without any DTD) instead of a tree parser.
    """
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
    if html.count("<") > max_tags or _LONG_TAG.search(html):
        title, text = _scan_text(html)
        return ExtractedText(text, title, used_encoding, "scan", truncated)
    try:
        title, text = _lxml_text(html)
        parser = "lxml"
    except (lxml.etree.ParserError, ValueError, RecursionError):
        if len(html) > MAX_BS4_BYTES:
            title, text = _scan_text(html)
            parser = "scan"
        else:
            title, text = _bs4_text(html)
            parser = "bs4"
    return ExtractedText(text, title, used_encoding, parser, truncated)


def _scan_text(html: str) -> tuple[str, str]:
    """Linear-time text of markup too big for a tree: invisible elements and comments cut out
    (an unclosed one runs to the end, as in a browser), tags replaced by spaces, entities
    unescaped by the HTML5 table (no DTD, no expansion beyond one character per reference)."""
    found = _TITLE.search(html)
    title = _collapse_spaces(unescape(found.group(1))) if found else ""
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
    return title, _collapse_spaces(unescape(text))


def _lxml_text(html: str) -> tuple[str, str]:
    parser = _thread_parser()
    root = lxml.etree.fromstring(html.encode("utf-8", "replace"), parser=parser)
    if root is None:
        return "", ""
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        # libxml2 stops at 2048 levels of nesting and drops the rest: let bs4 read it all.
        raise ValueError("markup nested beyond libxml2's depth limit")
    title_el = root.find(".//title")
    title = _collapse_spaces(_STRING_VALUE(title_el)) if title_el is not None else ""
    lxml.etree.strip_elements(root, *_DROPPED, with_tail=False)
    # Block boundaries separate words, inline tags (<b>, <a>) do not: a space at the start of a
    # block's text and of its tail; then one XPath string() call instead of a Python text walk.
    for block in root.iter(*BLOCK_TAGS):
        block.text = " " + block.text if block.text else " "
        block.tail = " " + block.tail if block.tail else " "
    return title, _collapse_spaces(_STRING_VALUE(root))


def _collapse_spaces(text: object) -> str:
    """Runs of whitespace as one space, none at the ends (str.split: 4x faster than a regex)."""
    return " ".join(str(text).split())


def _bs4_text(html: str) -> tuple[str, str]:
    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for el in soup.find_all(list(INVISIBLE_TAGS)):
        el.decompose()
    return title, _collapse_spaces(soup.get_text(" "))
