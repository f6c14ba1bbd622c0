"""Breadth-first request order: the add-on sets it (so `neardup crawl`, which uses the add-on,
has it too) and warns when a project's own settings keep Scrapy's depth-first default.

Scrapy's default queues are LIFO: the last link found is fetched first, so a crawl meets an
article's /print/ or /amp/ copy before the article, and drop mode keeps the copy. Breadth-first,
the copy nearest the start page is seen first.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from queuelib import queue
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.misc import load_object

BREADTH_FIRST: Mapping[str, Any] = MappingProxyType({
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
})
_QUEUES = ("SCHEDULER_DISK_QUEUE", "SCHEDULER_MEMORY_QUEUE")
_LIFO = (queue.LifoMemoryQueue, queue.LifoDiskQueue, queue.LifoSQLiteQueue)
_ADDON = SETTINGS_PRIORITIES["addon"]


def set_breadth_first(settings: BaseSettings) -> None:
    """Breadth-first order at add-on priority: a project's own choice still wins."""
    for name, value in BREADTH_FIRST.items():
        settings.set(name, value, priority="addon")


def depth_first_settings(settings: BaseSettings) -> dict[str, Any]:
    """The settings, set above add-on priority, that keep a depth-first order (LIFO queues or
    DEPTH_PRIORITY <= 0), by name; empty when the order is the add-on's."""
    kept: dict[str, Any] = {}
    if _above_addon(settings, "DEPTH_PRIORITY") and settings.getint("DEPTH_PRIORITY") <= 0:
        kept["DEPTH_PRIORITY"] = settings.getint("DEPTH_PRIORITY")
    for name in _QUEUES:
        if _above_addon(settings, name) and _is_lifo(settings[name]):
            kept[name] = settings[name]
    return kept


def depth_first_warning(kept: Mapping[str, Any]) -> str:
    """What the crawl logs once when the project keeps a depth-first order."""
    named = ", ".join(f"{name} = {_shown(value)}" for name, value in kept.items())
    wanted = ", ".join(f"{name} = {_shown(value)}" for name, value in BREADTH_FIRST.items())
    return (
        f"neardup: the project's settings keep a depth-first request order ({named}). "
        "Which copy of a near-duplicate cluster is kept depends on the order: in drop mode a "
        "/print/ or /amp/ copy met before its article passes, and an item that left the "
        "pipeline cannot be taken back. The add-on's "
        f"breadth-first order is {wanted}."
    )


def _above_addon(settings: BaseSettings, name: str) -> bool:
    return (settings.getpriority(name) or 0) > _ADDON


def _is_lifo(value: Any) -> bool:
    try:
        queue_class = load_object(value) if isinstance(value, str) else value
    except (ImportError, NameError, ValueError):  # Scrapy's scheduler reports a bad path
        return False
    return isinstance(queue_class, type) and issubclass(queue_class, _LIFO)


def _shown(value: Any) -> str:
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)
