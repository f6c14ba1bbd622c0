"""How the pipeline checks a page: one PageChecker, chosen once when the spider opens."""

from __future__ import annotations

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.parallel.offload import can_check_in_child, can_offload
from neardup_pipeline.scrapy.check.base import Checked, PageChecker
from neardup_pipeline.scrapy.check.child import ChildProcessChecker
from neardup_pipeline.scrapy.check.threaded import InThreadChecker, OffloadedChecker
from neardup_pipeline.scrapy.check.worker import WorkerThread
from neardup_pipeline.scrapy.stats import CrawlStats

__all__ = ["Checked", "PageChecker", "choose_checker"]


def choose_checker(config: NearDupConfig, worker: WorkerThread, stats: CrawlStats) -> PageChecker:
    """With NEARDUP_FINGERPRINT_PROCESSES and self-contained methods, the whole check in a child
    (embedded index or Elasticsearch), else fingerprints in children where the methods allow
    it; else on the thread."""
    if config.scrapy.fingerprint_processes and can_check_in_child(config):
        return ChildProcessChecker(config, worker, stats)
    if config.scrapy.fingerprint_processes and can_offload(config):
        return OffloadedChecker(config, worker, stats)
    return InThreadChecker(config, worker, stats)
