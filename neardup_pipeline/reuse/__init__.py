"""Text reuse: which sources a text copied from, and which passages, as character offsets.

Words with their spans (tokens.py) -> winnowed shingle fingerprints (winnow.py) -> candidate
sources through a passage index (index.py in memory, store.py in SQLite) -> passages aligned on
the two word sequences (align.py) -> per source, its passages and containment (finder.py).
"""

from __future__ import annotations

from neardup_pipeline.reuse.finder import Passage, ReuseFinder, SourceReuse
from neardup_pipeline.reuse.settings import ReuseSettings

__all__ = ["Passage", "ReuseFinder", "ReuseSettings", "SourceReuse"]
