"""Scrapy add-on: `ADDONS = {"neardup_pipeline.NearDupAddon": 0}` enables the pipeline."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals

from neardup_pipeline.scrapy.crawl_order import (
    depth_first_settings,
    depth_first_warning,
    set_breadth_first,
)
from neardup_pipeline.scrapy.logformatter import NearDupLogFormatter
from neardup_pipeline.scrapy.pipeline import NearDupPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

PIPELINE_PRIORITY = 300

logger = logging.getLogger(__name__)


class NearDupAddon:
    """Registers NearDupPipeline, its log formatter, breadth-first request order and the
    NEARDUP_* defaults (project settings win)."""

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler
        if crawler is not None:
            # Checked when the crawl starts, on the final settings (later add-ons' included).
            crawler.signals.connect(self._warn_if_depth_first, signal=signals.engine_started)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupAddon:
        return cls(crawler)

    def update_settings(self, settings: Any) -> None:
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", NearDupPipeline, PIPELINE_PRIORITY
        )
        settings.set("NEARDUP_ENABLED", True, priority="addon")
        # Near-duplicate drops logged in one line, without the page (scrapy/logformatter.py).
        settings.set("LOG_FORMATTER", NearDupLogFormatter, priority="addon")
        # The first copy seen is kept: breadth-first meets an article before its /print/ copy.
        set_breadth_first(settings)

    def _warn_if_depth_first(self) -> None:
        if self.crawler is None or not self.crawler.settings.getbool("NEARDUP_ENABLED"):
            return
        kept = depth_first_settings(self.crawler.settings)
        if kept:
            logger.warning(depth_first_warning(kept), extra={"crawler": self.crawler})
