"""Which walk of a page's tree can run here, and why not the fastest one.

Three walks give the same text: the C++ walk of libxml2's parse events (the default), the C++ walk
of lxml's tree, and the pure-Python walk of lxml's tree (`chrome.python_walk`, for installs
without a compiler). The event reader drives libxml2 with the structs of the headers it was
compiled with, so it runs only when the running libxml2 is that one.
"""

from __future__ import annotations

import logging
import os

try:  # the C++ walk (setup.py); without a compiler, chrome.python_walk
    from neardup_pipeline.text import _textwalk as textwalk
except ImportError:  # pragma: no cover - a build without the extension
    textwalk = None  # type: ignore[assignment]

__all__ = ["dotted", "libxml2_events_refusal", "python_walk_chosen", "running_libxml2", "textwalk"]

logger = logging.getLogger("neardup")


def python_walk_chosen() -> bool:
    """Whether NEARDUP_PYTHON_WALK=1 asks every process for the pure-Python walk (benchmarks
    run both walks in one run this way)."""
    return os.environ.get("NEARDUP_PYTHON_WALK", "") == "1"


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def running_libxml2() -> tuple[int, ...]:
    """The version of the libxml2 lxml runs on, from its own xmlParserVersion."""
    if textwalk is None:
        raise ImportError("the compiled walk is not built")
    return textwalk.running_libxml2()


def libxml2_events_refusal() -> str | None:
    """None when the C++ walk may read libxml2's parse events here, else why it may not. A
    running libxml2 other than the one of the walk's headers is refused with a warning (the
    tree walk reads the page instead); an older libxml2 without the functions it calls, quietly.
    """
    if textwalk is None:
        return "compiled walk not built"
    headers = textwalk.LIBXML2_HEADERS
    try:
        running = running_libxml2()
        reason = (None if running == headers else
                  f"running libxml2 {dotted(running)} differs from headers {dotted(headers)}")
    except ImportError as error:
        reason = str(error)
    if reason is not None:
        logger.warning("neardup reads lxml's tree, not libxml2's parse events: %s", reason)
        return reason
    try:
        textwalk._load_libxml2()
    except ImportError as error:
        return str(error)
    return None
