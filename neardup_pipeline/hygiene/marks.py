"""The fields a run writes on each document, from where the fingerprint index puts it. Pure.

A cluster is named for its canonical copy, chosen by the crawl's own rule (verdict/clusters.py:
the copy the others declare canonical, then its own word, its URL, then the first seen), the
same whatever order the run reads the documents in. A document that could not be checked is
its own cluster and stays visible, tagged with why (`neardup_status`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neardup_pipeline.hygiene.fields import STATUS_FIELD
from neardup_pipeline.hygiene.known import CONTENT_ID
from neardup_pipeline.index.base import IndexEntry

CLUSTER, CANONICAL, OF, STATUS = (
    "neardup_cluster", "neardup_canonical", "neardup_of", STATUS_FIELD)
# Types of the fields, put in the mapping before the first write: `collapse` needs a keyword.
MARK_MAPPING: dict[str, dict[str, str]] = {
    CLUSTER: {"type": "keyword"},
    CANONICAL: {"type": "boolean"},
    OF: {"type": "keyword"},
    STATUS: {"type": "keyword"},
}
CHECKED = "checked"


@dataclass(frozen=True)
class Mark:
    """One document's marks; `es_id` is its `_id` in the content index."""

    doc_id: str
    es_id: str
    cluster: str
    canonical: bool
    of: str | None
    status: str = CHECKED
    # the evidence, for the dry run's report (not written)
    duplicate_of: str | None = None
    similarity: float | None = None
    method: str | None = None
    url: str | None = None

    def fields(self) -> dict[str, Any]:
        """What the write sets: all four fields at once, so a document is never half-marked."""
        return {CLUSTER: self.cluster, CANONICAL: self.canonical, OF: self.of,
                STATUS: self.status}

    def as_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "es_id": self.es_id, **self.fields()}


def mark_of_entry(entry: IndexEntry, cluster: str, es_id: str | None = None) -> Mark:
    """The marks of a recorded fingerprint entry in the cluster named for `cluster`, its
    canonical."""
    canonical = cluster == entry.doc_id
    meta = entry.meta
    return Mark(
        entry.doc_id, str(meta.get(CONTENT_ID) or es_id or entry.doc_id), cluster, canonical,
        None if canonical else cluster, CHECKED, meta.get("duplicate_of"),
        meta.get("similarity"), meta.get("method"), meta.get("url"),
    )


def tagged(doc_id: str, es_id: str, status: str, url: str | None = None) -> Mark:
    """A document that was not checked (no words, a bad field, an id seen before): alone in its
    own cluster, so searches still show it, and tagged with why."""
    return Mark(doc_id, es_id, doc_id, True, None, status, url=url)


def mark_from_dict(data: dict[str, Any]) -> Mark:
    """A mark as `as_dict` stored it (the checkpoint's write-ahead record)."""
    return Mark(str(data["doc_id"]), str(data["es_id"]), str(data[CLUSTER]),
                bool(data[CANONICAL]), data.get(OF), str(data.get(STATUS) or CHECKED))
