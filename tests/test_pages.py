"""The pages index on the real Elasticsearch server: every copy recorded, one canonical per cluster,
better copies promoted (the old canonical demoted, never deleted), re-crawls moving pages between
clusters, collapsed search and stats by aggregation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.index.elastic.pages import PagesKeeper, Placement, page_records, pages_summary
from neardup_pipeline.index.elastic.search import collapsed_search
from neardup_pipeline.index.elastic.store import ElasticIndex
from neardup_pipeline.verdict.canonical import CanonicalPolicy
from neardup_pipeline.verdict.deduplicator import Deduplicator
from tests.documents import CHANGED, OTHER, STEMMED, A, edit

ORIG = "http://e.org/articles/a"
MIRROR = "http://e.org/mirror/articles/a"
HTTPS = "https://e.org/articles/a"
ELSE = "http://e.org/other"


def twin(body: str, at: int, word: str = "zulufoxtrot") -> str:
    """`edit` with `word` cut or repeated to the length of the word it replaces: the copies tie
    on text length (the `best` rule's third criterion), so https decides."""
    return edit(body, at, (word * 3)[: len(body.split()[at])])


class Site:
    """What the pipeline's worker does per page: check, record, place in the pages index."""

    def __init__(self, es_url: str, names: dict[str, str], policy: CanonicalPolicy) -> None:
        self.config = NearDupConfig(backend=es_url, methods=("simhash",)).replace(
            language="en", canonical=policy, **STEMMED, **names)
        self.index = ElasticIndex.from_config(es_url, self.config)
        self.dedup = Deduplicator(self.index, self.config)
        self.keeper = PagesKeeper(self.index, policy)

    def page(self, url: str, body: str, title: str = "") -> Placement:
        verdict, fp = self.dedup.process_and_fingerprint(Document(url, text=body, url=url))
        assert fp is not None and verdict.status == "ok"
        assert verdict.duplicate_of != url
        return self.keeper.record(verdict=verdict, url=url, title=title or url, text=fp.text)

    def docs(self, es: Elasticsearch) -> dict[str, dict[str, Any]]:
        self.index.flush()
        pages = self.config.elastic.pages_index or ""
        es.indices.refresh(index=pages)
        hits = es.search(index=pages, size=100, query={"match_all": {}})["hits"]["hits"]
        return {h["_source"]["url"]: h["_source"] for h in hits}


@pytest.fixture
def best(es_url: str, es_index_names: dict[str, str]) -> Iterator[Site]:
    site = Site(es_url, es_index_names, "best")
    yield site
    site.index.close()


@pytest.fixture
def first(es_url: str, es_index_names: dict[str, str]) -> Iterator[Site]:
    site = Site(es_url, es_index_names, "first")
    yield site
    site.index.close()


def assert_one_canonical_per_cluster(docs: dict[str, dict[str, Any]]) -> None:
    clusters: dict[str, list[dict[str, Any]]] = {}
    for doc in docs.values():
        clusters.setdefault(doc["cluster_id"], []).append(doc)
    for cluster, members in clusters.items():
        canon = [m for m in members if m["is_canonical"]]
        assert len(canon) == 1, cluster
        for m in members:
            assert m.get("duplicate_of") == (None if m["is_canonical"] else canon[0]["doc_id"])


def test_better_copy_demotes_the_canonical_and_nothing_is_lost(
    best: Site, es: Elasticsearch
) -> None:
    assert best.page(ORIG, A).is_canonical
    mirror = best.page(MIRROR, twin(A, 5))  # a tie: stays a copy
    assert not mirror.is_canonical and mirror.canonical == ORIG
    better = best.page(HTTPS, twin(A, 5, "yankee"))  # https: the better copy
    assert better.is_canonical and better.promoted and better.demoted == ORIG
    docs = best.docs(es)
    assert sorted(docs) == sorted([ORIG, MIRROR, HTTPS])  # every copy recorded
    assert docs[HTTPS]["is_canonical"] is True and docs[HTTPS].get("duplicate_of") is None
    assert docs[ORIG]["is_canonical"] is False and docs[ORIG]["duplicate_of"] == HTTPS
    assert docs[MIRROR]["duplicate_of"] == HTTPS  # repointed
    assert {d["cluster_id"] for d in docs.values()} == {HTTPS}  # named for its canonical
    assert docs[ORIG]["text"] and docs[ORIG]["text_length"] == len(docs[ORIG]["text"])
    assert_one_canonical_per_cluster(docs)


def test_first_policy_follows_the_clusters_canonical(first: Site, es: Elasticsearch) -> None:
    """`first`: the fingerprint index's rule (verdict/clusters.py), whose tie-break is the
    first seen: a later copy that ties never switches."""
    first.page(ORIG, A)
    placed = first.page(MIRROR, edit(A, 5))
    assert not placed.is_canonical and not placed.promoted
    docs = first.docs(es)
    assert docs[ORIG]["is_canonical"] is True and docs[MIRROR]["duplicate_of"] == ORIG
    assert docs[MIRROR]["nearest"] == ORIG and docs[MIRROR]["method"] == "simhash"
    assert first.page(HTTPS, edit(A, 5, "yankee")).is_canonical  # https ranks first
    docs = first.docs(es)
    assert {d["cluster_id"] for d in docs.values()} == {HTTPS}
    assert docs[ORIG]["duplicate_of"] == docs[MIRROR]["duplicate_of"] == HTTPS


def test_canonical_that_changes_leaves_and_the_rule_reelects(
    best: Site, es: Elasticsearch
) -> None:
    best.page(ORIG, A)
    best.page(MIRROR, twin(A, 5))
    assert best.page(HTTPS, twin(A, 5, "yankee")).promoted
    gone = best.page(HTTPS, CHANGED)  # re-crawl: the canonical's content is something else now
    assert gone.is_canonical and gone.cluster == HTTPS
    docs = best.docs(es)
    assert len(docs) == 3
    assert docs[HTTPS]["cluster_id"] == HTTPS
    assert docs[ORIG]["is_canonical"] is True  # the rest tie: the copy seen first
    assert docs[ORIG]["cluster_id"] == docs[MIRROR]["cluster_id"] == ORIG  # named for it
    assert docs[MIRROR]["duplicate_of"] == ORIG
    assert_one_canonical_per_cluster(docs)


def test_changed_original_moves_its_copies_in_the_pages_index(
    first: Site, es: Elasticsearch
) -> None:
    first.page(ORIG, A)
    first.page(MIRROR, edit(A, 5))
    first.page(HTTPS, edit(A, 5, "yankee"))
    first.page(HTTPS, CHANGED)  # the canonical (https ranks first) leaves its copies
    docs = first.docs(es)
    assert docs[HTTPS]["cluster_id"] == HTTPS and docs[HTTPS]["is_canonical"] is True
    assert docs[ORIG]["cluster_id"] == ORIG and docs[ORIG]["is_canonical"] is True
    assert docs[MIRROR]["cluster_id"] == ORIG and docs[MIRROR]["duplicate_of"] == ORIG
    assert_one_canonical_per_cluster(docs)


def test_collapsed_search_and_stats(best: Site, es: Elasticsearch) -> None:
    best.page(ORIG, A, title="Alpha story")
    best.page(MIRROR, twin(A, 5), title="Alpha story (mirror)")
    best.page(HTTPS, twin(A, 5, "yankee"), title="Alpha story, secure")
    best.page(ELSE, OTHER + " alphaton", title="Other story")
    best.page(ELSE + "-copy", twin(OTHER, 3, "quebec") + " alphaton", title="Other story copy")
    best.docs(es)  # flushed and refreshed
    pages = best.config.elastic.pages_index or ""
    result = collapsed_search(es, pages, "alphaton story", size=10)
    assert result.total_pages == 5
    assert [h.copies for h in result.hits] and len(result.hits) == 2  # 5 pages, 2 clusters
    by_cluster = {h.cluster: h for h in result.hits}
    assert by_cluster[HTTPS].url == HTTPS and by_cluster[HTTPS].copies == 3
    assert by_cluster[HTTPS].title == "Alpha story, secure"
    assert by_cluster[ELSE].url == ELSE and by_cluster[ELSE].copies == 2
    summary = pages_summary(es, pages)
    assert (summary.documents, summary.clusters, summary.duplicates) == (5, 2, 3)
    assert summary.by_method == {"simhash": 3}
    assert summary.size_histogram == {2: 1, 3: 1}
    records = list(page_records(es, pages))
    assert sorted(r.url or "" for r in records if r.is_canonical) == [ELSE, HTTPS]
