"""Re-crawl of a URL whose content changed, on every backend: the old fingerprint is replaced,
the page leaves the cluster it no longer matches, the cluster it left re-chooses its canonical,
and a page is never its own duplicate."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document
from neardup_pipeline.index import FingerprintIndex, open_index
from neardup_pipeline.verdict.deduplicator import Deduplicator, Verdict
from tests.documents import CHANGED, OTHER, STEMMED, A, edit, random_text


@pytest.fixture
def dedup(backend_config: NearDupConfig) -> Iterator[Deduplicator]:
    config = backend_config.replace(methods=("simhash",), language="en", **STEMMED)
    index = open_index(config.backend, config)
    try:
        yield Deduplicator(index, config)
    finally:
        index.close()


def check(dedup: Deduplicator, doc_id: str, body: str) -> Verdict:
    verdict = dedup.process(Document(doc_id, text=body, url=doc_id))
    assert verdict.status == "ok"
    assert verdict.duplicate_of != doc_id, "a page is never its own duplicate"
    assert verdict.cluster is not None
    return verdict


def meta(index: FingerprintIndex, doc_id: str) -> dict[str, object]:
    return dict(index.get([doc_id])[doc_id].meta)


def cluster_now(dedup: Deduplicator, doc_id: str) -> str:
    """The cluster a stored page belongs to now (its label resolved through the links)."""
    label = str(meta(dedup.index, doc_id)["cluster"])
    return dedup.clusters.roots([label])[label]


def canonical_now(dedup: Deduplicator, doc_id: str) -> str:
    root = cluster_now(dedup, doc_id)
    return dedup.clusters.canonicals([root])[root][1]


def test_unchanged_recrawl_keeps_every_verdict(dedup: Deduplicator) -> None:
    check(dedup, "a", A)
    assert check(dedup, "b", edit(A, 5)).duplicate_of == "a"
    again_a = check(dedup, "a", A)
    assert not again_a.is_duplicate and again_a.cluster == "a" and not again_a.superseded
    again_b = check(dedup, "b", edit(A, 5))
    assert again_b.duplicate_of == "a" and again_b.cluster == "a"
    assert dedup.index.count() == 2  # replaced, not added


def test_changed_original_hands_its_cluster_to_the_next_copy(dedup: Deduplicator) -> None:
    check(dedup, "a", A)
    check(dedup, "b", edit(A, 5))
    c = check(dedup, "c", edit(edit(A, 5), 9))
    assert c.cluster == "a"
    moved = check(dedup, "a", CHANGED)  # same URL, new content, like none of its old copies
    assert not moved.is_duplicate and moved.cluster == "a"
    assert cluster_now(dedup, "a") != cluster_now(dedup, "b")
    # the copies stay together; the member seen first is their canonical now
    assert cluster_now(dedup, "b") == cluster_now(dedup, "c")
    assert canonical_now(dedup, "c") == "b"
    # Later copies join the copies' cluster, named for the canonical that is left; the changed
    # page's copies join it
    assert check(dedup, "d", edit(A, 5, "yankee")).duplicate_of == "b"
    e = check(dedup, "e", CHANGED)
    assert e.duplicate_of == "a" and e.cluster == "a"
    assert cluster_now(dedup, "e") == cluster_now(dedup, "a")
    assert dedup.index.count() == 5


def test_small_edit_of_an_original_keeps_its_cluster(dedup: Deduplicator) -> None:
    check(dedup, "a", A)
    check(dedup, "b", edit(A, 5))
    again = check(dedup, "a", edit(A, 5, "yankee"))  # changed, still a near-copy of its copy
    assert not again.is_duplicate and again.cluster == "a"
    assert cluster_now(dedup, "b") == "a"


def test_changed_page_moves_to_the_cluster_it_now_matches(dedup: Deduplicator) -> None:
    check(dedup, "a", A)
    check(dedup, "b", edit(A, 5))
    check(dedup, "x", OTHER)
    now = check(dedup, "a", edit(OTHER, 3))  # the URL now carries a copy of x
    assert now.duplicate_of == "x" and now.cluster == "x"
    assert cluster_now(dedup, "a") == cluster_now(dedup, "x") != cluster_now(dedup, "b")
    assert canonical_now(dedup, "b") == "b"  # a's old copy is on its own
    # and a copy of the changed page is never filed under a's old cluster
    assert check(dedup, "y", edit(OTHER, 11)).cluster == "x"


def test_changed_copy_leaves_its_cluster(dedup: Deduplicator) -> None:
    check(dedup, "a", A)
    check(dedup, "b", edit(A, 5))
    left = check(dedup, "b", CHANGED)
    assert not left.is_duplicate and left.cluster == "b"
    assert cluster_now(dedup, "a") == "a" and canonical_now(dedup, "a") == "a"


def test_a_re_recorded_entry_is_verified_with_its_new_signatures() -> None:
    """Decoded signatures are cached per stored content: an entry written again under the same
    id and metadata (a warm-up replay does that) must not be verified with its old ones."""
    from neardup_pipeline.index import IndexEntry, MemoryIndex

    config = NearDupConfig(methods=("simhash",), backend="memory")
    dedup = Deduplicator(MemoryIndex(), config)
    first = dedup.fingerprinter.fingerprint(Document("stored", text=random_text(1)))
    probe = dedup.fingerprinter.fingerprint(Document("probe", text=random_text(1)))  # a copy
    other = dedup.fingerprinter.fingerprint(Document("stored", text=random_text(2)))
    meta = {"cluster": "stored", "added": 1.0}
    dedup.index.add(IndexEntry("stored", dedup.fingerprinter.encode(first), first.keys, meta))
    assert dedup.verdict_for(probe).duplicate_of == "stored"
    # same id, same metadata, other content; the old keys too, so it stays a candidate
    dedup.index.add(IndexEntry("stored", dedup.fingerprinter.encode(other), first.keys, meta))
    assert dedup.verdict_for(probe).duplicate_of is None
