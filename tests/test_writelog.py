"""The write log keeps a writer's entries only until they are searchable in the fingerprint
index: then its records hold the slot and the doc ids, and a peer that meets such a record
reads the entries from the fingerprint index."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from neardup_pipeline.index.base import IndexEntry
from neardup_pipeline.index.elastic.store import ElasticIndex

pytestmark = pytest.mark.elasticsearch


def entry(doc_id: str, key: str) -> IndexEntry:
    return IndexEntry(doc_id, {"simhash": "00000000000000ff"}, {"simhash": [key]},
                      {"cluster": doc_id, "content_hash": doc_id})


@pytest.fixture
def index(es_url: str) -> Iterator[str]:
    name = f"neardup-writelog-{uuid.uuid4().hex[:8]}"
    yield name
    with Elasticsearch(es_url) as client:
        client.options(ignore_status=404).indices.delete(
            index=f"{name},{name}-writelog,{name}-clusters", allow_no_indices=True)


def records(es_url: str, index: str) -> list[dict[str, Any]]:
    with Elasticsearch(es_url) as client:
        client.indices.refresh(index=f"{index}-writelog")
        hits = client.search(index=f"{index}-writelog", size=100, sort=[{"slot": "asc"}])
    return [hit["_source"] for hit in hits["hits"]["hits"]]


def test_flushed_records_keep_ids_and_peers_still_get_their_entries(
    es_url: str, index: str,
) -> None:
    first = ElasticIndex(Elasticsearch(es_url), fingerprint_index=index, bulk_size=1000)
    second = ElasticIndex(Elasticsearch(es_url), fingerprint_index=index, bulk_size=1000)
    try:
        first.add(entry("a", "0:k1"))
        first.add(entry("b", "0:k2"))
        assert first.publish() == []
        [claimed] = records(es_url, index)
        assert [e["doc_id"] for e in claimed["entries"]] == ["a", "b"]  # not searchable yet
        assert claimed["ids"] == ["a", "b"]
        first.flush()  # searchable now: the record keeps the slot and the ids alone
        [stripped] = records(es_url, index)
        assert stripped["entries"] == [] and stripped["ids"] == ["a", "b"]
        assert stripped["slot"] == claimed["slot"]

        second.add(entry("c", "0:k1"))
        learned = second.publish()  # the peer's batch came first: its entries, from the index
        assert [e.doc_id for e in learned] == ["a", "b"]
        assert learned[0].signatures == entry("a", "0:k1").signatures  # keys: not stored
        assert [r["slot"] for r in records(es_url, index)] == [1, 2]
    finally:
        first.close()
        second.close()
    closing = records(es_url, index)[-2:]
    assert all(r["closed"] for r in closing) and all(r["entries"] == [] for r in closing)
    assert all(r["entries"] == [] for r in records(es_url, index))  # every entry stripped
