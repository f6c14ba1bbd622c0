"""Fingerprint index backends behind one contract, chosen by a spec string."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neardup_pipeline.errors import ConfigError, IndexFailure, IndexParamsError, IndexUnavailable
from neardup_pipeline.index.sqlite.spec import SQLITE_SCHEME, sqlite_path
from neardup_pipeline.lazy import loader

if TYPE_CHECKING:
    from neardup_pipeline.config import NearDupConfig
    from neardup_pipeline.index.base import FingerprintIndex, IndexEntry
    from neardup_pipeline.index.memory import MemoryIndex
    from neardup_pipeline.index.sqlite.store import SqliteIndex

__all__ = [
    "FingerprintIndex",
    "IndexEntry",
    "IndexFailure",
    "IndexParamsError",
    "IndexUnavailable",
    "MemoryIndex",
    "SqliteIndex",
    "open_index",
]


def open_index(spec: str, config: NearDupConfig | None = None) -> FingerprintIndex:
    """`memory`, `sqlite:PATH` (`sqlite:///abs/path` absolute) or `http(s)://host:port`
    (Elasticsearch) -> an open index."""
    if spec == "memory":
        from neardup_pipeline.index.memory import MemoryIndex

        return MemoryIndex()
    if spec.startswith(SQLITE_SCHEME):
        from neardup_pipeline.index.sqlite.store import SqliteIndex

        return SqliteIndex(sqlite_path(spec))
    if spec.startswith(("http://", "https://")):
        from neardup_pipeline.config import NearDupConfig
        from neardup_pipeline.index.elastic.store import ElasticIndex

        return ElasticIndex.from_config(spec, config or NearDupConfig())
    raise ConfigError(
        f"unknown backend {spec!r}: use 'memory', 'sqlite:PATH' or 'http(s)://host:port'"
    )


# The backends load with the first index opened (a command that opens none never imports them).
_HOMES = {
    "FingerprintIndex": "neardup_pipeline.index.base",
    "IndexEntry": "neardup_pipeline.index.base",
    "MemoryIndex": "neardup_pipeline.index.memory",
    "SqliteIndex": "neardup_pipeline.index.sqlite.store",
}

__getattr__ = loader(_HOMES)
