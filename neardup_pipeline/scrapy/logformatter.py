"""Scrapy's log formatter, without whole pages in the log.

Scrapy logs each dropped item after the exception's message, and each scraped item at DEBUG
(Scrapy's default level); an item carries its page's HTML, so a crawl wrote megabytes of markup
into its log. NearDuplicate's message already names the dropped page and its original: that line
is the whole record. A scraped item is logged with each long text field shortened to its start
and its length. Other drops, and every other message, are Scrapy's own. The add-on sets it as
LOG_FORMATTER at add-on priority, so a project's own LOG_FORMATTER wins (derive it from this class
to keep the short lines).
"""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter, is_item
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

from neardup_pipeline.scrapy.pipeline import NearDuplicate

DROPPED_NEAR_DUPLICATE = "Dropped: %(exception)s"
# A logged text or bytes field keeps this many characters, then says how long it was.
LOGGED_FIELD_CHARS = 80


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

    def scraped(
        self, item: Any, response: Response | Failure | None, spider: Any
    ) -> LogFormatterResult:
        result = super().scraped(item, response, spider)
        args = result["args"]
        if isinstance(args, dict):
            result["args"] = {**args, "item": shortened(item)}
        return result


def shortened(item: Any) -> Any:
    """The item as a dict whose long text and bytes fields are cut to their start and length
    (the item itself when it has none, or is not an item Scrapy knows)."""
    if not is_item(item):
        return item
    fields = dict(ItemAdapter(item).items())
    long = {name: value for name, value in fields.items()
            if isinstance(value, (str, bytes)) and len(value) > LOGGED_FIELD_CHARS}
    if not long:
        return item
    for name, value in long.items():
        unit = "characters" if isinstance(value, str) else "bytes"
        fields[name] = f"{value[:LOGGED_FIELD_CHARS]!r}... ({len(value):,} {unit})"
    return fields
