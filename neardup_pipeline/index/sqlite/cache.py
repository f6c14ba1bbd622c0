"""Entries and memberships read or written lately, kept between lookups.

A long crawl's lookups fetch the same originals page after page; the SQLite index keeps them
here while no other connection commits (`PRAGMA data_version` tells it to clear them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

V = TypeVar("V")

# Entries up to this many bytes of stored JSON (a 4,096-word bag is 44 KB, a typical page's
# 4 KB), and this many memberships.
RECENT_ENTRY_BYTES = 32 * 1024 * 1024
RECENT_MEMBERSHIPS = 16_384


class Recent(dict[str, V]):
    """Values by key up to a total weight (1 each unless told); the oldest written goes first."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self._weights: dict[str, int] = {}
        self._total = 0

    def put(self, key: str, value: V, weight: int = 1) -> V:
        self._drop(key)
        while self and self._total + weight > self.limit:
            self._drop(next(iter(self)))
        self[key] = value
        self._weights[key] = weight
        self._total += weight
        return value

    def pick(self, keys: Iterable[str]) -> dict[str, V]:
        """The values held for `keys`."""
        return {key: value for key in keys if (value := self.get(key)) is not None}

    def clear(self) -> None:
        super().clear()
        self._weights.clear()
        self._total = 0

    def _drop(self, key: str) -> None:
        if self.pop(key, None) is not None:
            self._total -= self._weights.pop(key)
