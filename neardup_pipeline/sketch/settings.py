"""Settings of the sketch stage: the hash of words and shingles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.setting import doc

HashName = Literal["rabin", "xxh64"]
HASH_NAMES: tuple[HashName, ...] = ("rabin", "xxh64")


@dataclass(frozen=True)
class SketchSettings:
    """What the shingle hasher reads (sketch/shingles.py)."""

    PREFIX: ClassVar[str] = ""

    hash: HashName = field(
        default="rabin",
        metadata=doc("Shingle hash: `rabin` (64-bit Rabin fingerprint) or `xxh64` (faster)"),
    )

    def __post_init__(self) -> None:
        if self.hash not in HASH_NAMES:
            raise ConfigError(f"hash must be 'rabin' or 'xxh64', got {self.hash!r}")
