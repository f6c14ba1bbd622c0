"""Hostile and broken pages: each gives a bounded-time, bounded-memory result.

The corpus is generated (tests/hostile_corpus.py, seeded): 50 MB of text, megabyte-long tokens,
millions of tiny or unclosed tags, a tag with 200k attributes, invalid UTF-8, mixed scripts,
right-to-left text, NUL bytes, entity expansion attempts (billion laughs, external entity, an
entity flood), deep nesting and empty documents. Each page is fingerprinted in a forked child so
its own peak memory is measured; a real crawl then takes the lot through the pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from itemadapter import ItemAdapter
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import NearDupConfig
from neardup_pipeline.text.extract import html_to_text
from tests.crawl_harness import crawl, fast_settings, serve_pages
from tests.hostile_corpus import measure, pages

# Bounds on 2 cores: the largest measured are ~3.5 s and ~300 MB (50 MB page, cut at 20 MB).
MAX_SECONDS = 15.0
MAX_PEAK_MB = 600.0
NO_TEXT = {"empty", "whitespace-only", "comment-only", "script-50mb", "long-tokens-20x1mb"}
NOT_HTML = {"nul-only"}  # as the pipeline says: read as a binary body, not as a page


@pytest.mark.parametrize("name", list(pages()))
def test_hostile_page_is_bounded(name: str) -> None:
    m = measure(name, pages()[name], NearDupConfig())
    print(f"\n[hostile] {name}: {m.input_bytes / 2**20:.1f} MB in, {m.seconds:.2f} s, "
          f"peak +{m.peak_mb:.0f} MB, {m.status}, {m.words} words, cut={m.truncated}")
    assert m.error == ""
    assert m.seconds < MAX_SECONDS
    assert m.peak_mb < MAX_PEAK_MB
    assert m.status == ("no_text" if name in NO_TEXT else "not_html" if name in NOT_HTML else "ok")


def test_no_entity_is_expanded_and_no_file_is_read() -> None:
    laughs = html_to_text(pages()["billion-laughs"]())
    assert "lollol" not in laughs.text and len(laughs.text) < 200
    external = html_to_text(pages()["external-entity"]())
    assert "root:" not in external.text


def test_tag_and_word_caps_apply() -> None:
    tags = html_to_text(pages()["unclosed-tags-3m"]())
    assert tags.parser == "scan"
    attrs = html_to_text(pages()["attrs-flood"]())
    assert attrs.parser == "scan" and attrs.text.endswith("text")
    small = html_to_text(b"<p>" + b"<b>word</b> " * 50 + b"</p>", max_tags=10)
    assert small.parser == "scan" and small.text.split() == ["word"] * 50
    script = html_to_text(b"<p>kept</p><script>var x = '<p>hidden</p>';</script><p>too</p>",
                          max_tags=1)
    assert script.text.split() == ["kept", "too"]


@pytest.fixture(scope="module")
def hostile_site() -> Iterator[str]:
    bodies = {f"/{name}": build() for name, build in pages().items()}
    links = "".join(f'<a href="{p}">{p}</a> ' for p in bodies)
    bodies["/index.html"] = f"<html><body><p>hostile pages</p>{links}</body></html>".encode()

    with serve_pages({path: ("text/html", body) for path, body in bodies.items()}) as base:
        yield base


class RawSpider(scrapy.Spider):
    """Items straight from the bytes, no parsing in the spider: the pipeline is under test here
    (Scrapy's own link extraction with lxml takes minutes on the 200k-attribute tag)."""

    name = "raw"

    def __init__(self, base: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.base = base

    async def start(self) -> Any:
        for name in pages():
            yield scrapy.Request(f"{self.base}/{name}", callback=self.parse)

    def parse(self, response: scrapy.http.Response, **kwargs: Any) -> Any:
        yield {"url": response.url, "html": response.body}


@deferred_f_from_coro_f
async def test_hostile_crawl_keeps_every_page(hostile_site: str, tmp_path: Path) -> None:
    """Through Scrapy and the pipeline: every page kept once, checked, no_text or not_html (a
    body of NULs), no error."""
    settings = fast_settings(
        CONCURRENT_REQUESTS=2, CONCURRENT_REQUESTS_PER_DOMAIN=2,
        DOWNLOAD_WARNSIZE=0, DOWNLOAD_MAXSIZE=64 * 2**20, DOWNLOAD_TIMEOUT=120,
        NEARDUP_ACTION="tag",
        NEARDUP_BACKEND=f"sqlite:{tmp_path / 'fp.sqlite'}",
    )
    result = await crawl(hostile_site, settings, RawSpider, spider_args={"base": hostile_site})
    seen = {path.removeprefix("/"): str(ItemAdapter(item).get("neardup_status"))
            for path, item in result.kept.items()}
    stats = result.stats
    assert stats["finish_reason"] == "finished"
    assert sorted(seen) == sorted(pages())
    assert set(seen.values()) <= {"checked", "no_text", "not_html"}  # not_html: nul-only
    assert stats.get("neardup/errors", 0) == 0
    assert stats["neardup/items"] == len(seen)
    assert stats["neardup/checked"] == list(seen.values()).count("checked")
