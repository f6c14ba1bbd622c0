"""Counts over checked pages: documents, clusters, duplicates by method, cluster sizes. Pure.

Every source (a `neardup dedup` JSONL output, an SQLite index, the Elasticsearch pages index)
is read into `PageRecord`s by its adapter; the figures are computed here, once, the same way.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PageRecord:
    """One checked page as a source records it."""

    doc_id: str
    cluster: str
    duplicate_of: str | None = None
    similarity: float | None = None
    method: str | None = None
    url: str | None = None
    title: str | None = None
    is_canonical: bool | None = None  # None: the source does not say (first seen is assumed)
    status: str = "ok"  # "ok", or why the page was not checked (no_text, error, unchecked)
    order: int = 0  # position in the source (first seen first)

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate_of is not None


@dataclass(frozen=True)
class Summary:
    """The figures `neardup stats` prints and `neardup report` shows."""

    documents: int
    checked: int
    clusters: int
    duplicates: int
    by_method: dict[str, int]
    not_checked: dict[str, int]
    size_histogram: dict[int, int]  # cluster size -> number of clusters of that size
    largest: list[tuple[str, int]] = field(default_factory=list)  # (cluster, size), biggest first

    def as_dict(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "checked": self.checked,
            "clusters": self.clusters,
            "duplicates": self.duplicates,
            "duplicates_by_method": self.by_method,
            "not_checked": self.not_checked,
            "cluster_sizes": {str(k): v for k, v in sorted(self.size_histogram.items())},
            "largest_clusters": [{"cluster": c, "size": n} for c, n in self.largest],
        }


def group_clusters(records: Iterable[PageRecord]) -> dict[str, list[PageRecord]]:
    """Checked pages by cluster, members in source order."""
    clusters: dict[str, list[PageRecord]] = defaultdict(list)
    for record in records:
        if record.status == "ok":
            clusters[record.cluster].append(record)
    for members in clusters.values():
        members.sort(key=lambda r: r.order)
    return dict(clusters)


def summarize(records: Iterable[PageRecord], largest: int = 10) -> Summary:
    """Figures over every record; `largest` clusters listed by size (ties: cluster id)."""
    records = list(records)
    clusters = group_clusters(records)
    checked = [r for r in records if r.status == "ok"]
    sizes = Counter(len(m) for m in clusters.values())
    by_size = sorted(clusters.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return Summary(
        documents=len(records),
        checked=len(checked),
        clusters=len(clusters),
        duplicates=sum(r.is_duplicate for r in checked),
        by_method=dict(sorted(Counter(r.method or "?" for r in checked if r.is_duplicate).items())),
        not_checked=dict(sorted(Counter(r.status for r in records if r.status != "ok").items())),
        size_histogram=dict(sorted(sizes.items())),
        largest=[(c, len(m)) for c, m in by_size[:largest]],
    )


def record_from_verdict(obj: Mapping[str, Any], order: int) -> PageRecord:
    """A `neardup dedup` output line -> PageRecord (KeyError/TypeError on a foreign line)."""
    doc_id = str(obj["id"])
    dup = obj.get("duplicate_of")
    sim = obj.get("similarity")
    return PageRecord(
        doc_id=doc_id,
        cluster=str(obj.get("cluster") or doc_id),
        duplicate_of=None if dup is None else str(dup),
        similarity=None if sim is None else float(sim),
        method=obj.get("method"),
        url=obj.get("url"),
        title=obj.get("title"),
        status=str(obj.get("status") or "ok"),
        is_canonical=canonical if isinstance(canonical := obj.get("canonical"), bool) else None,
        order=order,
    )
