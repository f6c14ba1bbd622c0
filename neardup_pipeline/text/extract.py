"""HTML -> visible text.

libxml2 parses, through lxml (its parser's events read by the C++ walk where built, else lxml's
tree); text.decode decodes bytes by declared or detected charset; BeautifulSoup is the fallback
for markup lxml rejects, and a linear scan (text.scan) reads markup too big for a tree. The
parser never resolves entities from a DTD, never loads external resources and never touches the
network.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import lxml.etree

from neardup_pipeline.text.chrome import STRING_VALUE, Chrome, collapse_spaces, python_walk
from neardup_pipeline.text.decode import decode, utf8_in_place
from neardup_pipeline.text.htmltags import INVISIBLE_TAGS
from neardup_pipeline.text.scan import scan_text
from neardup_pipeline.text.walk import (
    dotted,
    libxml2_events_refusal,
    python_walk_chosen,
    textwalk,
)

_DROPPED: tuple[object, ...] = (*sorted(INVISIBLE_TAGS), lxml.etree.Comment)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
# The declaration from its "<" on, in UTF-8 ("[^>]" never splits a character: ">" is one byte).
_XML_DECLARATION_UTF8 = re.compile(rb"<\?xml[^>]*\?>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_CONTROL_TO_SPACE = bytes.maketrans(_CONTROL_BYTES, b" " * len(_CONTROL_BYTES))
# Hostile-input caps (see README, "Hostile input"). libxml2 and BeautifulSoup build a node per tag:
# millions of tiny or unclosed tags cost gigabytes and minutes through the bs4 fallback. Above
# the cap the page is read by a linear scan instead of a parser.
DEFAULT_MAX_TAGS = 200_000
# The bs4 fallback (deep nesting) is pure Python: only pages up to this size may take it.
MAX_BS4_BYTES = 4 * 1024 * 1024
# libxml2 checks a tag's attributes for duplicates pairwise: tens of thousands of attributes take
# seconds. A tag longer than this sends the page to the linear scan as well.
MAX_TAG_CHARS = 65_536
_LONG_TAG = re.compile(r"<[A-Za-z][^<>]{" + str(MAX_TAG_CHARS) + ",}")
# Fewer words left without the link-only blocks, on a page that does not mark its main content:
# they may have been its content (a table of contents, an index page), and only those before the
# page's title go, with the landmarks. The floor main-content extractors use.
MIN_CHROMELESS_WORDS = 50
# Fewer words in a chromeless page's running text (text/blocks.py): it has none to speak of (a
# reference page of short lines, an index of links), and it is read without its chrome instead.
MIN_BLOCK_WORDS = 20
# Chrome levels of a chromeless page, in the order tried: the first with enough text is the text.
_CHROMELESS_LEVELS = (Chrome.BLOCKS, Chrome.LINKS, Chrome.LINKS_BEFORE_TITLE, Chrome.LANDMARKS,
                      Chrome.KEEP)

# False: the pure-Python walk (the same text, slower). Module flags, so a benchmark can switch
# a walk off in one process.
NATIVE_WALK = textwalk is not None and not python_walk_chosen()
# Why the C++ walk may not read libxml2's parse events here (None: it may).
_EVENTS_REFUSAL = libxml2_events_refusal()
# Whether the C++ walk reads libxml2's parse events (`_textwalk.libxml2_walk`): the same walk as
# of lxml's tree, at under half the cost (no tree built and freed). False: it reads lxml's tree
# (the same text and title; tests compare them).
LIBXML2_EVENTS = _EVENTS_REFUSAL is None


def walk_in_use() -> str:
    """Which walk reads pages in this process, in one line (for logs and `neardup --version`)."""
    if not NATIVE_WALK:
        why = ("compiled walk not built" if textwalk is None else
               "NEARDUP_PYTHON_WALK=1" if python_walk_chosen() else "compiled walk switched off")
        return f"Python walk ({why})"
    if LIBXML2_EVENTS:
        return f"libxml2 {dotted(textwalk.LIBXML2_HEADERS)} events (C++)"
    return f"lxml tree (C++): {_EVENTS_REFUSAL or 'libxml2 events switched off'}"


@dataclass(frozen=True)
class ExtractedText:
    """The visible text of a page and how it was obtained."""

    text: str
    title: str
    encoding: str | None
    parser: str  # "lxml", "bs4", "scan" (above the tag cap) or "text"
    truncated: bool
    # The running text's content region (blocks.content_region) when it is a part of `text`
    # (under four fifths of its words): what another site's copy of the page shares with it.
    region: str = ""


def _parser() -> lxml.etree.HTMLParser:
    # Plain etree elements (no lxml.html class lookup: a Python call per element);
    # no_network: nothing outside the document is ever read; HTML parsing never loads a DTD.
    # UTF-8 bytes in, declared as such: a str makes libxml2 convert from UCS-4 (a slower
    # parse), and the page's own <meta charset> must not override the decoding done already.
    # collect_ids=False: no table of id attributes (nothing here looks an element up by id;
    # the parse is faster without it, the tree the same).
    return lxml.etree.HTMLParser(
        encoding="utf-8",
        collect_ids=False,
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        huge_tree=True,  # no size caps that silently drop the end of big pages
    )


_LOCAL = threading.local()  # libxml2 parsers are not thread-safe: one per thread


def _thread_parser() -> lxml.etree.HTMLParser:
    """This thread's libxml2 HTML parser, with the options every tree of a page is parsed by."""
    parser: lxml.etree.HTMLParser | None = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = _parser()
    return parser


def html_to_text(
    html: str | bytes,
    *,
    encoding: str | None = None,
    max_bytes: int = 20 * 1024 * 1024,
    max_tags: int = DEFAULT_MAX_TAGS,
    chromeless: bool = False,
) -> ExtractedText:
    """Visible text of an HTML page (script, style, comments and the like removed).

    `chromeless`: its running text (text/blocks.py); when that has fewer than MIN_BLOCK_WORDS
    words, without the site chrome (see `chrome.drop_chrome`); when that leaves fewer than
    MIN_CHROMELESS_WORDS words on a page that does not mark its main content, without the
    landmarks and the link-only blocks before the title only; when nothing is left, whole.
    Bounded: the first `max_bytes` are read; a page with more than `max_tags` tags is read by a
    linear scan (tags stripped, entities unescaped without any DTD) instead of a tree parser.
    """
    truncated = len(html) > max_bytes
    if truncated:
        html = html[:max_bytes]
    used_encoding: str | None = encoding
    utf8: bytes | None = None  # the str's UTF-8, when it is the input itself
    markup: str | None = None  # the page as text; None: decoded only for a reader of text
    if isinstance(html, bytes) and textwalk is not None and utf8_in_place(html, encoding):
        utf8, used_encoding = html[_declaration_bytes(html):], "utf-8"  # as decode's shortcut
    else:
        if isinstance(html, bytes):
            raw = html
            html, used_encoding, exact = decode(raw, encoding)
            utf8 = raw if exact else None
        declaration = _XML_DECLARATION.match(html)  # the text is decoded already
        if declaration is not None:
            if utf8 is not None:
                utf8 = utf8[len(html[: declaration.end()].encode("utf-8")) :]
            html = html[declaration.end():]
        markup = html

    def text_of_page() -> str:
        return markup if markup is not None else (utf8 or b"").decode("utf-8")

    # UTF-8 for libxml2, with NUL and friends as spaces: they break it and mean nothing as text
    # (bytes.translate: a tenth of a regex substitution over the str; skipped when the scan
    # below finds none, as on most pages).
    data = utf8 if utf8 is not None else text_of_page().encode("utf-8", "replace")
    if textwalk is not None:  # the four questions in one pass over the bytes
        has_role, many_tags, long_tag, controls = textwalk.markup_facts(
            data, max_tags, MAX_TAG_CHARS)
        too_big = many_tags or long_tag
        if controls:
            data = data.translate(_CONTROL_TO_SPACE)
    else:  # neither cap can be passed by a page shorter than it: most pages skip both scans
        data = data.translate(_CONTROL_TO_SPACE)
        has_role = b"role" in data
        page = text_of_page()
        too_big = bool((len(page) > max_tags and page.count("<") > max_tags) or (
            len(page) > MAX_TAG_CHARS and _LONG_TAG.search(page)))
    if not data or data.isspace():  # (bytes.strip()'s whitespace, without the copy)
        return ExtractedText("", "", used_encoding, "lxml", truncated)
    if too_big:
        title, text = scan_text(_CONTROL.sub(" ", text_of_page()))
        return ExtractedText(text, title, used_encoding, "scan", truncated)
    roles = chromeless and has_role  # (a regex for the attribute costs a scan as long)
    levels = _CHROMELESS_LEVELS if chromeless else (Chrome.KEEP,)
    read_by = "lxml"
    region = ""
    try:
        title, text, region = _tree_text_at(data, levels, roles)
    except (lxml.etree.ParserError, ValueError, RecursionError):
        page = _CONTROL.sub(" ", text_of_page())
        if len(page) > MAX_BS4_BYTES:
            title, text = scan_text(page)
            read_by = "scan"
        else:
            title, text = _bs4_text(page)
            read_by = "bs4"
    return ExtractedText(text, title, used_encoding, read_by, truncated, region)


def _declaration_bytes(utf8: bytes) -> int:
    """Bytes the XML declaration (_XML_DECLARATION) takes at the start of the page these UTF-8
    bytes are, 0 for none: whitespace (the str's, Unicode's), then the declaration at the first
    "<", read without decoding the page."""
    first = utf8.find(b"<")
    if first < 0 or (first and not utf8[:first].decode("utf-8").isspace()):
        return 0
    found = _XML_DECLARATION_UTF8.match(utf8, first)
    return found.end() if found is not None else 0


def _tree_text_at(data: bytes, levels: tuple[Chrome, ...], roles: bool) -> tuple[str, str, str]:
    """(title, text, content region) of UTF-8 markup at the first of `levels` that leaves
    enough text (the region: only when that is the running text).

    The running text (Chrome.BLOCKS) is enough when it has MIN_BLOCK_WORDS words. The page
    without its chrome (Chrome.LINKS) is enough when it has MIN_CHROMELESS_WORDS words or the
    page marks its main content; when it has fewer, link-only blocks were the content (a table
    of contents, an index page): those before the page's title are still a menu, and the
    landmarks are chrome by the markup's own word. The later levels need any text at all; the
    last is taken whatever it holds. The walk is the C++ one where built (NATIVE_WALK).
    """
    read_limit = 4 * len(data)
    root: lxml.etree._Element | None = None
    walk: textwalk._Tree | None = None
    if NATIVE_WALK and LIBXML2_EVENTS:  # parsed into the walk at once
        walk, raw_title = textwalk.libxml2_walk(data, roles, read_limit)
        title = collapse_spaces(raw_title) if raw_title is not None else ""
    else:
        native = NATIVE_WALK and textwalk is not None
        root, title = _lxml_tree(data, strip=not native)  # the C++ walk skips them itself
        if root is None:
            return "", "", ""
        if native:
            walk = textwalk.chrome_walk(root, roles, read_limit)
    text = region = ""
    for n, level in enumerate(levels):
        if walk is not None:
            text, marked, region = walk.text(level)
        else:
            if n:  # the Python walk removes the chrome from the tree: a fresh one
                root, _ = _lxml_tree(data)
            assert root is not None  # the Python walk reads lxml's tree only
            text, marked, region = python_walk(root, level, roles, read_limit)
        if n == len(levels) - 1:
            break
        if level == Chrome.BLOCKS:
            if len(text.split(None, MIN_BLOCK_WORDS)) >= MIN_BLOCK_WORDS:
                break
        elif level == Chrome.LINKS:
            if text and (marked or len(text.split(None, MIN_CHROMELESS_WORDS))
                         >= MIN_CHROMELESS_WORDS):
                break
        elif text:
            break
    return title, text, region


def _lxml_tree(data: bytes, strip: bool = True) -> tuple[lxml.etree._Element | None, str]:
    """(root, title) of UTF-8 markup; `strip`: the invisible elements removed from the tree."""
    parser = _thread_parser()
    root = lxml.etree.fromstring(data, parser=parser)
    if root is None:
        return None, ""
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        # libxml2 stops at 2048 levels of nesting and drops the rest: let bs4 read it all.
        raise ValueError("markup nested beyond libxml2's depth limit")
    if NATIVE_WALK and textwalk is not None:
        raw_title: str | None = textwalk.libxml2_title(root)
    else:
        title_el = root.find(".//title")
        raw_title = str(STRING_VALUE(title_el)) if title_el is not None else None
    title = collapse_spaces(raw_title) if raw_title is not None else ""
    if strip:
        lxml.etree.strip_elements(root, *_DROPPED, with_tail=False)
    return root, title


def _bs4_text(html: str) -> tuple[str, str]:
    from bs4 import BeautifulSoup  # the fallback: its import is kept off every start-up

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for el in soup.find_all(list(INVISIBLE_TAGS)):
        el.decompose()
    return title, collapse_spaces(soup.get_text(" "))
