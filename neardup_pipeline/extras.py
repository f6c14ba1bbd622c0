"""Features off the default path and the pip extra that installs each.

The base install carries what the default settings need. A setting that turns on one of these
features checks for its extra when the pipeline starts, so a missing package is one ConfigError
naming the install command, not an ImportError on the first page.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from neardup_pipeline.errors import ConfigError


@dataclass(frozen=True)
class Extra:
    """One extra of pyproject.toml: the modules it provides and the setting that needs them."""

    name: str
    modules: tuple[str, ...]
    needed_by: str


EXTRAS: dict[str, Extra] = {
    extra.name: extra
    for extra in (
        Extra("main", ("resiliparse",), "NEARDUP_CONTENT = 'main' (main-content extraction)"),
        Extra("dates", ("htmldate",), "NEARDUP_CANONICAL = 'best' (page dates)"),
        Extra("plots", ("matplotlib",), "`neardup eval` and `neardup report` charts"),
    )
}


def missing_modules(name: str) -> list[str]:
    """The modules of extra `name` that cannot be imported here."""
    return [module for module in EXTRAS[name].modules if not _importable(module)]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a module without a spec
        return False


def install_command(name: str) -> str:
    """The pip command that installs extra `name` (a KeyError for an extra that does not
    exist, so no message names one)."""
    return f"pip install 'neardup-pipeline[{EXTRAS[name].name}]'"


def require_extra(name: str) -> None:
    """Raise ConfigError naming the extra and its pip command when its modules are missing."""
    missing = missing_modules(name)
    if missing:
        extra = EXTRAS[name]
        raise ConfigError(
            f"{extra.needed_by} needs the `{name}` extra ({', '.join(missing)} not installed): "
            f"{install_command(name)}"
        )
