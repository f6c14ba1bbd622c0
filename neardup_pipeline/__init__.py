"""neardup: near-duplicate detection for web crawls and search indexes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.index import open_index
from neardup_pipeline.verdict.deduplicator import Deduplicator, Verdict

if TYPE_CHECKING:
    from neardup_pipeline.scrapy.addon import NearDupAddon
    from neardup_pipeline.scrapy.pipeline import NearDupPipeline

__all__ = [
    "Deduplicator",
    "Document",
    "Fingerprint",
    "Fingerprinter",
    "NearDupAddon",
    "NearDupConfig",
    "NearDupPipeline",
    "Verdict",
    "open_index",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """Scrapy parts load on first use, so the pure core imports without Scrapy's start-up."""
    if name == "NearDupPipeline":
        from neardup_pipeline.scrapy.pipeline import NearDupPipeline

        return NearDupPipeline
    if name == "NearDupAddon":
        from neardup_pipeline.scrapy.addon import NearDupAddon

        return NearDupAddon
    raise AttributeError(name)
