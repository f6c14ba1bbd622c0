"""Scrapy add-on: `ADDONS = {"neardup_pipeline.NearDupAddon": 0}` enables the pipeline."""

from __future__ import annotations

from typing import Any

from neardup_pipeline.scrapy.logformatter import NearDupLogFormatter
from neardup_pipeline.scrapy.pipeline import NearDupPipeline

PIPELINE_PRIORITY = 300


class NearDupAddon:
    """Registers NearDupPipeline, its log formatter and the NEARDUP_* defaults (project
    settings win)."""

    def update_settings(self, settings: Any) -> None:
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", NearDupPipeline, PIPELINE_PRIORITY
        )
        settings.set("NEARDUP_ENABLED", True, priority="addon")
        # Near-duplicate drops logged in one line, without the page (scrapy/logformatter.py).
        settings.set("LOG_FORMATTER", NearDupLogFormatter, priority="addon")
