"""The content index (`neardup-pages`): every copy recorded, one canonical copy per cluster.

Writes go through ElasticIndex's bulk queue (`add_page`, `update_page`), so they share its
batching and spool. A better copy demotes the old canonical with partial updates: no copy is
ever deleted. Reads (`page_records`, `page_texts`, `pages_summary`) serve `neardup stats` and
`neardup report`; `search.py` serves `neardup search`.

A page declared canonical (`<link rel="canonical">`, og:url: verdict/declared.py) takes its
cluster over in the fingerprint index; its `ClusterMove` (declared) makes it the canonical here.

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
    from neardup_pipeline.verdict.deduplicator import ClusterMove, Verdict

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
        self, *, verdict: Verdict, url: str, title: str, text: str,
        date: str | None = None, move: ClusterMove | None = None,
    ) -> Placement:
        """Write the page with its cluster and canonical flag; fix the clusters it affects."""
        doc_id = verdict.doc_id
        old = self._index.get_page(url)  # a re-crawl: its earlier record
        first_seen = _epoch(old.get("first_seen") or old.get("crawled_at")) if old else None
        me = Candidate(doc_id, url, len(text), date, first_seen or time.time(),
                       declared=verdict.declared_canonical)
        if move is not None and move.declared:
            self._take_over(move, me)
        elif move is not None:
            self._rehome(move)
        cluster = verdict.cluster or doc_id
        if old is not None and old.get("is_canonical") and old.get("cluster_id") != cluster:
            self._reelect(str(old.get("cluster_id")), leaving=doc_id)  # it left that cluster
        incumbent = self._current(cluster) if verdict.is_duplicate or old is not None else None
        demoted: str | None = None
        if incumbent is None or incumbent.doc_id == doc_id:
            canonical = me
        elif prefer(me, incumbent, self.policy):
            canonical, demoted = me, incumbent.doc_id
            self._demote(cluster, incumbent, me, verdict)
        else:
            canonical = incumbent
        is_canonical = canonical.doc_id == doc_id
        self._index.add_page({
            "url": url, "doc_id": doc_id, "title": title, "text": text,
            "cluster_id": cluster, "is_canonical": is_canonical,
            "duplicate_of": None if is_canonical else canonical.doc_id,
            "nearest": verdict.duplicate_of, "similarity": verdict.similarity,
            "method": verdict.method, "text_length": len(text), "published": date,
            "first_seen": _iso(me.seen), "declared_canonical": me.declared,
        })
        self._remember(cluster, canonical)
        return Placement(cluster, canonical.doc_id, is_canonical, demoted)

    # ------------------------------------------------------------------ cluster changes

    def _demote(self, cluster: str, incumbent: Candidate, me: Candidate, verdict: Verdict) -> None:
        """A better copy arrived: every other member now names it; the old canonical too."""
        for src in self._members(cluster, exclude=me.doc_id):
            fields: dict[str, Any] = {"is_canonical": False, "duplicate_of": me.doc_id}
            if _doc_id(src) == incumbent.doc_id:
                # its membership rests on the newcomer's match now (the similarity is known only
                # when the newcomer matched it directly)
                direct = verdict.duplicate_of == incumbent.doc_id
                fields.update(nearest=me.doc_id, method=verdict.method,
                              similarity=verdict.similarity if direct else None)
            self._index.update_page(str(src["url"]), fields)

    def _reelect(self, cluster: str, *, leaving: str) -> None:
        """The canonical left its cluster (re-crawl, changed): the rule picks among the rest."""
        members = self._members(cluster, exclude=leaving)
        self._canonicals.pop(cluster, None)
        if members:
            canonical = choose([_candidate(s) for s in members], self.policy)
            self._point(members, cluster, canonical)

    def _rehome(self, move: ClusterMove) -> None:
        """The fingerprint index moved a changed original's copies under a new original."""
        members = self._members(move.old_cluster, exclude=move.old_cluster)
        self._canonicals.pop(move.old_cluster, None)
        if not members:
            return
        candidates = [_candidate(s) for s in members]
        if self.policy == "first":
            canonical = next((c for c in candidates if c.doc_id == move.new_cluster),
                             choose(candidates, "first"))
        else:
            kept = [c for c, s in zip(candidates, members, strict=True) if s.get("is_canonical")]
            canonical = kept[0] if kept else choose(candidates, "best")
        self._point(members, move.new_cluster, canonical)

    def _take_over(self, move: ClusterMove, me: Candidate) -> None:
        """A page declared canonical took its cluster over: every member, the old canonical
        too, now names it."""
        members = self._members(move.old_cluster, exclude=me.doc_id)
        self._canonicals.pop(move.old_cluster, None)
        self._point(members, move.new_cluster, me)

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
