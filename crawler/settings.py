"""Settings of the example project: the polite crawl defaults `neardup crawl` uses, the neardup
add-on, and NEARDUP_* from the environment (see neardup_pipeline/scrapy/crawl_settings.py)."""

from __future__ import annotations

from neardup_pipeline.scrapy.crawl_settings import *  # noqa: F403

BOT_NAME = "neardup-example"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"

ADDONS = {"neardup_pipeline.NearDupAddon": 0}
