"""The add-on's crawl order: breadth-first at add-on priority, so an article is met before its
/print/ copy; a project's own depth-first order wins and is warned about once, at crawl start.

The crawls are real (get_crawler + crawl_async on a site served on 127.0.0.1), one request at
a time: the index links the article, then its print copy.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.squeues import LifoMemoryQueue
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

import neardup_pipeline.scrapy.crawl_settings as bundled_settings
from neardup_pipeline.scrapy.crawl_order import BREADTH_FIRST, depth_first_settings
from neardup_pipeline.scrapy.spider import SiteSpider
from tests.crawl_harness import crawl, describe, fast_settings, serve_pages
from tests.documents import ARTICLE

ADDON = {"ADDONS": {"neardup_pipeline.NearDupAddon": 0}}
LIFO = {
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.LifoMemoryQueue",
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleLifoDiskQueue",
}
HTML = "text/html; charset=utf-8"
PAGES = {
    "/index.html": (HTML, b"<html><head><title>News</title></head><body><h1>News</h1>"
                    b"<a href='/articles/a.html'>The article</a> "
                    b"<a href='/print/a.html'>Print it</a></body></html>"),
    "/articles/a.html": (HTML, f"<html><head><title>A</title></head><body><nav><a href='/'>Home"
                         f"</a></nav><article><p>{ARTICLE}</p></article></body></html>".encode()),
    "/print/a.html": (HTML, f"<html><head><title>A (print)</title></head><body><p>{ARTICLE}"
                      "</p></body></html>".encode()),
}


def _project(**extra: Any) -> dict[str, Any]:
    """A plain Scrapy project with the add-on (not the bundled crawl settings): one request at
    a time, so pages reach the pipeline in request order."""
    return {**ADDON, "NEARDUP_BACKEND": "memory", "NEARDUP_METHODS": ["simhash"],
            "CONCURRENT_REQUESTS": 1, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "INFO", **extra}


def _order_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "depth-first" in r.getMessage()]


def test_the_addon_sets_breadth_first_order_at_addon_priority() -> None:
    settings = get_crawler(SiteSpider, {**ADDON, "NEARDUP_BACKEND": "memory"}).settings
    assert settings.getint("DEPTH_PRIORITY") == 1
    assert settings["SCHEDULER_MEMORY_QUEUE"] == "scrapy.squeues.FifoMemoryQueue"
    assert settings["SCHEDULER_DISK_QUEUE"] == "scrapy.squeues.PickleFifoDiskQueue"
    for name in BREADTH_FIRST:
        assert settings.getpriority(name) == SETTINGS_PRIORITIES["addon"], name


def test_the_project_order_wins_over_the_addon() -> None:
    settings = get_crawler(SiteSpider, {**ADDON, **LIFO, "DEPTH_PRIORITY": 0}).settings
    assert settings["SCHEDULER_MEMORY_QUEUE"] == LIFO["SCHEDULER_MEMORY_QUEUE"]
    assert settings["SCHEDULER_DISK_QUEUE"] == LIFO["SCHEDULER_DISK_QUEUE"]
    assert settings.getint("DEPTH_PRIORITY") == 0


def test_the_bundled_crawl_settings_take_their_order_from_the_addon() -> None:
    """`neardup crawl` and the example project: one definition of the order, the add-on's."""
    assert not set(BREADTH_FIRST) & set(vars(bundled_settings))
    settings = get_crawler(SiteSpider, fast_settings(NEARDUP_BACKEND="memory")).settings
    assert {name: settings[name] for name in BREADTH_FIRST} == dict(BREADTH_FIRST)


@pytest.mark.parametrize(("project", "named"), [
    ({}, set()),
    ({"DEPTH_PRIORITY": 2}, set()),
    ({"DEPTH_PRIORITY": 0}, {"DEPTH_PRIORITY"}),
    ({"DEPTH_PRIORITY": -1, **LIFO}, {"DEPTH_PRIORITY", *LIFO}),
    ({"SCHEDULER_MEMORY_QUEUE": LifoMemoryQueue}, {"SCHEDULER_MEMORY_QUEUE"}),
])
def test_the_settings_that_keep_depth_first_order_are_named(
    project: dict[str, Any], named: set[str],
) -> None:
    settings = get_crawler(SiteSpider, {**ADDON, **project}).settings
    assert set(depth_first_settings(settings)) == named


@deferred_f_from_coro_f
async def test_the_addon_meets_the_article_before_its_print_copy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serve_pages(PAGES) as base, caplog.at_level(logging.WARNING):
        result = await crawl(base, _project())
    assert set(result.dropped) == {"/print/a.html"}, describe(result)
    assert "/articles/a.html" in result.kept
    assert not _order_warnings(caplog)


@pytest.mark.parametrize("project", [LIFO, {"DEPTH_PRIORITY": 0, **LIFO}],
                         ids=["lifo-queues", "lifo-queues-and-depth-priority-0"])
@deferred_f_from_coro_f
async def test_a_project_depth_first_order_wins_and_is_warned_about_once(
    caplog: pytest.LogCaptureFixture, project: dict[str, Any],
) -> None:
    with serve_pages(PAGES) as base, caplog.at_level(logging.WARNING):
        result = await crawl(base, _project(**project))
    assert "/print/a.html" in result.kept, describe(result)  # it came first, and passed
    warnings = _order_warnings(caplog)
    assert len(warnings) == 1, warnings
    for name in project:
        assert name in warnings[0]
    assert "which copy of a near-duplicate cluster is kept depends on the order" in \
        warnings[0].lower()
