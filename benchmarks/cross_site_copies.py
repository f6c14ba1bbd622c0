"""Cross-site copies of real pages: one site's article placed into another real site's page.

What it makes, from the labelled pages of ../shared/data/web-pages-multisite (`corpora.multisite_
pages`; real pages of a few hundred sites, each with snippets of its main content and of its
boilerplate):

1. Each page's main element: the smallest element of its body whose visible text holds every
   main-content snippet found in the page (whitespace and case folded), or, failing that, all
   but one of them (not <body> itself); then, since the snippets often sit in one paragraph,
   widened to its parent for as long as the text the parent adds is at most 30% link text and
   the parent holds at most 90% of the body's text. It must hold at least 30 words and at most
   90% of the body's text. The boilerplate labels are not used (they often name teasers inside
   the article's own column). Pages where fewer than two snippets are found or no element
   qualifies are skipped (counted in `CrossSiteSet.skipped`): they are still in the set as
   originals, never as articles or hosts.
2. For each usable page A (an article), `copies` copies, each hosted by another usable page B:
   B's page (parsed by lxml, as it is) with the content of B's main element replaced by A's main
   element; A's headline (its first <h1>) kept: carried inside A's main element, or else written
   into B's first <h1> outside B's main element (a new <h1> before A's element when B has none);
   B's own <h1> outside its main element is dropped when A's headline is inside A's. B's <title>
   becomes "A's title | B's site" or "B's site - A's title" (chosen by the seed), og:title A's
   title, the canonical link and og:url the copy's own URL (on B's site). A's title is its
   og:title, else its headline, else its <title>; B's site is its og:site_name, else its URL's
   host without "www.". B's JSON-LD (it describes B's article) is dropped and the charset
   declared UTF-8; everything else of B stays: menus, header, byline, share bar, cookie notice,
   comments, related teasers, newsletter box, footer, scripts.
3. Host reuse: the hosts are a seeded sample of the usable pages, each hosting about `per_host`
   different articles (same chrome, different content), never its own.

Gold: A and its copies are one group; every other original is its own group. Precision side:
copies of different articles in one host page, and a host's own page beside the copies it
hosts, must never match. The documents come in a seeded shuffled order (a crawl meets a copy
before its original as often as after); originals are the archive's bytes, copies UTF-8.
"""

from __future__ import annotations

import copy
import math
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import lxml.html
from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import LabelledPage, multisite_pages
from neardup_pipeline.text.decode import decode_html

DEFAULT_SEED = 20261202
DEFAULT_COPIES = 2  # hosts per article
DEFAULT_PER_HOST = 4  # articles per host page
MIN_MAIN_WORDS = 30
MAX_ADDED_LINK_SHARE = 0.3  # of the text a parent adds, above it the parent adds chrome
MAX_MAIN_SHARE = 0.9  # of the body's text: above it the page is its content, no chrome to swap
_INVISIBLE = frozenset({"script", "style", "noscript", "template", "head", "title"})
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)


@dataclass(frozen=True)
class SetDoc:
    """One document of the set: `group` its gold group, `host` the page whose chrome it wears."""

    doc_id: str
    html: bytes
    group: str
    kind: str  # "original" or "copy"
    host: str
    url: str  # a copy's: on its host's site, the article's file name as its path


@dataclass(frozen=True)
class CrossSiteSet:
    docs: tuple[SetDoc, ...]
    articles: int  # usable pages (main element found)
    skipped: int  # pages without a main element by the rule above
    hosts: int


@dataclass
class _Parsed:
    page: LabelledPage
    root: lxml.html.HtmlElement
    main_path: str
    headline: str
    headline_inside: bool
    title: str
    site: str


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def parse(html: bytes) -> lxml.html.HtmlElement:
    text, _ = decode_html(html)
    return lxml.html.document_fromstring(_XML_DECLARATION.sub("", text, count=1) or "<html/>")


def _spans(body: etree._Element) -> tuple[str, dict[etree._Element, tuple[int, int]],
                                          dict[etree._Element, int]]:
    """The body's visible text (folded), each element's span in it and the characters of its
    text inside links, in one walk."""
    parts: list[str] = []
    length = 0
    spans: dict[etree._Element, tuple[int, int]] = {}
    linked: dict[etree._Element, int] = {}

    def add(raw: str | None) -> None:
        nonlocal length
        folded = _fold(raw or "")
        if folded:
            if length:
                parts.append(" ")
                length += 1
            parts.append(folded)
            length += len(folded)

    def walk(el: etree._Element) -> None:
        start = length
        add(el.text)
        in_links = 0
        for child in el:
            if isinstance(child.tag, str) and child.tag not in _INVISIBLE:
                walk(child)
                in_links += linked[child]
            add(child.tail)
        spans[el] = (start, length)
        linked[el] = length - start if el.tag == "a" else in_links

    walk(body)
    return "".join(parts), spans, linked


def _holders(text: str, snippets: Sequence[str]) -> list[list[tuple[int, int]]]:
    """Per snippet found in `text`, the ranges where it occurs."""
    found = []
    for snippet in snippets:
        needle = _fold(snippet)
        if not needle:
            continue
        ranges = [(m.start(), m.end()) for m in re.finditer(re.escape(needle), text)]
        if ranges:
            found.append(ranges)
    return found


def _count(span: tuple[int, int], found: list[list[tuple[int, int]]]) -> int:
    start, end = span
    return sum(any(start <= a and b <= end for a, b in ranges) for ranges in found)


def main_element(root: lxml.html.HtmlElement, page: LabelledPage) -> etree._Element | None:
    """The page's main element by the rule of the module docstring, or None."""
    body = root.find("body")
    if body is None:
        return None
    text, spans, linked = _spans(body)
    main = _holders(text, page.main_snippets)
    if len(main) < 2:
        return None
    for need in (len(main), len(main) - 1):
        if need < 2:
            break
        holding = [(span[1] - span[0], el) for el, span in spans.items()
                   if el is not body and _count(span, main) >= need]
        if not holding:
            continue
        _, best = min(holding, key=lambda pair: pair[0])
        # The labels often sit in one paragraph: widen to the parent while what the parent adds
        # is mostly text outside links (more paragraphs, not menus or teasers).
        parent = best.getparent()
        while parent is not None and parent is not body and _adds_content(
                spans[best], linked[best], spans[parent], linked[parent], len(text)):
            best, parent = parent, parent.getparent()
        start, end = spans[best]
        too_big = end - start > MAX_MAIN_SHARE * len(text)
        return None if too_big or len(text[start:end].split()) < MIN_MAIN_WORDS else best
    return None


def _adds_content(child: tuple[int, int], child_links: int, parent: tuple[int, int],
                  parent_links: int, body_length: int) -> bool:
    added = (parent[1] - parent[0]) - (child[1] - child[0])
    if parent[1] - parent[0] > MAX_MAIN_SHARE * body_length:
        return False
    return added == 0 or (parent_links - child_links) <= MAX_ADDED_LINK_SHARE * added


def _meta(root: lxml.html.HtmlElement, prop: str) -> str:
    for el in root.xpath(f"//meta[@property='{prop}' or @name='{prop}']"):
        content = " ".join((el.get("content") or "").split())
        if content:
            return content
    return ""


def _prepare(page: LabelledPage) -> _Parsed | None:
    root = parse(page.html)
    main = main_element(root, page)
    if main is None:
        return None
    h1s = [h for h in root.iter("h1") if " ".join(h.text_content().split())]
    headline = " ".join(h1s[0].text_content().split()) if h1s else ""
    inside = bool(h1s) and any(a is main for a in h1s[0].iterancestors())
    title_el = root.find(".//title")
    own_title = " ".join(title_el.text_content().split()) if title_el is not None else ""
    title = _meta(root, "og:title") or headline or own_title
    host = urlsplit(page.url).hostname or page.doc_id
    site = _meta(root, "og:site_name") or host.removeprefix("www.")
    return _Parsed(page, root, root.getroottree().getpath(main), headline, inside, title, site)


def _remove(el: etree._Element) -> None:
    """Drop `el`, keeping the text after it."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        previous = el.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def host_copy(article: _Parsed, host: _Parsed, title_first: bool, url: str) -> bytes:
    """`host`'s page wearing `article`'s main element, headline and title (module docstring)."""
    root = copy.deepcopy(host.root)
    (host_main,) = root.xpath(host.main_path)
    (article_main,) = article.root.xpath(article.main_path)
    outside_h1 = [h for h in root.iter("h1")
                  if not any(a is host_main for a in h.iterancestors())]
    for child in list(host_main):
        host_main.remove(child)
    host_main.text = None
    host_main.append(copy.deepcopy(article_main))
    host_main[-1].tail = None
    if article.headline and not article.headline_inside:
        if outside_h1:
            h1 = outside_h1.pop(0)
            for child in list(h1):
                h1.remove(child)
            h1.text = article.headline
        else:
            h1 = lxml.html.Element("h1")
            h1.text = article.headline
            host_main.insert(0, h1)
    for h1 in outside_h1:
        _remove(h1)
    for script in root.xpath("//script[@type='application/ld+json']"):
        _remove(script)
    for meta in root.xpath("//meta[@charset or translate(@http-equiv, 'CONTENT-TYPE',"
                           " 'content-type')='content-type']"):
        _remove(meta)
    head = root.find("head")
    if head is None:
        head = lxml.html.Element("head")
        root.insert(0, head)
    charset = lxml.html.Element("meta", charset="utf-8")
    head.insert(0, charset)
    title_text = (f"{article.title} | {host.site}" if title_first
                  else f"{host.site} - {article.title}")
    title = root.find(".//title")
    if title is None:
        title = lxml.html.Element("title")
        head.append(title)
    for child in list(title):
        title.remove(child)
    title.text = title_text
    for meta in root.xpath("//meta[@property='og:title']"):
        meta.set("content", article.title)
    for meta in root.xpath("//meta[@property='og:url']"):
        meta.set("content", url)
    for link in root.xpath("//link[translate(@rel, 'CANONICAL', 'canonical')='canonical']"):
        link.set("href", url)
    html: str = lxml.html.tostring(root, encoding="unicode", method="html",
                                   doctype="<!DOCTYPE html>")
    return html.encode("utf-8")


def make_set(split: str = "all", seed: int = DEFAULT_SEED, copies: int = DEFAULT_COPIES,
             per_host: int = DEFAULT_PER_HOST) -> CrossSiteSet:
    """The documents (originals and copies, shuffled by `seed`) of one split of the pages."""
    rng = random.Random(seed)
    pages = multisite_pages(split)
    parsed = [_prepare(page) for page in pages]
    usable = [p for p in parsed if p is not None]
    docs = [SetDoc(p.doc_id, p.html, p.doc_id, "original", p.doc_id, p.url) for p in pages]
    wanted = min(len(usable), max(copies + 1, math.ceil(len(usable) * copies / per_host)))
    hosts = rng.sample(usable, wanted) if copies > 0 else []
    articles = list(usable)
    rng.shuffle(articles)
    slot = 0
    for article in articles:
        chosen: list[_Parsed] = []
        while len(chosen) < copies:
            host = hosts[slot % len(hosts)]
            slot += 1
            if host is not article and host not in chosen:
                chosen.append(host)
        for host in chosen:
            doc_id = f"{article.page.doc_id}@{host.page.doc_id}"
            origin = urlsplit(host.page.url)
            url = f"{origin.scheme}://{origin.netloc}/copies/{quote(article.page.doc_id)}"
            html = host_copy(article, host, title_first=rng.random() < 0.5, url=url)
            docs.append(SetDoc(doc_id, html, article.page.doc_id, "copy", host.page.doc_id, url))
    rng.shuffle(docs)
    return CrossSiteSet(tuple(docs), len(usable), len(pages) - len(usable), len(hosts))
