"""One crawler process for tests/test_reliability_parallel.py (a CLI owns its process, so it may
use CrawlerProcess): crawl START_URL into the Elasticsearch index, tag mode, and write one JSON
line per item: url, neardup_of, neardup_status and the wall time it came out of the pipeline."""

from __future__ import annotations

import json
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from itemadapter import ItemAdapter
from scrapy.crawler import CrawlerProcess

from neardup_pipeline.scrapy.spider import SiteSpider
from tests.crawl_harness import CrawlResult, collect, fast_settings


def main(start_url: str, es_url: str, index: str, bulk_size: str, out: str) -> int:
    settings = fast_settings(
        LOG_LEVEL="WARNING", NEARDUP_ACTION="tag", NEARDUP_BACKEND=es_url,
        NEARDUP_FINGERPRINT_INDEX=index, NEARDUP_ES_BULK_SIZE=int(bulk_size),
        NEARDUP_SPOOL_PATH=out + ".spool",
    )
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    lines: list[str] = []

    def came_out(path: str, item: Any) -> None:
        a = ItemAdapter(item)
        lines.append(json.dumps({"url": a["url"], "of": a.get("neardup_of"),
                                 "status": a.get("neardup_status"), "t": time.time()}))

    site = urlsplit(start_url)
    collect(crawler, CrawlResult(f"{site.scheme}://{site.netloc}"), came_out)
    process.crawl(crawler, start_url=start_url)
    process.start()
    with open(out, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    assert crawler.stats is not None
    return 0 if crawler.stats.get_value("finish_reason") == "finished" else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
