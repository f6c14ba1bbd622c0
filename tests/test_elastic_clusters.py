"""The cluster store on Elasticsearch with two processes: what one read a moment ago may be
stale, and every write still lands right (a stale offer is checked again, a stale root is
linked where it now leads)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from neardup_pipeline.index.elastic.store import ElasticIndex

pytestmark = pytest.mark.elasticsearch


@pytest.fixture
def two(es_url: str) -> Iterator[tuple[ElasticIndex, ElasticIndex]]:
    name = f"neardup-clusters-{uuid.uuid4().hex[:8]}"
    first = ElasticIndex(Elasticsearch(es_url), fingerprint_index=name, ordered=False)
    second = ElasticIndex(Elasticsearch(es_url), fingerprint_index=name, ordered=False)
    yield first, second
    first.close()
    second.close()
    with Elasticsearch(es_url) as client:
        client.options(ignore_status=404).indices.delete(index=f"{name},{name}-clusters")


def test_an_offer_made_on_a_stale_read_is_checked_again(
    two: tuple[ElasticIndex, ElasticIndex],
) -> None:
    a, b = two[0].clusters, two[1].clusters
    a.offer("r", ("b", "x"))
    assert a.roots(["r"]) == {"r": "r"}  # a now holds r's canonical as read
    b.offer("r", ("a", "z"))  # better, written since
    a.offer("r", ("ab", "w"))  # on a's read it would win; against the store it does not
    assert a.canonicals(["r"]) == b.canonicals(["r"]) == {"r": ("a", "z")}
    assert b.roots(["q"]) == {"q": "q"}  # q holds nothing, as read
    a.offer("q", ("c", "y"))
    b.offer("q", ("d", "v"))  # its read said absent: the create meets a's, it reads again
    assert a.canonicals(["q"]) == {"q": ("c", "y")}


def test_a_root_linked_by_another_process_is_linked_where_it_leads(
    two: tuple[ElasticIndex, ElasticIndex],
) -> None:
    a, b = two[0].clusters, two[1].clusters
    assert a.roots(["r", "s"]) == {"r": "r", "s": "s"}
    assert b.link("r", "p")  # a's read of r is stale now
    assert not a.link("r", "s")  # a link is never replaced
    assert a.roots(["r", "s"]) == {"r": "p", "s": "s"}  # read again after its write
    assert a.link("p", "s") and b.roots(["r"]) == {"r": "s"}
