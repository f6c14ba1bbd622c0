"""Scrapy add-on: `ADDONS = {"neardup_pipeline.NearDupAddon": 0}` enables the pipeline."""

from __future__ import annotations

from typing import Any

from neardup_pipeline.scrapy.pipeline import NearDupPipeline

PIPELINE_PRIORITY = 300


class NearDupAddon:
    """Registers NearDupPipeline and the NEARDUP_* defaults (project settings win)."""

    def update_settings(self, settings: Any) -> None:
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", NearDupPipeline, PIPELINE_PRIORITY
        )
        settings.set("NEARDUP_ENABLED", True, priority="addon")
