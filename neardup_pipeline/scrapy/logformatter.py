"""Scrapy's log formatter, without whole pages in the log of a near-duplicate drop.

Scrapy logs each dropped item after the exception's message; an item carries its page's HTML,
so a crawl with many copies wrote megabytes of markup at INFO. NearDuplicate's message already
names the dropped page and its original: that line is the whole record. Other drops, and every
other message, are Scrapy's own. The add-on sets it as LOG_FORMATTER at add-on priority, so a
project's own LOG_FORMATTER wins (derive it from this class to keep the short drops).
"""

from __future__ import annotations

from typing import Any

from scrapy.logformatter import LogFormatter, LogFormatterResult

from neardup_pipeline.scrapy.pipeline import NearDuplicate

DROPPED_NEAR_DUPLICATE = "Dropped: %(exception)s"


class NearDupLogFormatter(LogFormatter):
    """LogFormatter whose near-duplicate drops are one line, without the item."""

    def dropped(
        self, item: Any, exception: BaseException, response: Any, spider: Any
    ) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        if isinstance(exception, NearDuplicate):
            result["msg"] = DROPPED_NEAR_DUPLICATE
            result["args"] = {"exception": exception}
        return result
