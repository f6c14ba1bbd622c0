"""HTML -> visible text.

libxml2 parses, through lxml (its parser's events read by the C++ walk where built, else lxml's
tree); beautifulsoup4's UnicodeDammit decodes bytes by declared or detected charset;
BeautifulSoup is the fallback for markup lxml rejects. The parser never resolves
entities from a DTD, never loads external resources and never touches the network.
"""

from __future__ import annotations

import codecs
import enum
import os
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from html import unescape

import lxml.etree
from bs4 import BeautifulSoup, UnicodeDammit
from bs4.dammit import EncodingDetector

from neardup_pipeline.config import HTML_PARSERS, HtmlParser
from neardup_pipeline.text.htmltags import (
    BLOCK_TAGS,
    INVISIBLE_TAGS,
    LANDMARK_ROLES,
    LANDMARK_TAGS,
    LINK_BLOCK_TAGS,
    MAIN_TAGS,
    PAGE_LANDMARK_TAGS,
    SECTIONING_TAGS,
)

try:  # the same walk in C++ over lxml's tree (setup.py); without a compiler, Python's below
    from neardup_pipeline.text import _textwalk
except ImportError:  # pragma: no cover - a build without the extension
    _textwalk = None  # type: ignore[assignment]

_DROPPED: tuple[object, ...] = (*sorted(INVISIBLE_TAGS), lxml.etree.Comment)
_STRING_VALUE = lxml.etree.XPath("string()")  # all text nodes, concatenated in C
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_CONTROL_TO_SPACE = bytes.maketrans(_CONTROL_BYTES, b" " * len(_CONTROL_BYTES))
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
_LINK_BLOCK_SET = frozenset(LINK_BLOCK_TAGS)
_HAS_ROLE = lxml.etree.XPath("//*[@role]")
# Fewer words left without the link-only blocks, on a page that does not mark its main content:
# they may have been its content (a table of contents, an index page), and only those before the
# page's title go, with the landmarks. The floor main-content extractors use.
MIN_CHROMELESS_WORDS = 50
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
    # collect_ids=False: no table of id attributes (nothing here looks an element up by id;
    # the parse is 5-10% faster without it, the tree the same).
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
    parser: lxml.etree.HTMLParser | None = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = _parser()
    return parser


def decode_html(data: bytes, declared_encoding: str | None = None) -> tuple[str, str | None]:
    """Bytes -> str using the declared charset, then the document's own, then detection."""
    text, encoding, _ = _decode(data, declared_encoding)
    return text, encoding


def _decode(data: bytes, declared_encoding: str | None) -> tuple[str, str | None, bool]:
    """decode_html, and whether the str's UTF-8 is `data` itself (a strict UTF-8 or ASCII decode
    without a byte order mark), so the bytes can be parsed without encoding the str again."""
    if _declared_utf8(data, declared_encoding):  # UnicodeDammit's first try, without its setup
        try:
            return data.decode("utf-8"), "utf-8", True
        except UnicodeDecodeError:
            pass  # UnicodeDammit goes on to the next candidates
    return _dammit_decode(data, declared_encoding)


def _dammit_decode(data: bytes, declared_encoding: str | None) -> tuple[str, str | None, bool]:
    """_decode by UnicodeDammit alone (the reference of its shortcut)."""
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
            return data.decode(encoding, errors="replace"), encoding, False
        except LookupError:
            return data.decode("utf-8", errors="replace"), "utf-8", False
    dammit = UnicodeDammit(data, known_definite_encodings=known, is_html=True)
    if dammit.unicode_markup is not None:
        exact = (dammit.original_encoding in ("utf-8", "ascii")
                 and not dammit.contains_replacement_characters
                 and not data.startswith(codecs.BOM_UTF8))
        return dammit.unicode_markup, dammit.original_encoding, exact
    return data.decode("utf-8", errors="replace"), "utf-8", False


def _declared_utf8(data: bytes, declared_encoding: str | None) -> bool:
    """Whether UnicodeDammit would try a strict "utf-8" decode of `data` first: no byte order
    mark (it strips one, then decodes the rest), and declared so by the caller (the HTTP
    header) or, with nothing declared, by the page itself (bs4's own search). Exactly "utf-8":
    an alias ("UTF8") is decoded alike but reported under its own name, so it is left to
    UnicodeDammit, as are pages past the detection sample, whose declaration it seeks there."""
    if len(data) > DETECT_SAMPLE_BYTES or data[:2] in (b"\xfe\xff", b"\xff\xfe") or (
            data[:3] == codecs.BOM_UTF8 or data[:4] == b"\x00\x00\xfe\xff"):
        return False
    if declared_encoding is not None:
        return declared_encoding == "utf-8"
    return EncodingDetector.find_declared_encoding(data, is_html=True) == "utf-8"


def html_to_text(
    html: str | bytes,
    *,
    encoding: str | None = None,
    max_bytes: int = 20 * 1024 * 1024,
    max_tags: int = DEFAULT_MAX_TAGS,
    chromeless: bool = False,
    parser: HtmlParser = "lxml",
) -> ExtractedText:
    """Visible text of an HTML page (script, style, comments and the like removed).

    `chromeless`: without the site chrome (see `drop_chrome`); when that leaves fewer than
    MIN_CHROMELESS_WORDS words on a page that does not mark its main content, without the
    landmarks and the link-only blocks before the title only; when nothing is left, whole.
    Bounded: the first `max_bytes` are read; a page with more than `max_tags` tags is read by a
    linear scan (tags stripped, entities unescaped without any DTD) instead of a tree parser.
    `parser`: the tree parser, "lxml" (libxml2) or "lexbor" (see NearDupConfig.html_parser).
    """
    if parser not in HTML_PARSERS:
        raise ValueError(f"parser must be one of {', '.join(HTML_PARSERS)}, got {parser!r}")
    truncated = len(html) > max_bytes
    if truncated:
        html = html[:max_bytes]
    used_encoding: str | None = encoding
    utf8: bytes | None = None  # the str's UTF-8, when it is the input itself
    if isinstance(html, bytes):
        raw = html
        html, used_encoding, exact = _decode(raw, encoding)
        utf8 = raw if exact else None
    declaration = _XML_DECLARATION.match(html)  # the text is decoded already
    if declaration is not None:
        if utf8 is not None:
            utf8 = utf8[len(html[: declaration.end()].encode("utf-8")) :]
        html = html[declaration.end():]
    # UTF-8 for libxml2, with NUL and friends as spaces: they break it and mean nothing as text
    # (bytes.translate: a tenth of a regex substitution over the str).
    data = (utf8 if utf8 is not None else html.encode("utf-8", "replace")).translate(
        _CONTROL_TO_SPACE)
    if not data or data.isspace():  # (bytes.strip()'s whitespace, without the copy)
        return ExtractedText("", "", used_encoding, "lxml", truncated)
    if _textwalk is not None:  # the three questions in one pass over the bytes
        has_role, many_tags, long_tag = _textwalk.markup_facts(data, max_tags, MAX_TAG_CHARS)
        too_big = many_tags or long_tag
    else:  # neither cap can be passed by a page shorter than it: most pages skip both scans
        has_role = b"role" in data
        too_big = bool((len(html) > max_tags and html.count("<") > max_tags) or (
            len(html) > MAX_TAG_CHARS and _LONG_TAG.search(html)))
    if too_big:
        title, text = _scan_text(_CONTROL.sub(" ", html))
        return ExtractedText(text, title, used_encoding, "scan", truncated)
    roles = chromeless and has_role  # (a regex for the attribute costs a scan as long)
    levels = _CHROMELESS_LEVELS if chromeless else (Chrome.KEEP,)
    read_by: str = parser
    try:
        title, text = _tree_text_at(data, levels, roles, parser)
    except (lxml.etree.ParserError, ValueError, RecursionError):
        html = _CONTROL.sub(" ", html)
        if len(html) > MAX_BS4_BYTES:
            title, text = _scan_text(html)
            read_by = "scan"
        else:
            title, text = _bs4_text(html)
            read_by = "bs4"
    return ExtractedText(text, title, used_encoding, read_by, truncated)


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


class Chrome(enum.IntEnum):
    """How much site chrome a walk of the tree removes (`_python_walk`, `_textwalk`)."""

    KEEP = 0
    LANDMARKS = 1  # nav, aside, page-level header and footer, ARIA landmark roles
    LINKS_BEFORE_TITLE = 2  # and the link-only blocks before the page's title (h1, else h2)
    LINKS = 3  # and every block whose words are all link text


# Chrome levels of a chromeless page, in the order tried: the first with enough text is the text.
_CHROMELESS_LEVELS = (Chrome.LINKS, Chrome.LINKS_BEFORE_TITLE, Chrome.LANDMARKS, Chrome.KEEP)
# False: the pure-Python walk (the same text, 0.4-0.7 ms more a page). NEARDUP_PYTHON_WALK=1 in
# the environment chooses it in every process (benchmarks: both walks in one run).
NATIVE_WALK = _textwalk is not None and os.environ.get("NEARDUP_PYTHON_WALK", "") != "1"


def _binds(library: str) -> bool:
    """Whether the C++ walk is built and can bind the functions of `library` ("libxml2",
    "lexbor") from the extension that holds them."""
    if _textwalk is None:
        return False
    try:
        getattr(_textwalk, f"_load_{library}")()
    except ImportError:
        return False
    return True


# Whether the C++ walk reads libxml2's parse events (`_textwalk.libxml2_walk`): the same walk as
# of lxml's tree, at under half the cost (no tree built and freed). False: it reads lxml's tree
# (the same text and title; tests compare them).
LIBXML2_EVENTS = _binds("libxml2")


def lexbor_available() -> bool:
    """Whether the lexbor parser can run here: the C++ walk is built and selectolax installed."""
    return _binds("lexbor")


def _tree_text_at(
    data: bytes, levels: tuple[Chrome, ...], roles: bool, parser: HtmlParser = "lxml",
) -> tuple[str, str]:
    """(title, text) of UTF-8 markup at the first of `levels` that leaves enough text.

    The first level's text is enough when it has MIN_CHROMELESS_WORDS words or the page marks
    its main content; when it has fewer, link-only blocks were the content (a table of
    contents, an index page): those before the page's title are still a menu, and the
    landmarks are chrome by the markup's own word. The later levels need any text at all; the
    last is taken whatever it holds. The walk is the C++ one where built (NATIVE_WALK); lexbor's
    tree is only ever read by it.
    """
    read_limit = 4 * len(data)
    root: lxml.etree._Element | None = None
    walk: _textwalk._Tree | None = None
    if parser == "lexbor" or (NATIVE_WALK and LIBXML2_EVENTS):  # parsed into the walk at once
        if _textwalk is None:
            raise RuntimeError("the lexbor parser needs neardup's compiled walk (_textwalk)")
        read = _textwalk.lexbor_walk if parser == "lexbor" else _textwalk.libxml2_walk
        walk, raw_title = read(data, roles, read_limit)
        title = _collapse_spaces(raw_title) if raw_title is not None else ""
    else:
        native = NATIVE_WALK and _textwalk is not None
        root, title = _lxml_tree(data, strip=not native)  # the C++ walk skips them itself
        if root is None:
            return "", ""
        if native:
            walk = _textwalk.chrome_walk(root, roles, read_limit)
    text = ""
    for n, level in enumerate(levels):
        if walk is not None:
            text, marked = walk.text(level)
        else:
            if n:  # the Python walk removes the chrome from the tree: a fresh one
                root, _ = _lxml_tree(data)
            assert root is not None  # the Python walk reads lxml's tree only
            text, marked = _python_walk(root, level, roles, read_limit)
        if n == 0 and len(levels) > 1:
            if text and (marked or len(text.split(None, MIN_CHROMELESS_WORDS))
                         >= MIN_CHROMELESS_WORDS):
                break
        elif text:
            break
    return title, text


def _lxml_tree(data: bytes, strip: bool = True) -> tuple[lxml.etree._Element | None, str]:
    """(root, title) of UTF-8 markup; `strip`: the invisible elements removed from the tree."""
    parser = _thread_parser()
    root = lxml.etree.fromstring(data, parser=parser)
    if root is None:
        return None, ""
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        # libxml2 stops at 2048 levels of nesting and drops the rest: let bs4 read it all.
        raise ValueError("markup nested beyond libxml2's depth limit")
    if NATIVE_WALK and _textwalk is not None:
        raw_title: str | None = _textwalk.libxml2_title(root)
    else:
        title_el = root.find(".//title")
        raw_title = str(_STRING_VALUE(title_el)) if title_el is not None else None
    title = _collapse_spaces(raw_title) if raw_title is not None else ""
    if strip:
        lxml.etree.strip_elements(root, *_DROPPED, with_tail=False)
    return root, title


def _python_walk(
    root: lxml.etree._Element, chrome: Chrome, roles: bool, read_limit: int,
) -> tuple[str, bool]:
    """(text, whether the page marks its main content: see drop_chrome) of a stripped tree at
    one chrome level, in Python; the tree loses its chrome. The reference `_textwalk` follows."""
    marked = False
    if chrome:
        marked = drop_chrome(root, links=chrome >= Chrome.LINKS_BEFORE_TITLE, roles=roles,
                             read_limit=read_limit,
                             before_title_only=chrome == Chrome.LINKS_BEFORE_TITLE)
    # Block boundaries separate words, inline tags (<b>, <a>) do not: a space at the start of a
    # block's text and of its tail; then one XPath string() call instead of a Python text walk.
    for block in root.iter(*BLOCK_TAGS):
        block.text = " " + block.text if block.text else " "
        block.tail = " " + block.tail if block.tail else " "
    return _collapse_spaces(_STRING_VALUE(root)), marked


def drop_chrome(
    root: lxml.etree._Element, links: bool = True, roles: bool = True, read_limit: int = 0,
    before_title_only: bool = False,
) -> bool:
    """Remove a page's site chrome from its tree, in place: navigation, banner, footer and
    complementary landmarks (HTML elements and ARIA roles; a header or footer inside an article,
    main or section is the article's own and stays) and, with `links`, every block whose words
    are all link text. Chrome is what distinct pages of one site share and copies of one article
    on two sites do not: with it, every short page of a site with a large menu is a
    near-duplicate of every other, whatever the measure. `roles=False` skips the ARIA roles
    (the caller saw no role attribute in the markup: finding them costs a pass over the tree).
    `read_limit` (0: none) bounds the characters read to judge blocks, so nested link lists
    cannot make the work quadratic; blocks past it are kept.
    A page that marks its main content (`main`, `article`, role main) says where its content
    is: link-only blocks inside it (a table of contents) stay. Returns whether it does.
    `before_title_only`: only the link-only blocks before the page's title go (a menu precedes
    the title it serves; a table of contents follows it)."""
    with_role: list[lxml.etree._Element] = _HAS_ROLE(root) if roles else []  # type: ignore[assignment]
    regions = set(root.iter(*MAIN_TAGS))
    regions.update(e for e in with_role if _role(e) == "main")
    found = _landmarks(root, with_role)
    if links:
        blocks = [block for block in _link_only_blocks(root, read_limit)
                  if not regions or not _inside(block, regions)]
        found += _before_title(root, blocks) if before_title_only else blocks
    # In any order: an element inside one removed before it leaves with it, and removing it
    # from the detached subtree changes no text that is left.
    for element in found:
        _remove_keeping_tail(element)
    return bool(regions)


def _landmarks(
    root: lxml.etree._Element, with_role: list[lxml.etree._Element],
) -> list[lxml.etree._Element]:
    found = list(root.iter(*LANDMARK_TAGS))
    found += [element for element in root.iter(*PAGE_LANDMARK_TAGS)
              if next(element.iterancestors(*SECTIONING_TAGS), None) is None]
    return found + [element for element in with_role if _role(element) in LANDMARK_ROLES]


def _before_title(
    root: lxml.etree._Element, blocks: list[lxml.etree._Element],
) -> list[lxml.etree._Element]:
    """The blocks that come before the page's title, its first h1 (else h2) with words outside
    links (a logo in an h1 link is no title), in document order."""
    title = next((h for tag in ("h1", "h2") for h in root.iter(tag)
                  if _visible_chars(_text_of(h)) > sum(
                      _visible_chars(_text_of(a)) for a in h.iter("a"))), None)
    if title is None:
        return []
    around = set(title.iterancestors())
    before: set[lxml.etree._Element] = set()
    for element in root.iter():
        if element is title:
            break
        before.add(element)
    return [block for block in blocks if block in before and block not in around]


def _inside(element: lxml.etree._Element, regions: set[lxml.etree._Element]) -> bool:
    return element in regions or any(a in regions for a in element.iterancestors())


def _role(element: lxml.etree._Element) -> str:
    return str(element.get("role", "")).strip().lower()


def _link_only_blocks(root: lxml.etree._Element, read_limit: int = 0) -> list[lxml.etree._Element]:
    """Blocks holding links and, outside them, no more than two characters a link (separators:
    "Home | Docs", "A > B > C"). Linear in the page: each link counts toward its innermost
    block, whose totals pass to the block around it; blocks are read innermost first, and one
    with words of its own rules out the blocks around it unread."""
    known: dict[lxml.etree._Element, tuple[lxml.etree._Element, ...]] = {}
    chars: dict[lxml.etree._Element, int] = defaultdict(int)  # link text, per block
    count: dict[lxml.etree._Element, int] = defaultdict(int)  # links, per block
    for link in root.iter("a"):
        chain = _blocks_from(link.getparent(), known)
        if chain:
            text = link.text or "" if len(link) == 0 else _text_of(link)
            chars[chain[0]] += _visible_chars(text)
            count[chain[0]] += 1
    blocks = sorted((element for element, chain in known.items() if chain and chain[0] is element),
                    key=lambda element: len(known[element]), reverse=True)  # deepest first
    for block in blocks:  # totals of the blocks inside pass outward
        if count[block] and len(known[block]) > 1:
            chars[known[block][1]] += chars[block]
            count[known[block][1]] += count[block]
    found: list[lxml.etree._Element] = []
    ruled_out: set[lxml.etree._Element] = set()
    read = 0
    for block in blocks:
        outer: lxml.etree._Element | None = known[block][1] if len(known[block]) > 1 else None
        if block in ruled_out or not count[block]:
            if outer is not None and block in ruled_out:
                ruled_out.add(outer)
            continue
        text = _text_of(block)
        read += len(text)
        if read_limit and read > read_limit:
            break
        if _visible_chars(text) - chars[block] <= 2 * count[block]:
            found.append(block)
        elif outer is not None:
            ruled_out.add(outer)
    return found


def _blocks_from(
    element: lxml.etree._Element | None,
    known: dict[lxml.etree._Element, tuple[lxml.etree._Element, ...]],
) -> tuple[lxml.etree._Element, ...]:
    """`element` and its ancestors that are link blocks, innermost first (so a block's own
    entry starts with itself, and its length is the block's depth). Links share their
    parents (thirty items of one menu): each element's answer is kept in `known`, and a walk
    stops at the first element already known (iterancestors with a tag filter is 3x slower)."""
    walked: list[lxml.etree._Element] = []
    while element is not None and element not in known:
        walked.append(element)
        element = element.getparent()
    chain = known[element] if element is not None else ()
    for step in reversed(walked):
        chain = (step, *chain) if step.tag in _LINK_BLOCK_SET else chain
        known[step] = chain
    return chain


def _text_of(element: lxml.etree._Element) -> str:
    """An element's text content (the C serializer: 2x faster than an XPath string())."""
    return lxml.etree.tostring(element, method="text", encoding="unicode", with_tail=False)


def _visible_chars(text: str) -> int:
    """Characters other than ASCII whitespace (str.count runs in C; split would build a list)."""
    return len(text) - text.count(" ") - text.count("\n") - text.count("\t") - text.count("\r")


def _remove_keeping_tail(element: lxml.etree._Element) -> None:
    """Remove an element; the text after it (its tail) belongs to its parent and stays."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = f"{previous.tail or ''} {element.tail}"
        else:
            parent.text = f"{parent.text or ''} {element.tail}"
    parent.remove(element)


def _collapse_spaces(text: object) -> str:
    """Runs of whitespace as one space, none at the ends (str.split: 4x faster than a regex)."""
    return " ".join(str(text).split())


def _bs4_text(html: str) -> tuple[str, str]:
    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for el in soup.find_all(list(INVISIBLE_TAGS)):
        el.decompose()
    return title, _collapse_spaces(soup.get_text(" "))
