"""Names a package exports but loads on first use (PEP 562), so that importing the package,
or a command that needs none of them, does not import their modules."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def loader(homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports each name from its home module when first asked."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(name)
        return getattr(importlib.import_module(home), name)

    return load
