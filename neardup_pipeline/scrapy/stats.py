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


INCOMPLETE_REASON = "neardup_incomplete"
# Counts that say the index did not get every page: spooled rows left for the next crawl, a
# failed last commit (SQLite).
_LEFT_OVER = ("spool/pending", "unrecorded")


class FinishReason:
    """Turns a crawl that ended as complete ("finished", "closespider_*") into
    `neardup_incomplete` when neardup's part is not done, so the finish reason and `neardup
    crawl`'s exit status say the job must run again. Scrapy's CoreStats sets the reason on
    `spider_closed`, after the pipelines closed; this handler, connected later, runs after it."""

    def __init__(self, collector: StatsCollector | None, signals: Any) -> None:
        self.collector = collector
        self.left = 0
        if collector is not None:
            from scrapy import signals as scrapy_signals

            signals.connect(self._closed, signal=scrapy_signals.spider_closed)

    def note(self, counts: Mapping[str, Any]) -> None:
        """The check's final counts."""
        self.left = sum(int(counts.get(key) or 0) for key in _LEFT_OVER)

    def _closed(self, reason: str) -> None:
        if self.collector is None or not self.left:
            return
        if reason == "finished" or reason.startswith("closespider_"):
            self.collector.set_value("finish_reason", INCOMPLETE_REASON)
