"""Real crawls of the bundled demo site through the `site` spider and the neardup add-on.

The site is served by ThreadingHTTPServer on a free local port; crawls run on the asyncio reactor
via pytest-twisted (get_crawler + crawl_async, never CrawlerProcess). One request at a time, so
pages reach the pipeline in link order and the original of each pair is the one checked first.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest
import scrapy
from itemadapter import ItemAdapter
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.scrapy.spider import SiteSpider
from neardup_pipeline.text.extract import walk_in_use
from tests.crawl_harness import (
    DUPLICATES,
    ORIGINALS,
    PAGES,
    crawl,
    crawl_settings,
    describe,
    neardup_stats,
    serve_pages,
)
from tests.crawl_outcomes import assert_drop_outcome, assert_tag_outcome, simhash_stats
from tests.documents import near_copy_groups

TAG_FIELDS = ("neardup_of", "neardup_similarity", "neardup_method", "neardup_cluster",
              "neardup_status")


@deferred_f_from_coro_f
async def test_drop_mode_sqlite(site: str, tmp_path: Path) -> None:
    result = await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}"))
    assert_drop_outcome(result)
    item = result.kept["/articles/history.html"]
    assert item["status"] == 200 and item["title"].startswith("A Brief History of PostgreSQL")
    assert "html" in item and "text" not in item
    notice = result.kept["/NOTICE.txt"]
    assert "text" in notice and "html" not in notice  # plain text is not parsed as HTML


@deferred_f_from_coro_f
async def test_the_walk_in_use_is_logged_at_start(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator sees which HTML walk reads the pages: the one `neardup --version` names."""
    caplog.set_level(logging.INFO, logger="neardup_pipeline")
    assert_drop_outcome(await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}")))
    assert f"neardup: HTML walk: {walk_in_use()}" in caplog.messages


@deferred_f_from_coro_f
async def test_scraped_items_are_logged_without_their_pages(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """At DEBUG (Scrapy's default level) each scraped item is logged: its HTML shows as a start
    and a length, its short fields in full, so a crawl's log does not hold every page."""
    caplog.set_level(logging.DEBUG, logger="scrapy.core.scraper")
    result = await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}",
                                              LOG_LEVEL="DEBUG"))
    scraped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Scraped")]
    assert len(scraped) == len(result.kept)
    history = next(m for m in scraped if "/articles/history.html" in m)
    html = result.kept["/articles/history.html"]["html"]
    assert f"({len(html):,} characters)" in history and html[200:260] not in history
    assert "'status': 200" in history


@deferred_f_from_coro_f
async def test_an_index_of_other_parameters_closes_the_crawl_cleanly(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index filled with other methods cannot be mixed with this crawl's fingerprints: one
    ERROR line naming the file and the way out, and the crawl closes before a page is fetched."""
    backend = f"sqlite:{tmp_path / 'fp.sqlite'}"
    assert_drop_outcome(await crawl(site, crawl_settings(backend)))
    caplog.clear()
    result = await crawl(site, crawl_settings(backend, NEARDUP_METHODS=["minhash"]))
    assert result.stats["finish_reason"] == "neardup_index_params"
    assert not result.kept and "downloader/request_count" not in result.stats
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "other parameters" in errors[0] and "fp.sqlite" in errors[0]
    assert "minhash: the settings have it, the index not" in errors[0]
    assert len(errors[0]) < 400, errors[0]  # what differs, not the two parameter sets
    assert not any(r.exc_info for r in caplog.records)


@deferred_f_from_coro_f
async def test_an_index_folder_that_does_not_exist_is_never_made(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A mistyped folder in NEARDUP_BACKEND would start a new, empty index without a word: the
    crawl closes before a fetch, naming the folder and the setting."""
    missing = tmp_path / "mistyped" / "fp.sqlite"
    result = await crawl(site, crawl_settings(f"sqlite:{missing}"))
    assert result.stats["finish_reason"] == "neardup_bad_setting"
    assert not result.kept and "downloader/request_count" not in result.stats
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and f"{str(missing)!r} does not exist" in errors[0]
    assert "NEARDUP_BACKEND" in errors[0] and not missing.parent.exists()
    assert not any(r.exc_info for r in caplog.records)


@deferred_f_from_coro_f
async def test_a_wrong_setting_value_closes_the_crawl_naming_the_setting(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A value out of range is named as the project wrote it (NEARDUP_SIMHASH_K, not a field
    name) in one ERROR line, and the crawl closes before a fetch with its own reason, without
    a traceback."""
    result = await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}",
                                              NEARDUP_SIMHASH_K=99))
    assert result.stats["finish_reason"] == "neardup_bad_setting"
    assert not result.kept and "downloader/request_count" not in result.stats
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == ["neardup: NEARDUP_SIMHASH_K must lie in [0, 63] (the settings give "
                      "NEARDUP_SIMHASH_K = 99); the spider closes (neardup_bad_setting)"]
    assert not any(r.exc_info for r in caplog.records)


@deferred_f_from_coro_f
async def test_tag_mode(site: str, crawl_backend: dict[str, str]) -> None:
    assert_tag_outcome(await crawl(site, crawl_settings(**crawl_backend, NEARDUP_ACTION="tag")))


@deferred_f_from_coro_f
async def test_recrawl_same_sqlite_index(site: str, tmp_path: Path) -> None:
    """A re-crawled URL replaces its own fingerprint: only the variants are duplicates again."""
    backend = f"sqlite:{tmp_path / 'fp.sqlite'}"
    first = await crawl(site, crawl_settings(backend))
    assert_drop_outcome(first)
    second = await crawl(site, crawl_settings(backend))
    assert_drop_outcome(second)


@deferred_f_from_coro_f
async def test_drop_mode_elasticsearch(
    site: str, es_url: str, es_index_names: dict[str, str]
) -> None:
    settings = crawl_settings(
        es_url,
        NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"],
        NEARDUP_PAGES_INDEX=es_index_names["pages_index"],
    )
    result = await crawl(site, settings)
    assert_drop_outcome(result)

    from elasticsearch import AsyncElasticsearch

    client = AsyncElasticsearch(es_url, request_timeout=30)
    try:
        pages = es_index_names["pages_index"]
        await client.indices.refresh(index=pages)
        for path in ORIGINALS:
            found = await client.search(
                index=pages, query={"term": {"url": site + path}}, size=5
            )
            hits = found["hits"]["hits"]
            assert len(hits) == 1, path
            assert hits[0]["_source"]["cluster_id"] == site + path
            assert hits[0]["_source"]["is_canonical"] is True
        # Kept pages collapse to one hit per cluster (what the pages index is for).
        collapsed = await client.search(
            index=pages, query={"match_all": {}}, collapse={"field": "cluster_id"}, size=50
        )
        clusters = {h["_source"]["cluster_id"] for h in collapsed["hits"]["hits"]}
        assert clusters == {site + p for p in ORIGINALS}
    finally:
        await client.close()


# Item types: the pipeline reaches every one through itemadapter.


class PageItem(scrapy.Item):
    url = scrapy.Field()
    status = scrapy.Field()
    title = scrapy.Field()
    html = scrapy.Field()
    text = scrapy.Field()
    neardup_of = scrapy.Field()
    neardup_similarity = scrapy.Field()
    neardup_method = scrapy.Field()
    neardup_cluster = scrapy.Field()
    neardup_status = scrapy.Field()


class BarePageItem(scrapy.Item):
    """Declares no tag fields: tagging is counted as neardup/missing_fields, never a crash."""

    url = scrapy.Field()
    status = scrapy.Field()
    title = scrapy.Field()
    html = scrapy.Field()
    text = scrapy.Field()


@dataclasses.dataclass
class PageData:
    url: str
    status: int
    title: str | None = None
    html: str | None = None
    text: str | None = None
    neardup_of: str | None = None
    neardup_similarity: float | None = None
    neardup_method: str | None = None
    neardup_cluster: str | None = None
    neardup_status: str | None = None


@attrs.define
class PageAttrs:
    url: str
    status: int
    title: str | None = None
    html: str | None = None
    text: str | None = None
    neardup_of: str | None = None
    neardup_similarity: float | None = None
    neardup_method: str | None = None
    neardup_cluster: str | None = None
    neardup_status: str | None = None


def typed_spider(factory: Callable[..., Any]) -> type[SiteSpider]:
    """The site spider, yielding `factory(**fields)` instead of dicts."""

    class TypedSiteSpider(SiteSpider):
        def parse(self, response: Any, **kwargs: Any) -> Iterator[Any]:
            for out in super().parse(response, **kwargs):
                yield factory(**out) if isinstance(out, dict) else out

    return TypedSiteSpider


@pytest.mark.parametrize("factory", [PageItem, PageData, PageAttrs], ids=lambda f: f.__name__)
@deferred_f_from_coro_f
async def test_item_types_tag_mode(
    site: str, tmp_path: Path, factory: Callable[..., Any]
) -> None:
    settings = crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}", NEARDUP_ACTION="tag")
    result = await crawl(site, settings, typed_spider(factory))
    assert all(isinstance(item, factory) for item in result.kept.values())  # type: ignore[arg-type]
    assert_tag_outcome(result)


@pytest.mark.parametrize("factory", [PageItem, PageData, PageAttrs], ids=lambda f: f.__name__)
@deferred_f_from_coro_f
async def test_item_types_drop_mode(
    site: str, tmp_path: Path, factory: Callable[..., Any]
) -> None:
    result = await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}"),
                         typed_spider(factory))
    assert_drop_outcome(result)


@deferred_f_from_coro_f
async def test_item_without_tag_fields(site: str, tmp_path: Path) -> None:
    settings = crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}", NEARDUP_ACTION="tag")
    result = await crawl(site, settings, typed_spider(BarePageItem))
    assert result.stats["finish_reason"] == "finished"
    assert result.dropped == {}
    assert sorted(result.kept) == sorted(ORIGINALS + list(DUPLICATES))
    for item in result.kept.values():
        assert not set(TAG_FIELDS) & set(item.keys())
    stats = neardup_stats(result)
    # Tagging writes five fields on every page; none is declared.
    assert stats.pop("neardup/missing_fields") == PAGES * len(TAG_FIELDS)
    assert stats == simhash_stats("tagged")
    assert "neardup/errors" not in stats


# What a user sees: the log, the files a crawl leaves, the items that come out.


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@deferred_f_from_coro_f
async def test_misspelt_setting_named_with_the_closest_known_one(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """NEARDUP_ACTOIN is not silently ignored; NEARDUP_ENABLED and NEARDUP_TAG_FIELDS are known.
    The start is logged in one INFO line: backend, methods, action."""
    caplog.set_level(logging.INFO)
    backend = f"sqlite:{tmp_path / 'fp.sqlite'}"
    settings = crawl_settings(backend, NEARDUP_ACTOIN="tag", NEARDUP_ENABLED=True,
                              NEARDUP_TAG_FIELDS={"of": "neardup_of"})
    assert_drop_outcome(await crawl(site, settings))  # the misspelt action changed nothing
    unknown = [m for m in warnings_of(caplog) if "NEARDUP_" in m]
    assert len(unknown) == 1, unknown
    assert "NEARDUP_ACTOIN" in unknown[0] and "did you mean NEARDUP_ACTION?" in unknown[0]
    started = [m for m in caplog.messages if m.startswith("neardup: methods=")]
    assert len(started) == 1, started
    assert f"methods=simhash action=drop backend={backend}" in started[0]


@deferred_f_from_coro_f
async def test_drops_logged_in_one_line_without_the_page(
    site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Scrapy logs a dropped item after its reason; the reason names both pages, the item (a
    whole page of HTML) stays out of the log."""
    caplog.set_level(logging.INFO)
    result = await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}"))
    assert_drop_outcome(result)
    dropped = [m for m in caplog.messages if m.startswith("Dropped:")]
    assert len(dropped) == len(DUPLICATES)
    for path, original in DUPLICATES.items():
        line = f"Dropped: {site}{path} is a near-duplicate of {site}{original} (simhash, "
        assert sum(m.startswith(line) for m in dropped) == 1, (line, dropped)
    for message in dropped:
        assert "\n" not in message and "<" not in message and "html':" not in message


@deferred_f_from_coro_f
async def test_items_leave_without_html_when_asked(site: str, tmp_path: Path) -> None:
    """NEARDUP_KEEP_HTML = False: the page is checked, then leaves without its HTML (feeds need
    not carry whole pages); the verdicts are the same."""
    result = await crawl(site, crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}",
                                              NEARDUP_KEEP_HTML=False))
    assert_drop_outcome(result)
    assert all("html" not in item for item in result.kept.values())
    assert result.kept["/articles/history.html"]["title"].startswith("A Brief History")


@deferred_f_from_coro_f
async def test_elasticsearch_crawl_is_quiet_and_leaves_no_files(
    site: str, es_url: str, es_index_names: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """No per-request client lines at INFO, no spool file in the working folder (nothing was
    spooled), and the pages index's template made for the name the user chose."""
    client_log = logging.getLogger("elastic_transport")
    level = client_log.level
    client_log.setLevel(logging.NOTSET)  # as in a fresh process
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.INFO)
    pages = f"site-pages-{uuid.uuid4().hex[:10]}"
    settings = crawl_settings(es_url, NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"],
                              NEARDUP_PAGES_INDEX=pages)
    from elasticsearch import Elasticsearch

    es = Elasticsearch(es_url, request_timeout=30)
    try:
        assert_drop_outcome(await crawl(site, settings))
        assert not [r for r in caplog.records if r.name.startswith("elastic_transport")
                    and r.levelno < logging.WARNING]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # the served site only
        templates = es.indices.get_index_template(name=pages)["index_templates"]
        assert templates[0]["index_template"]["index_patterns"] == [pages]
    finally:
        es.options(ignore_status=404).indices.delete(index=pages)
        es.options(ignore_status=404).indices.delete_index_template(name=pages)
        es.close()
        client_log.setLevel(level)


class ArrivalOrder:
    """An item pipeline just before neardup's (300): the order pages reach the check."""

    urls: ClassVar[list[str]] = []

    def process_item(self, item: Any) -> Any:
        self.urls.append(str(ItemAdapter(item)["url"]))
        return item


def copies_site() -> dict[str, tuple[str, bytes]]:
    """An index page linking 30 texts, each but a few followed by near-copies (0-3 words
    changed), which the crawl fetches 16 at a time."""
    html = "text/html; charset=utf-8"
    pages = {
        f"/{doc.doc_id}.html": (html, f"<html><head><title>{doc.doc_id}</title></head><body>"
                                      f"<p>{doc.text}</p></body></html>".encode())
        for group in near_copy_groups(5, vocabulary=400, originals=30, words=150)
        for doc in group
    }
    links = "".join(f'<a href="{path}">{path}</a> ' for path in pages)
    pages["/index.html"] = (html, f"<html><body><p>{links}</p></body></html>".encode())
    return pages


@deferred_f_from_coro_f
async def test_pages_waiting_together_are_checked_as_one_batch(
    es_url: str, es_index_names: dict[str, str]
) -> None:
    """16 requests at a time: pages reach the pipeline while earlier ones are looked up, and
    are then checked together (one msearch); the verdicts are those of checking each page
    alone in the order they arrived."""
    ArrivalOrder.urls.clear()
    settings = crawl_settings(
        es_url, NEARDUP_METHODS=["auto"], NEARDUP_ACTION="tag",
        NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"],
        CONCURRENT_REQUESTS=16, CONCURRENT_REQUESTS_PER_DOMAIN=16,
        ITEM_PIPELINES={f"{__name__}.ArrivalOrder": 299},
    )
    site = copies_site()
    with serve_pages(site) as base:
        result = await crawl(base, settings)
    assert result.repeated() == [] and sorted(result.kept) == sorted(site)
    stats = result.stats
    assert 1 <= stats["neardup/batch/lookups"] < stats["neardup/batch/pages"], stats
    config = NearDupConfig.from_settings(Settings(settings)).replace(backend="memory")
    alone = Deduplicator(MemoryIndex(), config)
    expected, got = {}, {}
    for url in ArrivalOrder.urls:
        item = result.kept[result.path(url)]
        verdict = alone.process(Document(url, html=item["html"], url=url))
        expected[url] = ("checked" if verdict.status == "ok" else verdict.status,
                         verdict.duplicate_of, verdict.similarity, verdict.method,
                         verdict.cluster)
        got[url] = tuple(item.get(f) for f in ("neardup_status", "neardup_of",
                         "neardup_similarity", "neardup_method", "neardup_cluster"))
    assert got == expected
    assert sorted(ArrivalOrder.urls) == sorted(base + path for path in site)
    assert sum(1 for row in expected.values() if row[1] is not None) >= 10


class BytesSpider(SiteSpider):
    """The site spider, with each page's HTML as the response's bytes (`response.body`), as
    many projects yield it."""

    name = "bytes"

    def parse(self, response: Any, **kwargs: Any) -> Iterator[Any]:
        for out in super().parse(response, **kwargs):
            if isinstance(out, dict) and "html" in out:
                out = {**out, "html": response.body}
            yield out


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


class BytesAndImageSpider(BytesSpider):
    """`BytesSpider`, and an image item beside the start page, its `html` the image's bytes
    (a project yielding every response's body)."""

    name = "bytes-and-image"

    def parse(self, response: Any, **kwargs: Any) -> Iterator[Any]:
        yield from super().parse(response, **kwargs)
        if response.url.endswith("/index.html"):
            yield {"url": response.urljoin("/logo.png"), "html": PNG}


@deferred_f_from_coro_f
async def test_html_given_as_bytes_reaches_a_json_feed(site: str, tmp_path: Path) -> None:
    """HTML as bytes (the README allows it) with NEARDUP_KEEP_HTML on: every kept item reaches
    a JSON lines feed, its HTML as the text neardup read (bytes end a JSON feed's item); an
    image's bytes too, one character per byte."""
    feed = tmp_path / "kept.jsonl"
    result = await crawl(site, crawl_settings(
        f"sqlite:{tmp_path / 'fp.sqlite'}",
        FEEDS={str(feed): {"format": "jsonlines", "encoding": "utf-8"}}), BytesAndImageSpider)
    image = result.kept.pop("/logo.png")
    assert sorted(result.kept) == sorted(ORIGINALS), describe(result)
    assert sorted(result.dropped) == sorted(DUPLICATES), describe(result)
    assert result.stats["neardup/items"] == PAGES + 1
    assert result.stats["neardup/not_html"] == 1
    # lines end at "\n" alone: an image's characters hold others splitlines() would split at
    lines = [json.loads(line) for line in feed.read_text(encoding="utf-8").split("\n") if line]
    assert sorted(line["url"] for line in lines) == sorted(
        site + p for p in [*result.kept, "/logo.png"])
    by_url = {line["url"]: line for line in lines}
    history = by_url[site + "/articles/history.html"]["html"]
    assert isinstance(history, str) and "A Brief History" in history
    logo = by_url[site + "/logo.png"]
    assert logo["neardup_status"] == image["neardup_status"] == "not_html"
    assert logo["html"].encode("latin-1") == PNG
