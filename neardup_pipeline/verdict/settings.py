"""Settings of the verdict stage: what the deduplicator records, and how it picks a canonical."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.setting import doc
from neardup_pipeline.verdict.clusters import DEMOTIONS


@dataclass(frozen=True)
class VerdictSettings:
    """What the deduplicator reads (verdict/deduplicator.py)."""

    PREFIX: ClassVar[str] = ""

    index_duplicates: bool = field(
        default=True,
        metadata=doc("Also index duplicates (clusters stay transitive and independent of the "
                     "order pages arrive in)"),
    )
    canonical_demote: tuple[str, ...] = field(
        default=DEMOTIONS,
        metadata=doc("URL variants that rank below the plain page when a cluster's canonical "
                     "is chosen: any of `print`, `amp`, `mobile`, `tracking` (utm_*, fbclid, "
                     "...), `session` (session-id parameters); see "
                     "[how-it-works.md](how-it-works.md#clusters-and-their-canonical)"),
    )

    def __post_init__(self) -> None:
        demote = self.canonical_demote
        if isinstance(demote, str):
            demote = tuple(part.strip() for part in demote.split(",") if part.strip())
            object.__setattr__(self, "canonical_demote", demote)
        unknown = sorted(set(demote) - set(DEMOTIONS))
        if unknown:
            raise ConfigError(f"NEARDUP_CANONICAL_DEMOTE: unknown variants {unknown}; use any "
                              f"of {list(DEMOTIONS)}")
