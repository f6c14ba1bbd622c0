"""The metadata of one setting of a configuration section: the line the settings table shows
(docs/settings.md is generated from it), and its flat name when the section's prefix does not
give it (NEARDUP_<FLAT NAME> in Scrapy, the key of `NearDupConfig.from_mapping`)."""

from __future__ import annotations


def doc(text: str, *, name: str | None = None) -> dict[str, str]:
    """`field(default=..., metadata=doc("what it does"))`."""
    return {"doc": text} if name is None else {"doc": text, "name": name}
