"""`site`: a generic same-host spider that yields every text page it reaches, for neardup."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlparse

import scrapy
from scrapy.http import HtmlResponse, Response, TextResponse, XmlResponse
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    """Crawls one host from `start_url` (`-a start_url=...` or the START_URL variable).

    Items are dicts {url, html | text, title, status}: markup goes to `html`, other text
    (text/plain, JSON) to `text`, so neardup never parses plain text as HTML. Responses that are
    not text (images, archives) yield nothing and are counted under site/skipped_non_text.
    """

    name = "site"

    def __init__(self, start_url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        url = start_url or os.environ.get("START_URL")
        if not url:
            raise ValueError("site spider needs a start URL: -a start_url=URL or START_URL=URL")
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"start_url must be an http(s) URL, got {url!r}")
        self.start_urls = [url]
        # Host only (no port): OffsiteMiddleware matches domains, and warns about ports.
        self.allowed_domains = [parsed.hostname]
        # No allow_domains here: LinkExtractor compares host:port with it, so a start URL with a
        # port would match no link. OffsiteMiddleware (host only) keeps the crawl on the host.
        self.link_extractor = LinkExtractor()

    async def start(self) -> AsyncIterator[Any]:
        """Like the default, but filtered: a link back to the start page is not a second page."""
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            self._inc("site/skipped_non_text")
            self.logger.debug("skipped non-text response %s", response.url)
            return
        item: dict[str, Any] = {"url": response.url, "status": response.status}
        markup = isinstance(response, (HtmlResponse, XmlResponse))
        if markup:
            item["html"] = response.text
        else:
            item["text"] = response.text
        item["title"] = _title(response) if isinstance(response, HtmlResponse) else None
        yield item
        if isinstance(response, HtmlResponse):
            for link in self._links(response):
                yield response.follow(link.url, callback=self.parse)

    def _links(self, response: HtmlResponse) -> list[Any]:
        try:
            return list(self.link_extractor.extract_links(response))
        except Exception:  # a page lxml cannot read has no links to follow, not a crash
            self._inc("site/link_extraction_errors")
            self.logger.warning("could not extract links from %s", response.url, exc_info=True)
            return []

    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)


def _title(response: HtmlResponse) -> str | None:
    """The page's <title>, whitespace collapsed; None when absent or unreadable."""
    try:
        title = response.xpath("//title//text()").getall()
    except Exception:  # malformed markup: the page still counts, without a title
        return None
    text = " ".join(" ".join(title).split())
    return text or None
