"""Which configurations may fingerprint in a child process: a fact about the configured
methods alone, read when a command validates its options (before any pipeline code loads)."""

from __future__ import annotations

from neardup_pipeline.config import NearDupConfig

# Methods whose signature is a function of the document alone.
SELF_CONTAINED_METHODS = frozenset({"simhash", "minhash", "bag"})


def can_offload(config: NearDupConfig) -> bool:
    """Whether every configured method can be fingerprinted away from the index."""
    return set(config.method_names) <= SELF_CONTAINED_METHODS
