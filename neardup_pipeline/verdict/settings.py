"""Settings of the verdict stage: what the deduplicator records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from neardup_pipeline.setting import doc


@dataclass(frozen=True)
class VerdictSettings:
    """What the deduplicator reads (verdict/deduplicator.py)."""

    PREFIX: ClassVar[str] = ""

    index_duplicates: bool = field(
        default=True,
        metadata=doc("Also index duplicates (clusters stay transitive)"),
    )
