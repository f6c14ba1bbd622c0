"""neardup: near-duplicate detection for web crawls and search indexes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neardup_pipeline.lazy import loader

if TYPE_CHECKING:
    from neardup_pipeline.config import NearDupConfig
    from neardup_pipeline.document import Document
    from neardup_pipeline.fingerprint import Fingerprint, Fingerprinter
    from neardup_pipeline.index import open_index
    from neardup_pipeline.scrapy.addon import NearDupAddon
    from neardup_pipeline.scrapy.pipeline import NearDupPipeline
    from neardup_pipeline.verdict.deduplicator import Deduplicator
    from neardup_pipeline.verdict.verdict import Verdict

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

# Where each name lives: loaded on first use, so `neardup --version` and a command that needs
# neither Scrapy nor the index start without importing them.
_HOMES = {
    "Deduplicator": "neardup_pipeline.verdict.deduplicator",
    "Document": "neardup_pipeline.document",
    "Fingerprint": "neardup_pipeline.fingerprint",
    "Fingerprinter": "neardup_pipeline.fingerprint",
    "NearDupAddon": "neardup_pipeline.scrapy.addon",
    "NearDupConfig": "neardup_pipeline.config",
    "NearDupPipeline": "neardup_pipeline.scrapy.pipeline",
    "Verdict": "neardup_pipeline.verdict.verdict",
    "open_index": "neardup_pipeline.index",
}

__getattr__ = loader(_HOMES)
