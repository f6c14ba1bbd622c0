"""The pipeline's own crawl stats, under `neardup/` in Scrapy's stats collector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy.statscollectors import StatsCollector

STATS_PREFIX = "neardup/"


class CrawlStats:
    """Counts and values under `neardup/`; a crawler without a stats collector counts nothing."""

    def __init__(self, collector: StatsCollector | None) -> None:
        self.collector = collector

    def inc(self, key: str) -> None:
        if self.collector is not None:
            self.collector.inc_value(STATS_PREFIX + key)

    def publish(self, values: Mapping[str, Any]) -> None:
        """Set each value (counts kept by the worker thread, copied on the reactor)."""
        if self.collector is not None:
            for key, value in values.items():
                self.collector.set_value(STATS_PREFIX + key, value)
