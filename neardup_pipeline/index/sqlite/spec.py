"""The file a `sqlite:` spec names (NEARDUP_BACKEND, --backend, a source of stats and report).

`sqlite:PATH` is the path as written, relative to the working directory; `sqlite:///abs/path`
(three slashes, as in `file:///abs/path`) is the absolute /abs/path. `sqlite://name.sqlite` is
refused: read as a path it would be /name.sqlite at the filesystem root, never what was meant.
"""

from __future__ import annotations

from neardup_pipeline.errors import ConfigError

SQLITE_SCHEME = "sqlite:"
BACKEND_NAMES = "NEARDUP_BACKEND, --backend"


def sqlite_path(spec: str, named_by: str = BACKEND_NAMES) -> str:
    """The path of a `sqlite:` spec; ConfigError (naming `named_by`) for `sqlite://name` or no
    path at all."""
    rest = spec[len(SQLITE_SCHEME):]
    if rest.startswith("///"):
        path = rest[2:]
    elif rest.startswith("//"):
        name = rest[2:].strip() or "name.sqlite"
        raise ConfigError(
            f"{spec!r} ({named_by}) would be a file at the filesystem root: write "
            f"'sqlite:{name}' for a file relative to the working directory, or "
            "'sqlite:///abs/path.sqlite' (three slashes) for an absolute path"
        )
    else:
        path = rest
    if not path.strip():
        raise ConfigError(f"{spec!r} ({named_by}) needs a path: sqlite:PATH")
    return path
