"""The pipeline Scrapy gets when a NEARDUP_* setting is wrong: it closes the crawl at start.

Raising from `from_crawler` would end the crawl with a traceback (through asyncio's "Task
exception was never retrieved"); `CloseSpider` from `open_spider` is Scrapy's clean way for a
component that cannot start, with the setting named once in the log and a finish reason."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.exceptions import CloseSpider

from neardup_pipeline.errors import ConfigError

logger = logging.getLogger("neardup_pipeline.scrapy.pipeline")

FINISH_REASON = "neardup_bad_setting"


class RefusedSettings:
    """Stands in for the pipeline: says what is wrong and closes the spider before a fetch."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error

    async def open_spider(self) -> None:
        logger.error("neardup: %s; the spider closes (%s)", self.error, FINISH_REASON)
        raise CloseSpider(FINISH_REASON)

    async def close_spider(self) -> None:
        """Nothing was opened."""

    async def process_item(self, item: Any) -> Any:
        """Never reached: the spider closes before a page is fetched."""
        return item
