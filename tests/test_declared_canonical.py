"""A page's own declaration (`<link rel="canonical">`, then `og:url`) decides which copy of a
cluster is the original, on every backend, whatever order the crawler requests the copies in.

The site links each mirror copy BEFORE its original, so the copy reaches the pipeline first (one
request at a time, breadth-first, link order): request order alone would keep the copy and drop
the original.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import Document
from neardup_pipeline.index import open_index
from neardup_pipeline.scrapy.pipeline import NearDuplicate
from neardup_pipeline.text.canonical import declared_canonical, same_url
from neardup_pipeline.verdict.deduplicator import Deduplicator
from tests.crawl_harness import CrawlResult, crawl, crawl_settings, describe, serve_pages
from tests.documents import random_text

HTML = "text/html; charset=utf-8"
BODIES = {
    name: random_text(seed, words=300)
    for seed, name in enumerate(("self", "named", "og"), start=40)
}


def _page(title: str, body: str, head: str = "") -> bytes:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{head}"
        f"</head><body><p>{body}</p></body></html>"
    ).encode()


def _pages() -> dict[str, tuple[str, bytes]]:
    """Three stories, each copy linked before its original:
    - self: the original names itself (rel=canonical); a print copy after it names the original;
    - named: the mirror names the original (rel=canonical), the original says nothing;
    - og: the original names itself with og:url only."""
    self_, named, og = BODIES["self"], BODIES["named"], BODIES["og"]
    canonical = '<link rel="canonical" href="{}">'
    pages = {
        "/mirror/self.html": _page("Self", self_),
        "/articles/self.html": _page("Self", self_, canonical.format("/articles/self.html")),
        "/print/self.html": _page("Self", self_, canonical.format("../articles/self.html")),
        "/mirror/named.html": _page("Named", named, canonical.format("/articles/named.html")),
        "/articles/named.html": _page("Named", named),
        "/copy/named.html": _page("Named", named),
        "/mirror/og.html": _page("Og", og),
        "/articles/og.html": _page(
            "Og", og, '<meta property="og:url" content="{base}/articles/og.html">'
        ),
        "/copy/og.html": _page("Og", og),
    }
    links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in pages)
    served = {path: (HTML, body) for path, body in pages.items()}
    served["/index.html"] = (HTML, _page("Declared canonical", f"Copies first.<ul>{links}</ul>"))
    return served


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    pages = _pages()
    with serve_pages(pages) as base:
        # og:url is absolute: the base is known only once the server listens
        ctype, body = pages["/articles/og.html"]
        pages["/articles/og.html"] = (ctype, body.replace(b"{base}", base.encode()))
        yield base


@pytest.mark.parametrize("policy", ["first", "best"])
@deferred_f_from_coro_f
async def test_declared_original_is_canonical_in_the_pages_index(
    site: str, es_url: str, es_index_names: dict[str, str], policy: str
) -> None:
    pages = es_index_names["pages_index"]
    result = await crawl(
        site,
        crawl_settings(
            es_url,
            NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"],
            NEARDUP_PAGES_INDEX=pages,
            NEARDUP_CANONICAL=policy,
        ),
    )
    assert sorted(result.dropped) == ["/copy/named.html", "/copy/og.html", "/print/self.html"]
    from elasticsearch import AsyncElasticsearch

    client = AsyncElasticsearch(es_url, request_timeout=30)
    try:
        await client.indices.refresh(index=pages)
        found = await client.search(index=pages, query={"match_all": {}}, size=50)
        by_path = {result.path(h["_source"]["url"]): h["_source"] for h in found["hits"]["hits"]}
    finally:
        await client.close()
    for story, copies in (
        ("self", ("mirror", "print")),
        ("named", ("mirror", "copy")),
        ("og", ("mirror", "copy")),
    ):
        original = by_path[f"/articles/{story}.html"]
        assert original["is_canonical"] is True, story
        assert original["cluster_id"] == site + f"/articles/{story}.html"
        for copy in copies:
            page = by_path[f"/{copy}/{story}.html"]
            assert page["is_canonical"] is False, (story, copy)
            assert page["cluster_id"] == original["cluster_id"]
            assert page["duplicate_of"] == original["doc_id"]


def _cluster(result: CrawlResult, path: str) -> str:
    exc = result.dropped[path]
    assert isinstance(exc, NearDuplicate), describe(result)
    return result.path(str(exc.verdict.cluster))


@deferred_f_from_coro_f
async def test_declared_original_kept_though_its_copy_came_first(
    site: str, crawl_backend: dict[str, str]
) -> None:
    result = await crawl(site, crawl_settings(**crawl_backend))
    assert result.stats["finish_reason"] == "finished"
    assert not result.repeated()
    # the originals are kept, though a copy of each was seen before them
    for story in ("self", "named", "og"):
        assert f"/articles/{story}.html" in result.kept, describe(result)
        assert f"/mirror/{story}.html" in result.kept  # first seen: it left before its original
    # the copies after the original are dropped, in the original's cluster
    assert sorted(result.dropped) == ["/copy/named.html", "/copy/og.html", "/print/self.html"]
    for path, original in (
        ("/print/self.html", "/articles/self.html"),
        ("/copy/named.html", "/articles/named.html"),
        ("/copy/og.html", "/articles/og.html"),
    ):
        assert _cluster(result, path) == original, describe(result)
    # a page naming a stored page canonical is a duplicate of that page
    exc = result.dropped["/print/self.html"]
    assert isinstance(exc, NearDuplicate)
    assert exc.verdict.duplicate_of == site + "/articles/self.html"


@deferred_f_from_coro_f
async def test_declared_original_in_tag_mode_and_index(site: str, tmp_path: Path) -> None:
    """Tag mode tags the later copies with the declared original; in the index, the copy seen
    first is in the original's cluster, whose canonical is the original."""
    path = tmp_path / "fp.sqlite"
    result = await crawl(site, crawl_settings(f"sqlite:{path}", NEARDUP_ACTION="tag"))
    assert not result.dropped
    item = result.kept["/copy/named.html"]
    assert item["neardup_cluster"] == site + "/articles/named.html"
    assert (
        "neardup_of" not in result.kept["/articles/named.html"]
        or result.kept["/articles/named.html"]["neardup_of"] is None
    )
    index = open_index(f"sqlite:{path}")
    try:
        stored = index.get([site + "/mirror/self.html", site + "/articles/self.html"])
        mirror, original = (stored[site + p] for p in ("/mirror/self.html", "/articles/self.html"))
        labels = [mirror.meta["cluster"], original.meta["cluster"]]
        roots = set(index.clusters.roots(labels).values())
        assert len(roots) == 1
        assert index.clusters.canonicals(roots)[roots.pop()][1] == original.doc_id
    finally:
        index.close()


def test_self_declaration_everywhere_keeps_the_first() -> None:
    """A CMS that names every page canonical (its own URL) on the copies too: the first copy
    stays the original (two self-declarations cancel out; request order decides)."""
    body = BODIES["self"]
    dedup = Deduplicator(open_index("memory"))
    first = dedup.process(
        Document(
            "https://a.org/x",
            html=_page("X", body, '<link rel="canonical" href="https://a.org/x">'),
            url="https://a.org/x",
        )
    )
    second = dedup.process(
        Document(
            "https://b.org/x",
            html=_page("X", body, '<link rel="canonical" href="https://b.org/x">'),
            url="https://b.org/x",
        )
    )
    assert not first.is_duplicate
    assert second.duplicate_of == "https://a.org/x"


def test_a_self_declaration_ranks_before_silence() -> None:
    """An article first seen without a declaration, then a copy that names itself canonical:
    the rule ranks a page's word for itself before silence, on any site and in any order; of
    two that name themselves, the first seen stays."""
    body = BODIES["self"]
    dedup = Deduplicator(open_index("memory"))
    dedup.process(Document("https://a.org/x", html=_page("X", body), url="https://a.org/x"))
    mirror = dedup.process(
        Document(
            "https://b.org/x",
            html=_page("X", body, '<link rel="canonical" href="https://b.org/x">'),
            url="https://b.org/x",
        )
    )
    assert not mirror.is_duplicate and mirror.superseded == ("https://a.org/x",)
    own = dedup.process(
        Document(
            "https://www.a.org/y",
            html=_page("X", body, '<link rel="canonical" href="https://www.a.org/y">'),
            url="https://www.a.org/y",
        )
    )
    assert own.duplicate_of == "https://b.org/x"


def test_declared_canonical_does_not_join_different_pages() -> None:
    """A template naming the home page canonical on every page: a declaration decides which copy
    is the original, it never makes different texts duplicates."""
    dedup = Deduplicator(open_index("memory"))
    home = dedup.process(
        Document("https://a.org/", html=_page("Home", BODIES["self"]), url="https://a.org/")
    )
    other = dedup.process(
        Document(
            "https://a.org/p",
            html=_page("P", BODIES["named"], '<link rel="canonical" href="https://a.org/">'),
            url="https://a.org/p",
        )
    )
    assert not home.is_duplicate and not other.is_duplicate


def test_declared_canonical_extraction() -> None:
    page = (
        '<html><head><title>t</title><link rel="Canonical" href="../a/b.html?x=1#top">'
        '<meta property="og:url" content="https://og.org/p"></head><body></body></html>'
    )
    assert declared_canonical(page, "https://e.org/c/d.html") == "https://e.org/a/b.html?x=1"
    # without the page's URL the relative rel=canonical cannot be resolved: og:url then
    assert declared_canonical(page.encode()) == "https://og.org/p"
    og_only = '<head><meta content="https://og.org/p" property="og:url"></head>'
    assert declared_canonical(og_only, "https://e.org/") == "https://og.org/p"
    based = '<head><base href="https://cdn.org/z/"><link href="p.html" rel=canonical></head>'
    assert declared_canonical(based, "https://e.org/") == "https://cdn.org/z/p.html"
    assert (
        declared_canonical(
            "<head><link rel=alternate href=/m>"
            "<link rel='shortlink canonical' href='/c?a=1&amp;b=2'></head>",
            "http://e.org/",
        )
        == "http://e.org/c?a=1&b=2"
    )


def test_declared_canonical_ignores_what_is_not_a_declaration() -> None:
    base = "https://e.org/p"
    assert declared_canonical(None, base) is None
    assert declared_canonical("", base) is None
    assert declared_canonical("<body><link rel=canonical href=/x></body>", base) is None
    assert declared_canonical("<head><!-- <link rel=canonical href=/x> --></head>", base) is None
    assert (
        declared_canonical("<head><script>'<link rel=canonical href=/x>'</SCRIPT></head>", base)
        is None
    )
    assert (
        declared_canonical("<head><link rel=canonical href='javascript:x()'></head>", base) is None
    )
    assert declared_canonical("<head><link rel=canonical href='mailto:a@b.c'></head>", base) is None
    assert declared_canonical("<head><link rel=canonical></head>", base) is None
    # hostile markup: unclosed scripts and comments cost linear time
    assert declared_canonical("<head>" + "<script" * 50_000, base) is None
    assert declared_canonical(b"<head>" + b"<!--" * 50_000 + b"\xff\xfe", base) is None


def test_same_url_compares_addresses_not_spellings() -> None:
    assert same_url("HTTPS://E.org:443/a#x", "https://e.org/a")
    assert same_url("http://e.org", "http://e.org/")
    assert not same_url("https://e.org/a", "https://e.org/a/")
    assert not same_url("https://e.org/a?x=1", "https://e.org/a")
    assert not same_url(None, "https://e.org/a") and not same_url("", "")


@given(st.one_of(st.text(max_size=400), st.binary(max_size=400)), st.text(max_size=40))
def test_declared_canonical_never_crashes(page: str | bytes, url: str) -> None:
    found = declared_canonical(page, url)
    assert found is None or found.startswith(("http://", "https://"))


@given(
    st.lists(
        st.sampled_from(
            [
                "<head>",
                "</head>",
                "<body>",
                "<!--",
                "-->",
                "<script>",
                "</script>",
                "<base href='/b/'>",
                "<link rel=canonical href='/c'>",
                "<meta property=og:url content='http://o.org/'>",
                "x",
            ]
        ),
        max_size=30,
    )
)
def test_declared_canonical_of_any_tag_soup(parts: list[str]) -> None:
    found = declared_canonical("".join(parts), "https://e.org/p")
    assert found is None or same_url(found, found)


_SOUP = st.lists(st.sampled_from([
    "<head>", "</head>", "</HEAD >", "</head\xa0>", "</header>", "<body>", "<BODY class=x>",
    "<body\u2003>", "<bodyx>", "<!--", "-->", "<script>", "</script>", "<ſcript>", "</ſcript>",
    "<STYLE>", "</style>", "<template>", "</template>", "<scrİpt>", "</SCRıPT>",
    "<noſcrıpt>", "</noscript>", "<base href='/b/'>",
    "<link rel=canonical href='/c'>", "<LINK REL=CANONICAL HREF='/d'>",
    "<meta property=og:url content='http://o.org/'>", "x", "é",
]), max_size=30).map("".join)


@given(_SOUP, st.booleans())
def test_the_head_is_read_as_the_whole_first_64_kb_is(page: str, as_bytes: bool) -> None:
    """Declarations are looked for before the first <body> when no comment or script comes
    first: the same answer as reading the first 64 KB whole, for text and for UTF-8 bytes,
    whatever the letter case, Unicode spaces and folds in the tags."""
    from neardup_pipeline.text import canonical

    markup: str | bytes = page.encode() if as_bytes else page
    found = declared_canonical(markup, "https://e.org/p")
    whole = canonical._before_body
    try:
        canonical._before_body = lambda head: head  # type: ignore[assignment]
        assert found == declared_canonical(markup, "https://e.org/p")
    finally:
        canonical._before_body = whole
