"""What an executor builds once and keeps: the crawl's Fingerprinter for the job's
configuration (methods, models and the compiled readers are costly to set up per task)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Fingerprinter


@lru_cache(maxsize=4)
def fingerprinter(config: NearDupConfig) -> Fingerprinter:
    """The Fingerprinter of `config`, one per Python worker and configuration."""
    return Fingerprinter(config)


class Decoded:
    """Stored signatures (the JSON a fingerprint row holds) back to values, the last few kept:
    an original is verified against many copies in one task."""

    def __init__(self, fingerprints: Fingerprinter, size: int = 2_000) -> None:
        self.fingerprints, self.size = fingerprints, size
        self._held: dict[str, dict[str, Any]] = {}

    def __call__(self, doc_id: str, stored: str) -> Mapping[str, Any]:
        held = self._held.get(doc_id)
        if held is None:
            held = self.fingerprints.decode(json.loads(stored))
            if len(self._held) >= self.size:
                self._held.pop(next(iter(self._held)))
            self._held[doc_id] = held
        return held
