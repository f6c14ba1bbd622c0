"""The document a check reads: its own module, so that reading an input needs none of the
pipeline's code (a command validates its input and options before it loads numpy)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    """One page or text to check. `html` may be bytes (decoded by declared or detected charset)."""

    doc_id: str
    html: str | bytes | None = None
    text: str | None = None
    url: str | None = None
    encoding: str | None = None
