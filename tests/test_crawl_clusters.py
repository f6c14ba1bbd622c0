"""A crawl in Scrapy's own default settings (the add-on alone, many requests in flight) of a site
whose articles also have print, AMP and partner copies that name them canonical, each linked
before its article: the articles are kept whatever order they arrive in, and a copy that passed
before its article is reported as a late duplicate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.scrapy.late import late_duplicate
from tests.crawl_harness import CrawlResult, collect, describe, serve_pages
from tests.documents import random_text

HTML = "text/html; charset=utf-8"
STORIES = ("budget", "harbour", "election", "museum")
COPIES = ("print", "amp", "partner")


def _page(title: str, body: str, canonical: str, chrome: str = "") -> bytes:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<link rel='canonical' href='{canonical}'></head><body>{chrome}"
            f"<article><h1>{title}</h1><p>{body}</p></article>{chrome}</body></html>").encode()


def _pages() -> dict[str, tuple[str, bytes]]:
    served: dict[str, tuple[str, bytes]] = {}
    links = []
    for seed, story in enumerate(STORIES, start=70):
        body = random_text(seed, words=320)
        article = f"/articles/{story}.html"
        chrome = "<nav><a href='/index.html'>Home</a> <a href='/about.html'>About</a></nav>"
        for copy in COPIES:
            path = f"/{copy}/{story}.html"
            served[path] = (HTML, _page(story.title(), body, "{base}" + article))
            links.append(path)
        served[article] = (HTML, _page(story.title(), body, "{base}" + article, chrome))
        links.append(article)
    listing = "".join(f"<li><a href='{path}'>{path}</a></li>" for path in links)
    served["/index.html"] = (HTML, _page("News", f"Copies first.<ul>{listing}</ul>",
                                          "{base}/index.html"))
    served["/about.html"] = (HTML, _page("About", random_text(99, words=200),
                                          "{base}/about.html"))
    return served


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    pages = _pages()
    with serve_pages(pages) as base:
        for path, (ctype, body) in pages.items():  # canonicals are absolute
            pages[path] = (ctype, body.replace(b"{base}", base.encode()))
        yield base


def default_settings(backend: str, **extra: Any) -> dict[str, Any]:
    """Scrapy's defaults with the add-on: only what a test on loopback must turn off."""
    return {"ADDONS": {"neardup_pipeline.NearDupAddon": 0}, "NEARDUP_BACKEND": backend,
            "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False,
            "REMOTE_CONTROL_ENABLED": False, "LOG_LEVEL": "INFO", **extra}


async def crawl_default(site: str, settings: dict[str, Any]) -> tuple[CrawlResult, list[dict]]:
    from scrapy.utils.test import get_crawler

    from neardup_pipeline.scrapy.spider import SiteSpider

    result = CrawlResult(site)
    crawler = get_crawler(SiteSpider, settings)
    collect(crawler, result, None)
    signalled: list[dict[str, Any]] = []

    def on_late(**kwargs: Any) -> None:
        signalled.append({k: kwargs[k] for k in ("url", "now_duplicate_of", "cluster")})

    crawler.signals.connect(on_late, signal=late_duplicate)
    await crawler.crawl_async(start_url=f"{site}/index.html")
    assert crawler.stats is not None
    result.stats = crawler.stats.get_stats()
    return result, signalled


@pytest.mark.integration
@pytest.mark.parametrize("depth_first", [False, True])
@deferred_f_from_coro_f
async def test_the_articles_are_kept_in_any_crawl_order(site: str, tmp_path: Path,
                                                        depth_first: bool) -> None:
    late_file = tmp_path / "late.jsonl"
    extra: dict[str, Any] = {"NEARDUP_LATE_DUPLICATES_FILE": str(late_file)}
    if depth_first:  # the project insists on Scrapy's depth-first order: clusters still hold
        extra.update(DEPTH_PRIORITY=0, SCHEDULER_MEMORY_QUEUE="scrapy.squeues.LifoMemoryQueue",
                     SCHEDULER_DISK_QUEUE="scrapy.squeues.PickleLifoDiskQueue")
    result, signalled = await crawl_default(
        site, default_settings(f"sqlite:{tmp_path / 'fp.sqlite'}", **extra))
    assert result.stats["finish_reason"] == "finished"
    for story in STORIES:
        assert f"/articles/{story}.html" in result.kept, describe(result)
    kept_copies = sorted(p for p in result.kept if p.split("/")[1] in COPIES)
    late = [json.loads(line) for line in late_file.read_text().splitlines()] \
        if late_file.exists() else []
    # every copy that passed did so before a better copy came (its article, or a partner copy
    # ranking before a print or AMP URL), and is reported as a copy of that one
    assert sorted({result.path(line["url"]) for line in late}) == kept_copies
    for line in late:
        story = line["url"].rsplit("/", 1)[1]
        assert line["now_duplicate_of"].rsplit("/", 1)[1] == story
        assert line["now_duplicate_of"] != line["url"]
    assert {line["now_duplicate_of"] for line in late if line["url"] in
            {line["now_duplicate_of"] for line in late}} <= {
        f"{site}/articles/{story}.html" for story in STORIES}
    assert signalled == late
    assert result.stats.get("neardup/late_duplicates", 0) == len(late)
    # the others were dropped as copies of their story's canonical at the time
    for path, exc in result.dropped.items():
        assert exc.verdict.duplicate_of.rsplit("/", 1)[1] == path.rsplit("/", 1)[1]
        assert not path.startswith("/articles/")
