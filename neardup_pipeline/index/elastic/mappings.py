"""Elasticsearch mappings and index templates, read from the JSON files of `es_mappings/`.

The files live once, at the top of the source tree (operators can `curl` them as they are); the
wheel carries them as package data in `neardup_pipeline/es_mappings/` (see pyproject.toml). This
module finds them in either place, so installed, editable and source-checkout runs agree.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from neardup_pipeline.errors import MappingNotFound

__all__ = ["MappingNotFound", "load_mapping", "mapping_names"]

_SOURCE_DIR = Path(__file__).resolve().parents[3] / "es_mappings"  # the source checkout's top


def _read(name: str) -> str | None:
    """The text of es_mappings/<name>, from the package data first, then the source tree."""
    packaged = resources.files("neardup_pipeline").joinpath("es_mappings", name)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = _SOURCE_DIR / name
    if source.is_file():
        return source.read_text(encoding="utf-8")
    return None


def load_mapping(name: str) -> dict[str, Any]:
    """The parsed JSON of es_mappings/<name>.json (`name` with or without the `.json`)."""
    filename = name if name.endswith(".json") else f"{name}.json"
    if "/" in filename or "\\" in filename or filename.startswith("."):
        raise MappingNotFound(f"not a mapping name: {name!r}")
    text = _read(filename)
    if text is None:
        raise MappingNotFound(
            f"es_mappings/{filename} is neither in the installed package nor in {_SOURCE_DIR}"
        )
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"es_mappings/{filename} does not hold a JSON object")
    return data


def mapping_names() -> list[str]:
    """Names of every available mapping file, without `.json` (packaged and source)."""
    names: set[str] = set()
    packaged = resources.files("neardup_pipeline").joinpath("es_mappings")
    if packaged.is_dir():
        names.update(p.name for p in packaged.iterdir() if p.name.endswith(".json"))
    if _SOURCE_DIR.is_dir():
        names.update(p.name for p in _SOURCE_DIR.glob("*.json"))
    return sorted(n[: -len(".json")] for n in names)
