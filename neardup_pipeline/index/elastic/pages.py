"""The content index (`neardup-pages`): every copy recorded, one canonical copy per cluster.

Writes go through ElasticIndex's bulk queue (`add_page`, `update_page`), so they share its
batching and spool. A better copy demotes the old canonical with partial updates: no copy is
ever deleted. Reads (`page_records`, `page_texts`, `pages_summary`) serve `neardup stats` and
`neardup report`; `search.py` serves `neardup search`.

A page's verdict names its cluster, the cluster's canonical and the clusters it joined
(verdict/clusters.py): the members of those clusters are pointed at the joined cluster, so a
search that collapses on `cluster_id` shows one page per group.

Cluster state: the canonical of each recently touched cluster is kept here (LRU), so read-after-
write holds without a refresh per page; a miss asks the pages not yet sent, then Elasticsearch.
Another process may change a canonical meanwhile: the last writer wins, as for any page.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, helpers

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.elastic.documents import es_id
from neardup_pipeline.report.stats import PageRecord, Summary
from neardup_pipeline.verdict.canonical import Candidate, CanonicalPolicy, choose, prefer

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from neardup_pipeline.index.elastic.store import ElasticIndex
    from neardup_pipeline.verdict.verdict import Verdict

CACHE_CLUSTERS = 100_000  # canonicals remembered; a miss costs one search
_MEMBER_FIELDS = ["url", "doc_id", "cluster_id", "is_canonical", "duplicate_of", "text_length",
                  "published", "first_seen", "crawled_at", "declared_canonical"]


@dataclass(frozen=True)
class Placement:
    """Where a checked page landed in the pages index."""

    cluster: str
    canonical: str  # doc id of the cluster's canonical copy, after this page
    is_canonical: bool
    demoted: str | None = None  # the canonical this page replaced (NEARDUP_CANONICAL = "best")

    @property
    def promoted(self) -> bool:
        """A near-duplicate that became its cluster's canonical: the item is worth keeping."""
        return self.demoted is not None


class PagesKeeper:
    """Records checked pages in the pages index and keeps each cluster's canonical right."""

    def __init__(self, index: ElasticIndex, policy: CanonicalPolicy = "first") -> None:
        if not index.pages_index:
            raise IndexFailure("the pages index is not configured (NEARDUP_PAGES_INDEX)")
        self._index = index
        self.pages_index: str = index.pages_index
        self.policy: CanonicalPolicy = policy
        self._canonicals: OrderedDict[str, Candidate] = OrderedDict()

    def record(
        self, *, verdict: Verdict, url: str, title: str, text: str, date: str | None = None,
    ) -> Placement:
        """Write the page with its cluster and canonical flag; fix the clusters it affects:
        the members of the clusters whose canonical it displaced (`verdict.superseded`) follow
        the new canonical, the cluster it left re-elects."""
        doc_id = verdict.doc_id
        old = self._index.get_page(url)  # a re-crawl: its earlier record
        first_seen = _epoch(old.get("first_seen") or old.get("crawled_at")) if old else None
        me = Candidate(doc_id, url, len(text), date, first_seen or time.time(),
                       declared=verdict.declared_canonical)
        cluster = verdict.cluster or doc_id
        if old is not None and old.get("is_canonical") and (
                verdict.successor is not None or old.get("cluster_id") != cluster) \
                and str(old.get("cluster_id")) not in verdict.superseded:
            # it left that cluster: the rest follow the canonical the rule chose in its place
            self._reelect(str(old.get("cluster_id")), leaving=doc_id, successor=verdict.successor)
        moved = [m for name in verdict.superseded for m in self._members(name, exclude=doc_id)]
        for name in verdict.superseded:
            self._canonicals.pop(name, None)
        demoted: str | None = None
        if self.policy == "first":  # the fingerprint index's rule (verdict/clusters.py)
            canonical = me if verdict.canonical in (None, doc_id) else Candidate(
                str(verdict.canonical))
            if verdict.superseded:
                demoted = verdict.superseded[0] if canonical is me else None
        else:
            incumbent = self._current(cluster) if verdict.is_duplicate or moved or old else None
            if incumbent is None and moved:
                incumbent = choose([_candidate(m) for m in moved], self.policy)
            if incumbent is None or incumbent.doc_id == doc_id:
                canonical = me
            elif prefer(me, incumbent, self.policy):
                canonical, demoted = me, incumbent.doc_id
                moved += self._members(cluster, exclude=doc_id)
            else:
                canonical = incumbent
        if moved:
            self._point(moved, cluster, canonical)
        if canonical is me:
            self._rest_on(me, verdict, [s for s in moved if _doc_id(s) in
                                        {*verdict.superseded, demoted}])
        is_canonical = canonical.doc_id == doc_id
        self._index.add_page({
            "url": url, "doc_id": doc_id, "title": title, "text": text,
            "cluster_id": cluster, "is_canonical": is_canonical,
            "duplicate_of": None if is_canonical else canonical.doc_id,
            "nearest": verdict.nearest, "similarity": verdict.similarity,
            "method": verdict.method, "text_length": len(text), "published": date,
            "first_seen": _iso(me.seen), "declared_canonical": me.declared,
        })
        self._remember(cluster, canonical)
        return Placement(cluster, canonical.doc_id, is_canonical, demoted)

    # ------------------------------------------------------------------ cluster changes

    def _rest_on(self, me: Candidate, verdict: Verdict, displaced: list[dict[str, Any]]) -> None:
        """The canonicals `me` displaced are its copies now: their membership rests on its match
        (its similarity known only when it matched them directly)."""
        for src in displaced:
            direct = verdict.nearest == _doc_id(src)
            self._index.update_page(str(src["url"]), {
                "nearest": me.doc_id, "method": verdict.method,
                "similarity": verdict.similarity if direct else None})

    def _reelect(self, cluster: str, *, leaving: str, successor: str | None) -> None:
        """The canonical left its cluster (re-crawl, changed): the rest are named for the
        canonical the fingerprint index chose (`first`), or that the rule picks (`best`)."""
        members = self._members(cluster, exclude=leaving)
        self._canonicals.pop(cluster, None)
        if not members:
            return
        candidates = [_candidate(s) for s in members]
        canonical = choose(candidates, self.policy)
        if self.policy == "first" and successor is not None:
            canonical = next((c for c in candidates if c.doc_id == successor), canonical)
        self._point(members, canonical.doc_id, canonical)

    def _point(self, members: list[dict[str, Any]], cluster: str, canonical: Candidate) -> None:
        """Update the members whose cluster, canonical flag or canonical differ."""
        for src in members:
            is_canonical = _doc_id(src) == canonical.doc_id
            fields = {"cluster_id": cluster, "is_canonical": is_canonical,
                      "duplicate_of": None if is_canonical else canonical.doc_id}
            if any(src.get(k) != v for k, v in fields.items()):
                self._index.update_page(str(src["url"]), fields)
        self._remember(cluster, canonical)

    # ------------------------------------------------------------------ lookups

    def _current(self, cluster: str) -> Candidate | None:
        """The cluster's canonical: remembered, pending in the bulk queue, or stored."""
        found = self._canonicals.get(cluster)
        if found is not None:
            self._canonicals.move_to_end(cluster)
            return found
        for src in self._index.pending_pages():
            if src.get("cluster_id") == cluster and src.get("is_canonical"):
                return _candidate(src)
        try:
            response = self._index.client.search(
                index=self.pages_index, size=1, source_includes=_MEMBER_FIELDS,
                query={"bool": {"filter": [{"term": {"cluster_id": cluster}},
                                           {"term": {"is_canonical": True}}]}},
            )
        except ApiError as exc:
            raise IndexFailure(f"canonical lookup in {self.pages_index!r} failed: {exc}") from exc
        hits = response.body["hits"]["hits"]
        if not hits:
            return None
        candidate = _candidate(hits[0]["_source"])
        self._remember(cluster, candidate)
        return candidate

    def _members(self, cluster: str, *, exclude: str) -> list[dict[str, Any]]:
        """Every stored page of `cluster` but `exclude` (pending writes sent first)."""
        self._index.flush()
        try:
            hits = helpers.scan(
                self._index.client, index=self.pages_index, source_includes=_MEMBER_FIELDS,
                query={"query": {"term": {"cluster_id": cluster}}},
            )
            return [h["_source"] for h in hits if _doc_id(h["_source"]) != exclude]
        except ApiError as exc:
            raise IndexFailure(f"cluster lookup in {self.pages_index!r} failed: {exc}") from exc

    def _remember(self, cluster: str, canonical: Candidate) -> None:
        self._canonicals[cluster] = canonical
        self._canonicals.move_to_end(cluster)
        while len(self._canonicals) > CACHE_CLUSTERS:
            self._canonicals.popitem(last=False)


# ---------------------------------------------------------------------- readers


def page_records(client: Elasticsearch, index: str) -> Iterator[PageRecord]:
    """Every page of the pages index as a PageRecord (text left on the server)."""
    fields = [*_MEMBER_FIELDS, "title", "similarity", "method"]
    try:
        for hit in helpers.scan(client, index=index, source_includes=fields,
                                query={"query": {"match_all": {}}}):
            src = hit["_source"]
            doc_id = _doc_id(src)
            sim = src.get("similarity")
            yield PageRecord(
                doc_id=doc_id, cluster=str(src.get("cluster_id") or doc_id),
                duplicate_of=src.get("duplicate_of"),
                similarity=None if sim is None else float(sim), method=src.get("method"),
                url=src.get("url"), title=src.get("title"),
                is_canonical=bool(src.get("is_canonical")),
                order=int(1000 * (_epoch(src.get("first_seen") or src.get("crawled_at")) or 0)),
            )
    except ApiError as exc:
        raise IndexFailure(f"reading pages index {index!r} failed: {exc}") from exc


def page_texts(client: Elasticsearch, index: str, urls: list[str]) -> dict[str, str]:
    """url -> stored text, for the pages a report shows side by side."""
    texts: dict[str, str] = {}
    for start in range(0, len(urls), 500):
        chunk = urls[start : start + 500]
        try:
            response = client.mget(index=index, ids=[es_id(u) for u in chunk],
                                   source_includes=["url", "text"])
        except ApiError as exc:
            raise IndexFailure(f"reading page texts from {index!r} failed: {exc}") from exc
        for doc in response.body["docs"]:
            if doc.get("found"):
                texts[str(doc["_source"].get("url"))] = str(doc["_source"].get("text") or "")
    return texts


def pages_summary(client: Elasticsearch, index: str, largest: int = 10) -> Summary:
    """The `neardup stats` figures by aggregations: exact, and never loads the pages."""
    try:
        total = int(client.count(index=index).body["count"])
        methods = client.search(
            index=index, size=0, query={"term": {"is_canonical": False}},
            aggs={"m": {"terms": {"field": "method", "size": 100, "missing": "?"}}},
        ).body["aggregations"]["m"]["buckets"]
        sizes: dict[int, int] = {}
        biggest: list[tuple[str, int]] = []
        after: dict[str, Any] | None = None
        while True:  # composite paging: every cluster's size, exactly
            composite: dict[str, Any] = {
                "size": 1000, "sources": [{"c": {"terms": {"field": "cluster_id"}}}]}
            if after is not None:
                composite["after"] = after
            agg = client.search(index=index, size=0, aggs={"c": {"composite": composite}}).body[
                "aggregations"]["c"]
            for bucket in agg["buckets"]:
                n = int(bucket["doc_count"])
                sizes[n] = sizes.get(n, 0) + 1
                biggest.append((str(bucket["key"]["c"]), n))
            biggest = sorted(biggest, key=lambda cn: (-cn[1], cn[0]))[:largest]
            after = agg.get("after_key")
            if not agg["buckets"] or after is None:
                break
    except ApiError as exc:
        raise IndexFailure(f"aggregating pages index {index!r} failed: {exc}") from exc
    by_method = {str(b["key"]): int(b["doc_count"]) for b in methods}
    return Summary(
        documents=total, checked=total, clusters=sum(sizes.values()),
        duplicates=sum(by_method.values()), by_method=dict(sorted(by_method.items())),
        not_checked={}, size_histogram=dict(sorted(sizes.items())), largest=biggest,
    )


def _doc_id(src: dict[str, Any]) -> str:
    return str(src.get("doc_id") or src.get("url"))


def _candidate(src: dict[str, Any]) -> Candidate:
    return Candidate(
        doc_id=_doc_id(src), url=str(src.get("url") or ""),
        text_length=int(src.get("text_length") or 0), date=src.get("published"),
        seen=_epoch(src.get("first_seen") or src.get("crawled_at")) or 0.0,
        declared=_declared(src.get("declared_canonical")),
    )


def _declared(value: Any) -> bool | None:
    """A stored declaration: true, false, or absent (the page said nothing)."""
    return value if isinstance(value, bool) else None


def _epoch(value: Any) -> float | None:
    """ISO date-time (as stored) -> epoch seconds; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat()
