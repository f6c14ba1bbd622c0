"""Edits of an lxml tree shared by the Python walks (chrome.py, blocks.py)."""

from __future__ import annotations

import lxml.etree


def remove_keeping_tail(element: lxml.etree._Element) -> None:
    """Remove an element; the text after it (its tail) belongs to its parent and stays."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = f"{previous.tail or ''} {element.tail}"
        else:
            parent.text = f"{parent.text or ''} {element.tail}"
    parent.remove(element)
