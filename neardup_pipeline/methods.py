"""The contract every detection method fulfils, and the registry that builds them from config."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .config import NearDupConfig
from .shingles import ShingleHasher
from .simhash import SimhashMethod


class Method(Protocol):
    """A detection method: a signature per document, lookup keys, and a pairwise verdict."""

    @property
    def name(self) -> str: ...

    def params(self) -> dict[str, object]:
        """Parameters that make signatures comparable (stored with the index)."""
        ...

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> Any: ...

    def keys(self, signature: Any) -> list[str]:
        """Lookup keys: any true near-duplicate shares at least one with the document."""
        ...

    def encode(self, signature: Any) -> Any:
        """JSON-able form stored in an index."""
        ...

    def decode(self, stored: Any) -> Any: ...

    def similarity(self, a: Any, b: Any) -> float: ...

    def is_duplicate(self, a: Any, b: Any) -> bool: ...

    def explain(self, a: Any, b: Any) -> dict[str, object]: ...


def build_methods(config: NearDupConfig) -> dict[str, Method]:
    """The configured methods, by name, in the order the configuration lists them."""
    factories = {
        "simhash": lambda: SimhashMethod(
            shingle=config.simhash_shingle, k=config.simhash_k, blocks=config.simhash_blocks
        ),
    }
    return {name: factories[name]() for name in config.methods}
