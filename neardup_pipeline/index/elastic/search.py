"""Search the pages index with near-duplicates collapsed: one hit per cluster, its canonical copy.

Three requests: the query collapsed on `cluster_id` (the best-scoring copy per cluster, the
canonical first when it matches); the canonical copy of each cluster shown (it may not match
the query words itself); the size of each cluster shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError

from neardup_pipeline.errors import IndexFailure

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch


@dataclass(frozen=True)
class SearchHit:
    """One cluster in the results."""

    cluster: str
    url: str  # the canonical copy's URL
    title: str
    score: float  # the best-scoring matching copy's score
    copies: int  # pages in the cluster (the canonical included)
    matched_url: str  # the copy that scored best (the canonical when it matches)


@dataclass(frozen=True)
class SearchResult:
    query: str
    total_pages: int  # matching pages, before collapsing
    hits: list[SearchHit]


def collapsed_search(client: Elasticsearch, index: str, query: str, size: int = 10) -> SearchResult:
    """The `size` best clusters for `query` (title and text), collapsed on `cluster_id`."""
    fields = ["url", "title", "cluster_id", "is_canonical"]
    try:
        found = client.search(
            index=index, size=size, source_includes=fields, track_total_hits=True,
            query={"multi_match": {"query": query, "fields": ["title^2", "text"]}},
            # Within a cluster the canonical copy is shown when it matches; else its best copy.
            collapse={"field": "cluster_id", "inner_hits": {
                "name": "shown", "size": 1, "_source": fields,
                "sort": [{"is_canonical": {"order": "desc"}}, "_score"],
            }},
        ).body
        clusters = [str(h["fields"]["cluster_id"][0]) for h in found["hits"]["hits"]]
        canonicals = _canonicals(client, index, clusters)
        sizes = _sizes(client, index, clusters)
    except ApiError as exc:
        raise IndexFailure(f"search in {index!r} failed: {exc}") from exc
    hits = []
    for hit, cluster in zip(found["hits"]["hits"], clusters, strict=True):
        shown = hit["inner_hits"]["shown"]["hits"]["hits"]
        matched = (shown[0] if shown else hit)["_source"]
        canonical = canonicals.get(cluster, matched)
        hits.append(SearchHit(
            cluster=cluster, url=str(canonical.get("url") or ""),
            title=str(canonical.get("title") or ""), score=float(hit["_score"] or 0.0),
            copies=sizes.get(cluster, 1), matched_url=str(matched.get("url") or ""),
        ))
    return SearchResult(query, int(found["hits"]["total"]["value"]), hits)


def _canonicals(client: Elasticsearch, index: str, clusters: list[str]) -> dict[str, Any]:
    if not clusters:
        return {}
    body = client.search(
        index=index, size=len(clusters), source_includes=["url", "title", "cluster_id"],
        query={"bool": {"filter": [{"terms": {"cluster_id": clusters}},
                                   {"term": {"is_canonical": True}}]}},
    ).body
    return {str(h["_source"]["cluster_id"]): h["_source"] for h in body["hits"]["hits"]}


def _sizes(client: Elasticsearch, index: str, clusters: list[str]) -> dict[str, int]:
    if not clusters:
        return {}
    body = client.search(
        index=index, size=0, query={"terms": {"cluster_id": clusters}},
        aggs={"c": {"terms": {"field": "cluster_id", "size": len(clusters)}}},
    ).body
    return {str(b["key"]): int(b["doc_count"]) for b in body["aggregations"]["c"]["buckets"]}
