"""Model files (anchor words, DF tables) are JSON objects: one reader, one kind of error message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json_object(path: str | Path, error: type[Exception], what: str) -> dict[str, Any]:
    """The JSON object stored in `path`; `error` saying which file and why when it is missing,
    unreadable, not JSON, or not an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"cannot read {what} {str(path)!r}: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: not a JSON object")
    return data
