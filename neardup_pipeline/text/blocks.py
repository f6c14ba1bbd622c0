"""A page's running text, block by block, in Python: the reference of the C++ walk's BLOCKS level.

What a copy of an article and its original share is the article's blocks; what differs is the
chrome around them. So every decision here depends on a block and its immediate neighbours, or
on an element and what it holds, never on the rest of the page: the article's blocks are kept
or dropped alike in both pages, whatever chrome surrounds them.

1. Removed with their subtrees: the landmarks (`chrome.drop_chrome`), except a page-level header
   or footer that holds an article or main element (a page that puts its article there); form
   controls; and elements named as chrome by a word of their class or id (comments, share bars,
   cookie notices, newsletter boxes, related teasers, sidebars: htmltags.CHROME_NAME_STEMS) unless
   they hold an element named as content (a layout box around the article).
2. The text left is cut into blocks at block elements; each block's words and the words that
   begin inside links are counted.
3. A block is kept when it reads as running text by the shallow features of Kohlschütter et al.
   ("Boilerplate detection using shallow text features", WSDM 2010; boilerpipe's thresholds):
   at most a third of its words in links, and more than 16 words (`keeps`). Each block is judged
   alone: boilerpipe's own classifier also looks at the neighbours, which differ between a copy
   and its original at the article's edges and move when a page's paragraphs are reordered. A
   block held by a list item, a table cell, <pre> or a heading (its own block element or that
   element's parent) with few links is kept however short: a page's own lists, tables, code and
   headings. A cell further up holds a layout table's column, not a structure of the article.
4. The content region (`content_region`): the kept blocks of the element holding most of them.

The caller (extract) falls back to the chromeless levels when fewer than MIN_BLOCK_WORDS words
are kept: a page of short lines and links has no running text to find.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import lxml.etree

from neardup_pipeline.text.htmltags import (
    BLOCK_TAGS,
    CHROME_NAME_STEMS,
    CONTENT_NAMES,
    CONTROL_TAGS,
    LANDMARK_ROLES,
    LANDMARK_TAGS,
    MAIN_TAGS,
    PAGE_LANDMARK_TAGS,
    PAGE_ROOT_TAGS,
    SECTIONING_TAGS,
    STRUCTURE_TAGS,
)
from neardup_pipeline.text.tree import remove_keeping_tail

# Boilerpipe's thresholds (its NumWordsRulesClassifier): a block with more link density is
# chrome; one of at most SHORT_WORDS words is not running text by itself.
MAX_LINK_DENSITY = 1 / 3
SHORT_WORDS = 16

# A content region holding at least this share of the running text's words is that text: no
# second reading (integers, so both walks decide alike).
REGION_SHARE_NUMERATOR, REGION_SHARE_DENOMINATOR = 4, 5

CHROME_NAMED = 1
CONTENT_NAMED = 2

_LETTERS = re.compile(r"[A-Za-z]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_TOKEN = re.compile(r"\S+")
_BLOCK_SET = frozenset(BLOCK_TAGS)
_STRUCTURE_SET = frozenset(STRUCTURE_TAGS)
_CONTROL_SET = frozenset(CONTROL_TAGS)
_KEPT_BY_NAME = frozenset((*PAGE_ROOT_TAGS, *MAIN_TAGS))


def name_words(value: str) -> list[str]:
    """The words of a class or id value: runs of ASCII letters, split before an upper-case letter
    that follows a lower-case one ("commentList" -> comment, list), lower-cased."""
    return [word.lower() for run in _LETTERS.findall(value) for word in _CAMEL.split(run)]


def name_kind(value: str) -> int:
    """CHROME_NAMED and/or CONTENT_NAMED, as the words of an element's class and id say."""
    kind = 0
    for word in name_words(value):
        if word.startswith(CHROME_NAME_STEMS):
            kind |= CHROME_NAMED
        if word in CONTENT_NAMES:
            kind |= CONTENT_NAMED
    return kind


def _names_of(element: lxml.etree._Element) -> int:
    value = f"{element.get('class') or ''} {element.get('id') or ''}"
    return name_kind(value) if value.strip() else 0


@dataclass(frozen=True)
class Block:
    """A run of text between block boundaries: its words, those beginning inside links,
    whether a structure holds it (htmltags.STRUCTURE_TAGS: list item, table cell, pre, heading;
    its owner or the owner's parent), and its owner: the innermost block element around it."""

    text: str
    words: int
    link_words: int
    structure: bool
    owner: int = 0  # the innermost block element holding it, by document order (root: 0)

    @property
    def link_density(self) -> float:
        return self.link_words / self.words if self.words else 0.0


def keeps(blocks: Sequence[Block]) -> list[bool]:
    """Which blocks are running text: at most a third of its words links, and more than
    SHORT_WORDS words or a structure's block (a list item, table cell, pre, heading). Each
    block is judged alone: its neighbours differ between a copy and its original at the
    article's edges, and move when paragraphs are reordered."""
    return [b.link_density <= MAX_LINK_DENSITY and (b.words > SHORT_WORDS or b.structure)
            for b in blocks]


def drop_block_chrome(root: lxml.etree._Element, roles: bool) -> None:
    """Remove, in place, what step 1 of the module docstring removes."""
    holds_main: set[lxml.etree._Element] = set()
    holds_content: set[lxml.etree._Element] = set()
    gone: list[lxml.etree._Element] = []
    for element in root.iter():  # (a stripped tree: elements only)
        names = _names_of(element)
        if element.tag in MAIN_TAGS or (roles and _role(element) == "main"):
            holds_main.update(element.iterancestors())
        if names == CONTENT_NAMED:
            holds_content.update(element.iterancestors())
    for element in root.iter():
        tag = element.tag
        if (tag in LANDMARK_TAGS or (roles and _role(element) in LANDMARK_ROLES)
                or (tag in PAGE_LANDMARK_TAGS and element not in holds_main
                    and next(element.iterancestors(*SECTIONING_TAGS), None) is None)
                or tag in _CONTROL_SET
                or (tag not in _KEPT_BY_NAME and _names_of(element) & CHROME_NAMED
                    and element not in holds_content)):
            gone.append(element)
    for element in gone:  # an element inside one removed before leaves with it
        remove_keeping_tail(element)


def _role(element: lxml.etree._Element) -> str:
    return str(element.get("role", "")).strip().lower()


def blocks_of(root: lxml.etree._Element) -> tuple[list[Block], list[int]]:
    """The blocks of a tree's text, in document order (step 2), and each element's parent by
    document order (-1 at the root), which `content_region` reads."""
    blocks: list[Block] = []
    pieces: list[str] = []
    linked: list[bool] = []
    parents: list[int] = []
    structural: list[bool] = []  # by document order: a list item, table cell, pre, heading
    owners = [0]  # the open block elements, innermost last

    def close() -> None:
        owner = owners[-1]
        text = "".join(pieces)
        starts = [0]
        for piece in pieces:
            starts.append(starts[-1] + len(piece))
        words = link_words = 0
        for token in _TOKEN.finditer(text):
            words += 1
            link_words += linked[bisect_right(starts, token.start()) - 1]
        if words:
            structure = structural[owner] or (parents[owner] >= 0
                                              and structural[parents[owner]])
            blocks.append(Block(" ".join(text.split()), words, link_words, structure, owner))
        pieces.clear()
        linked.clear()

    def add(text: str | None, in_link: bool) -> None:
        if text:
            pieces.append(text)
            linked.append(in_link)

    def walk(element: lxml.etree._Element, parent: int, in_link: bool) -> None:
        index = len(parents)
        parents.append(parent)
        structural.append(element.tag in _STRUCTURE_SET)
        block = element.tag in _BLOCK_SET
        if block:
            close()
            owners.append(index)
        in_link = in_link or element.tag == "a"
        add(element.text, in_link)
        for child in element:
            walk(child, index, in_link)
            add(child.tail, in_link)
        if block:
            close()
            owners.pop()

    walk(root, -1, False)
    close()
    return blocks, parents


def content_region(blocks: Sequence[Block], kept: Sequence[bool],
                   parents: Sequence[int]) -> list[int]:
    """The kept blocks of the element that holds most of the page's running text, as block
    indexes: Readability's choice (each kept block credits its words to its block element's
    parent and half to its grandparent; the best element wins, the first of equals), its region
    every kept block whose block element lies inside that element (not every block between its
    first and last: an inline element holding blocks also holds text of a block element above
    it). The page's article, when other running text (teasers, comments, a host site's own
    notes) lies around it."""
    credit: dict[int, int] = defaultdict(int)
    for block, keep in zip(blocks, kept, strict=True):
        if keep:
            parent = parents[block.owner] if parents[block.owner] >= 0 else block.owner
            credit[parent] += 2 * block.words
            if parents[parent] >= 0:
                credit[parents[parent]] += block.words
    if not credit:
        return []
    best = min(credit, key=lambda element: (-credit[element], element))
    return [n for n, (block, keep) in enumerate(zip(blocks, kept, strict=True))
            if keep and _inside(block.owner, best, parents)]


def _inside(element: int, ancestor: int, parents: Sequence[int]) -> bool:
    while element > ancestor:
        element = parents[element]
    return element == ancestor


def block_text(root: lxml.etree._Element, roles: bool) -> tuple[str, str]:
    """The running text of a stripped tree (the module docstring's steps 1-3) and its content
    region's (`content_region`; "" when that is the whole running text); the tree loses its
    chrome."""
    drop_block_chrome(root, roles)
    blocks, parents = blocks_of(root)
    kept = keeps(blocks)
    text = " ".join(b.text for b, keep in zip(blocks, kept, strict=True) if keep)
    region = [blocks[n] for n in content_region(blocks, kept, parents)]
    kept_words = sum(b.words for b, keep in zip(blocks, kept, strict=True) if keep)
    if sum(b.words for b in region) * REGION_SHARE_DENOMINATOR >= \
            kept_words * REGION_SHARE_NUMERATOR:
        return text, ""
    return text, " ".join(b.text for b in region)
