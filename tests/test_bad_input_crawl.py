"""A real crawl over a site that serves bad input: every page gets exactly one outcome.

Kept (perhaps with neardup_status "no_text", or "not_html" for binary bodies served as HTML) or
dropped as a real near-duplicate; never lost, never a crash, the spider finishes with reason
"finished" and neardup/errors stays at 0. Items a spider fills wrongly (a Response in `html`, no
`url`) are kept, tagged, counted and reported once.
"""

from __future__ import annotations

import gzip
import logging
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.scrapy.crawl import DEMO_SITE
from neardup_pipeline.scrapy.pipeline import NearDuplicate
from neardup_pipeline.scrapy.spider import SiteSpider
from tests.crawl_harness import (
    PAGES,
    CrawlResult,
    crawl,
    crawl_settings,
    fast_settings,
    serve_pages,
)
from tests.documents import paragraphs_page

HTML = "text/html; charset=utf-8"
HUGE_BYTES = 20 * 1024 * 1024 + 4096  # just past NEARDUP_MAX_HTML_BYTES: cut, not refused


def _pages() -> dict[str, tuple[str, bytes]]:
    """path -> (Content-Type, body). The index links to every one of them."""
    article = (DEMO_SITE / "articles" / "ddl-basics.html").read_bytes()
    russian = (
        "<html><head><meta charset='utf-8'><title>Windows-1251</title></head><body><p>"
        "Каждая таблица содержит строки и столбцы; порядок строк не определён. "
        "PostgreSQL 15 tables rows columns, mislabelled charset page.</p></body></html>"
    )
    pages: dict[str, tuple[str, bytes]] = {
        "/article.html": (HTML, article),
        "/article-copy.html": (HTML, article),  # a real duplicate: dropped
        "/empty.html": (HTML, b""),
        "/binary.html": (HTML, random.Random(1251).randbytes(64 * 1024)),
        "/cp1251.html": (HTML, russian.encode("windows-1251")),  # declared utf-8, it is not
        "/huge.html": (HTML, paragraphs_page(HUGE_BYTES, seed=20, title="Huge page")),
        "/deep.html": (HTML, (
            "<html><head><title>Deep</title></head><body>" + "<div>" * 100_000
            + "deeply nested words still count as text" + "</div>" * 100_000 + "</body></html>"
        ).encode()),
        "/markup-only.html": (HTML, (
            b"<html><head><title></title><style>p{color:red}</style></head><body><div><img "
            b"src='/x.png' alt=''><br><hr><table><tr><td></td></tr></table><script>var a = "
            b"'no text here';</script></div></body></html>"
        )),
        "/nul.html": (HTML, (
            b"<html><head><title>NUL\x00bytes</title></head><body><p>Null\x00bytes\x00inside "
            b"a\x00paragraph of otherwise ordinary words about\x00vacuum and autovacuum.</p>"
            b"</body></html>"
        )),
        "/download": ("application/octet-stream", b"\x89PNG\r\n\x1a\n" + bytes(range(256))),
        # Binary bodies a server labels HTML: not text, whatever the label says.
        "/png.html": (HTML, b"\x89PNG\r\n\x1a\n" + random.Random(8).randbytes(4096)),
        "/gzip.html": (HTML, gzip.compress(article)),  # no Content-Encoding: still compressed
        "/controls.html": (HTML, b"<html><body>" + b"\x01\x02words\x03\x04\x05" * 400
                           + b"</body></html>"),
    }
    links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in pages)
    pages["/index.html"] = (HTML, (
        "<!DOCTYPE html><html><head><title>Bad input</title></head><body><h1>Bad input "
        f"site</h1><p>Pages that try to break a crawler.</p><ul>{links}</ul></body></html>"
    ).encode())
    return pages


# Text pages: each must come out exactly once. /download is not text: the spider skips it.
TEXT_PAGES = [p for p in ("/index.html", "/article.html", "/article-copy.html", "/empty.html",
                          "/binary.html", "/cp1251.html", "/huge.html", "/deep.html",
                          "/markup-only.html", "/nul.html", "/png.html", "/gzip.html",
                          "/controls.html")]
NO_TEXT = {"/empty.html", "/markup-only.html"}
NOT_HTML = {"/binary.html", "/png.html", "/gzip.html", "/controls.html"}  # never fingerprinted


@pytest.fixture(scope="module")
def bad_site() -> Iterator[str]:
    """Serve the bad pages from memory on 127.0.0.1 at a free port."""
    pages = _pages()

    with serve_pages(pages) as base:
        yield base


async def crawl_bad_site(base: str, tmp_path: Path, **extra: Any) -> CrawlResult:
    return await crawl(base, fast_settings(NEARDUP_BACKEND=f"sqlite:{tmp_path / 'fp.sqlite'}",
                                           **extra))


def assert_every_page_once(result: CrawlResult) -> None:
    assert result.stats["finish_reason"] == "finished"
    assert result.paths() == sorted(TEXT_PAGES)  # each exactly once: none lost, none doubled
    assert result.stats.get("neardup/errors", 0) == 0
    assert result.stats.get("spider_exceptions", 0) == 0
    assert not any(k.startswith("spider_exceptions/") for k in result.stats)
    assert result.stats["site/skipped_non_text"] == 1  # /download
    assert result.stats["neardup/items"] == len(TEXT_PAGES)
    assert result.stats["neardup/checked"] == (
        len(TEXT_PAGES) - len(NO_TEXT) - len(NOT_HTML) - result.stats.get("neardup/bad_field", 0)
        - result.stats.get("neardup/no_content", 0)
    )
    assert result.stats["neardup/no_text"] == len(NO_TEXT)
    assert result.stats["neardup/not_html"] == len(NOT_HTML)


@deferred_f_from_coro_f
async def test_bad_input_drop_mode(bad_site: str, tmp_path: Path) -> None:
    result = await crawl_bad_site(bad_site, tmp_path)
    assert_every_page_once(result)
    # The only drop is the real duplicate.
    assert list(result.dropped) == ["/article-copy.html"]
    exc = result.dropped["/article-copy.html"]
    assert isinstance(exc, NearDuplicate)
    assert exc.verdict.duplicate_of == bad_site + "/article.html"
    assert exc.verdict.similarity == 1.0
    kept = dict(result.kept)
    for path in NO_TEXT:
        assert kept[path]["neardup_status"] == "no_text"
    for path in NOT_HTML:
        assert kept[path]["neardup_status"] == "not_html", path
    for path in set(kept) - NO_TEXT - NOT_HTML:
        assert "neardup_status" not in kept[path], path  # checked normally, nothing to report
    assert len(kept["/huge.html"]["html"]) >= 20 * 1024 * 1024  # delivered whole to the item
    assert "deeply nested" in kept["/deep.html"]["html"]
    assert kept["/deep.html"]["title"] == "Deep"
    assert result.stats["neardup/unique"] == len(TEXT_PAGES) - len(NO_TEXT) - len(NOT_HTML) - 1
    assert result.stats["neardup/duplicates"] == result.stats["neardup/dropped"] == 1


@deferred_f_from_coro_f
async def test_bad_input_tag_mode(bad_site: str, tmp_path: Path) -> None:
    result = await crawl_bad_site(bad_site, tmp_path, NEARDUP_ACTION="tag")
    assert_every_page_once(result)
    assert result.dropped == {}
    kept = dict(result.kept)
    for path, item in kept.items():
        expected = ("no_text" if path in NO_TEXT else "not_html" if path in NOT_HTML
                    else "checked")
        assert item["neardup_status"] == expected, path
    assert kept["/article-copy.html"]["neardup_of"] == bad_site + "/article.html"
    others = set(kept) - NO_TEXT - NOT_HTML - {"/article-copy.html"}
    assert all(kept[p]["neardup_of"] is None for p in others)
    assert result.stats["neardup/tagged"] == 1


class WrongFieldSpider(SiteSpider):
    """A spider written in a hurry: the Response itself in `html`, raw bytes in `text`."""

    def parse(self, response: Any, **kwargs: Any) -> Iterator[Any]:
        for out in super().parse(response, **kwargs):
            if isinstance(out, dict):
                if "html" in out:
                    out["html"] = response
                else:
                    out["text"] = response.body
            yield out


def neardup_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and r.name.startswith("neardup_pipeline")]


@deferred_f_from_coro_f
async def test_wrong_field_types_are_kept_and_reported_once(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Never str() of a Response: every such page would read alike and all but one be dropped."""
    caplog.set_level(logging.INFO)
    result = await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}"),
                         WrongFieldSpider)
    assert result.stats["finish_reason"] == "finished"
    assert result.dropped == {}
    assert len(result.kept) == PAGES
    assert {i["neardup_status"] for i in result.kept.values()} == {"bad_field"}
    assert result.stats["neardup/bad_field"] == PAGES
    assert "neardup/unique" not in result.stats  # never compared, never indexed
    warned = neardup_warnings(caplog)
    html = [m for m in warned if "'html'" in m]
    text = [m for m in warned if "'text'" in m]
    assert len(html) == 1 and "HtmlResponse" in html[0], warned
    assert len(text) == 1 and "bytes" in text[0], warned


@deferred_f_from_coro_f
async def test_missing_id_field_warned_once_with_its_setting(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Items without the id field get random ids: the warning says which field, which setting."""
    caplog.set_level(logging.INFO)
    settings = crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}", NEARDUP_ACTION="tag",
                              NEARDUP_ID_FIELD="page_id", NEARDUP_URL_FIELD="page_url")
    result = await crawl(site, settings)
    assert len(result.kept) == PAGES
    assert result.stats["neardup/no_id"] == PAGES
    warned = [m for m in neardup_warnings(caplog) if "random id" in m]
    assert len(warned) == 1, warned
    assert "'page_id'" in warned[0] and "'page_url'" in warned[0]
    assert "NEARDUP_ID_FIELD" in warned[0] and "NEARDUP_URL_FIELD" in warned[0]
