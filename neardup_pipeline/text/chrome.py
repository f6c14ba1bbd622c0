"""Site chrome of a page, removed from lxml's tree in Python: the reference of the C++ walk.

`_textwalk` (the default where it is built) follows these rules to the character without changing
the tree; this walk runs where it is not built, and the tests compare the two.
"""

from __future__ import annotations

import enum
from collections import defaultdict

import lxml.etree

from neardup_pipeline.text.blocks import block_text
from neardup_pipeline.text.htmltags import (
    BLOCK_TAGS,
    LANDMARK_ROLES,
    LANDMARK_TAGS,
    LINK_BLOCK_TAGS,
    MAIN_TAGS,
    PAGE_LANDMARK_TAGS,
    SECTIONING_TAGS,
)
from neardup_pipeline.text.tree import remove_keeping_tail

STRING_VALUE = lxml.etree.XPath("string()")  # all text nodes, concatenated in C
_LINK_BLOCK_SET = frozenset(LINK_BLOCK_TAGS)
_HAS_ROLE = lxml.etree.XPath("//*[@role]")


class Chrome(enum.IntEnum):
    """How much site chrome a walk of the tree removes (`python_walk`, `_textwalk`)."""

    KEEP = 0
    LANDMARKS = 1  # nav, aside, page-level header and footer, ARIA landmark roles
    LINKS_BEFORE_TITLE = 2  # and the link-only blocks before the page's title (h1, else h2)
    LINKS = 3  # and every block whose words are all link text
    BLOCKS = 4  # the blocks of running text only (text/blocks.py)


def python_walk(
    root: lxml.etree._Element, chrome: Chrome, roles: bool, read_limit: int,
) -> tuple[str, bool, str]:
    """(text, whether the page marks its main content: see drop_chrome, the content region's
    text: blocks.block_text, at BLOCKS only) of a stripped tree at one chrome level, in Python;
    the tree loses its chrome. The reference `_textwalk` follows."""
    if chrome == Chrome.BLOCKS:
        with_role: list[lxml.etree._Element] = _HAS_ROLE(root) if roles else []  # type: ignore[assignment]
        marked = next(root.iter(*MAIN_TAGS), None) is not None or any(
            _role(e) == "main" for e in with_role)
        text, region = block_text(root, roles)
        return text, marked, region
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
    return collapse_spaces(STRING_VALUE(root)), marked, ""


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
        remove_keeping_tail(element)
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




def collapse_spaces(text: object) -> str:
    """Runs of whitespace as one space, none at the ends (str.split: 4x faster than a regex)."""
    return " ".join(str(text).split())
