"""The `site` spider: neardup's generic same-host spider (`scrapy crawl site -a start_url=URL`)."""

from __future__ import annotations

from neardup_pipeline.scrapy.spider import SiteSpider


class Site(SiteSpider):
    """Declared here: Scrapy lists only the spider classes a project's own modules define."""

    name = "site"
