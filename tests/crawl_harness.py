"""The one crawl harness of the tests: settings for fast deterministic crawls, a real crawl with
`get_crawler` + `crawl_async` (pytest-twisted, asyncio reactor; never CrawlerProcess inside
pytest, the reactor cannot restart) collecting every item and drop, and sites served on
127.0.0.1 at a free port."""

from __future__ import annotations

import functools
import http.server
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import scrapy
from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

import neardup_pipeline.scrapy.crawl_settings as project_settings
from neardup_pipeline.scrapy.crawl import DEMO_SITE, serve_local
from neardup_pipeline.scrapy.pipeline import NearDuplicate
from neardup_pipeline.scrapy.spider import SiteSpider

# What the demo site holds (see neardup_pipeline/scrapy/demo_site/index.html) and what simhash
# (64 bits, k=3, 3-word shingles of the words as they are) makes of it: the mirror under other
# chrome is at distance 0 (its running text is the original's), the two-word edit at 2, the byte
# copy at 0, the shuffled paragraphs at 2 (their 3-word runs are kept but at the paragraphs'
# edges). Minhash (resemblance 0.8) keeps the shuffled page.
ORIGINALS = [
    "/index.html",
    "/articles/history.html",
    "/articles/transactions.html",
    "/articles/indexes.html",
    "/articles/async-commit.html",
    "/articles/ddl-basics.html",
    "/NOTICE.txt",
]
REORDERED = "/archive/indexes-reordered.html"
DUPLICATES = {
    "/mirror/history.html": "/articles/history.html",
    "/articles/transactions-revised.html": "/articles/transactions.html",
    "/copy/async-commit.html": "/articles/async-commit.html",
    REORDERED: "/articles/indexes.html",
}
PAGES = len(ORIGINALS) + len(DUPLICATES)


def fast_settings(**extra: Any) -> dict[str, Any]:
    """The crawler project's settings (add-on included), made fast and deterministic: one request
    at a time, so pages reach the pipeline in link order; no delay, robots.txt, telnet or remote
    control; none of the project's NEARDUP_* (no environment leaks in). `extra` wins."""
    settings = {
        name: getattr(project_settings, name)
        for name in dir(project_settings)
        if name.isupper() and not name.startswith("NEARDUP_")
    }
    settings.update(
        REMOTE_CONTROL_ENABLED=False,
        TELNETCONSOLE_ENABLED=False,
        ROBOTSTXT_OBEY=False,
        LOG_LEVEL="INFO",
        DOWNLOAD_DELAY=0,
        AUTOTHROTTLE_ENABLED=False,
        CONCURRENT_REQUESTS=1,
        CONCURRENT_REQUESTS_PER_DOMAIN=1,
    )
    settings.update(extra)
    return settings


def crawl_settings(backend: str, **extra: Any) -> dict[str, Any]:
    """`fast_settings` on `backend` with simhash alone: the demo site's outcomes above are
    simhash's (the default methods' crawl: test_crawl_methods)."""
    settings = fast_settings(NEARDUP_BACKEND=backend, NEARDUP_METHODS=["simhash"])
    settings.update(extra)
    return settings


@dataclass
class CrawlResult:
    """Every item's outcome by path (the URL without the base), and the crawl's stats."""

    base: str
    kept: dict[str, Any] = field(default_factory=dict)
    dropped: dict[str, BaseException] = field(default_factory=dict)
    came_out: list[str] = field(default_factory=list)  # every path each time it came out
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def path(self, url: str) -> str:
        assert url.startswith(self.base), url
        return url[len(self.base):]

    def paths(self) -> list[str]:
        """Every outcome's path, sorted, a page twice if it came out twice."""
        return sorted(self.came_out)

    def repeated(self) -> list[str]:
        """Paths that came out more than once: a page must be kept or dropped exactly once."""
        return sorted(path for path, times in Counter(self.came_out).items() if times > 1)


def collect(crawler: Crawler, result: CrawlResult,
            on_item: Callable[[str, Any], None] | None = None) -> None:
    """Record the crawler's items and drops in `result` (item_scraped, item_dropped); `on_item`
    hears of each kept item as it comes out."""

    def scraped(item: Any) -> None:
        path = result.path(str(ItemAdapter(item)["url"]))
        result.kept[path] = item
        result.came_out.append(path)
        if on_item is not None:
            on_item(path, item)

    def dropped(item: Any, exception: BaseException) -> None:
        path = result.path(str(ItemAdapter(item)["url"]))
        result.dropped[path] = exception
        result.came_out.append(path)

    # strong references: the signal dispatcher keeps weak ones, and these closures outlive this
    # call only through it
    crawler.signals.connect(scraped, signal=signals.item_scraped, weak=False)
    crawler.signals.connect(dropped, signal=signals.item_dropped, weak=False)


async def crawl(
    base: str,
    settings: Mapping[str, Any],
    spidercls: type[scrapy.Spider] = SiteSpider,
    on_item: Callable[[str, Any], None] | None = None,
    spider_args: Mapping[str, Any] | None = None,
) -> CrawlResult:
    """One real crawl, from base/index.html unless `spider_args` say where to start."""
    result = CrawlResult(base)
    crawler = get_crawler(spidercls, dict(settings))
    collect(crawler, result, on_item)
    started = time.monotonic()
    await crawler.crawl_async(**(spider_args or {"start_url": f"{base}/index.html"}))
    result.seconds = time.monotonic() - started
    assert crawler.stats is not None
    result.stats = crawler.stats.get_stats()
    return result


def neardup_stats(result: CrawlResult) -> dict[str, Any]:
    """The crawl's neardup/ stats, but for the batch counts: how many pages wait together for
    a check depends on timing."""
    return {k: v for k, v in result.stats.items()
            if k.startswith("neardup/") and not k.startswith("neardup/batch/")}


def describe(result: CrawlResult) -> str:
    """Which page was dropped as a duplicate of which, for assertion messages."""
    return "; ".join(
        f"{path} -> {result.path(str(exc.verdict.duplicate_of))}"
        if isinstance(exc, NearDuplicate) else f"{path}: {exc}"
        for path, exc in sorted(result.dropped.items())
    )


# --- sites --------------------------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read outcomes, not access logs


@contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    """Serve the files under `root`; yields the base URL (no trailing slash)."""
    with serve_local(functools.partial(_Quiet, directory=str(root)), "test-site") as base:
        yield base


@contextmanager
def serve_demo_site(tmp_path: Path) -> Iterator[str]:
    """A temporary copy of the demo site (a test may change it), served; yields its base URL."""
    root = tmp_path / "site"
    shutil.copytree(DEMO_SITE, root)
    with serve_directory(root) as base:
        yield base


@contextmanager
def serve_pages(pages: Mapping[str, tuple[str, bytes]], delay: float = 0.0) -> Iterator[str]:
    """Serve {path: (content type, body)} from memory; yields the base URL. `delay` slows every
    answer."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = pages.get(self.path)
            if found is None:
                self.send_error(404)
                return
            if delay:
                time.sleep(delay)
            content_type, body = found
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serve_local(Handler, "test-site") as base:
        yield base
