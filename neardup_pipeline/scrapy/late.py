"""Pages that left the pipeline as their cluster's canonical and are copies now.

A crawl cannot take back an item it passed. When a later page joins clusters or ranks before
their canonical (verdict/clusters.py), the canonicals it displaced are reported where an
indexer can act on them: the `late_duplicate` signal, the `neardup/late_duplicates` stat, and
one JSON line `{"url", "now_duplicate_of", "cluster"}` each in the file
NEARDUP_LATE_DUPLICATES_FILE names (appended to, so several crawls can share it).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import IO, TYPE_CHECKING

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.verdict.verdict import Verdict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from neardup_pipeline.scrapy.stats import CrawlStats

logger = logging.getLogger(__name__)

# Sent for each such page: send_catch_log(late_duplicate, url=, now_duplicate_of=, cluster=).
late_duplicate = object()


class LateDuplicates:
    """Reports each page a verdict displaced as canonical, on the reactor."""

    def __init__(self, crawler: Crawler, stats: CrawlStats, path: str | None) -> None:
        self._crawler = crawler
        self._stats = stats
        self._path = Path(path).expanduser() if path else None
        self._out: IO[str] | None = None

    def open(self) -> None:
        if self._path is None:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._out = self._path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"NEARDUP_LATE_DUPLICATES_FILE: cannot write {self._path}: "
                              f"{exc.strerror or exc}") from exc

    def report(self, verdict: Verdict) -> None:
        for doc_id in verdict.superseded:
            line = {"url": doc_id, "now_duplicate_of": verdict.canonical,
                    "cluster": verdict.cluster}
            self._stats.inc("late_duplicates")
            logger.info("neardup: %s, passed earlier, is now a near-duplicate of %s",
                        doc_id, verdict.canonical)
            if self._out is not None:
                self._out.write(json.dumps(line, ensure_ascii=False) + "\n")
                self._out.flush()  # an indexer may tail it while the crawl runs
            self._crawler.signals.send_catch_log(signal=late_duplicate, **line)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
