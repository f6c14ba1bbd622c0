"""Verification one cluster at a time: a page matching a cluster's original is not compared with
the cluster's other members, a page reaching a cluster through a member is still found, and a
member is skipped only when the triangle inequality rules a match out (on real pages too)."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.index import open_index
from neardup_pipeline.index.base import Membership, memberships
from neardup_pipeline.methods.contract import MethodCapabilities
from neardup_pipeline.verdict.pruning import beyond_reach
from tests.corpora import installation_guide_pages

VOCAB = [f"{a}{b}" for a in ("alpha", "bravo", "delta", "gamma", "kilo", "lima", "oscar", "papa")
         for b in ("ton", "ville", "berg", "ford", "stad", "mouth", "wick", "ham", "by", "dale")]


def words(seed: int, count: int = 300) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(VOCAB) for _ in range(count)]


def edited(body: list[str], at: int) -> str:
    """`body` with one word replaced: a near-copy under every default method."""
    copy = list(body)
    copy[at] = "zulufoxtrot"
    return " ".join(copy)


@pytest.fixture
def dedup(backend_config: NearDupConfig) -> Iterator[Deduplicator]:
    index = open_index(backend_config.backend, backend_config)
    try:
        yield Deduplicator(index, backend_config.replace(language="en"))
    finally:
        index.close()


def test_a_copy_is_verified_against_the_cluster_head_only(dedup: Deduplicator) -> None:
    body = words(1)
    dedup.process(Document("original", text=" ".join(body)))
    clusters = {dedup.process(Document(f"copy-{n}", text=edited(body, n))).cluster
                for n in range(30)}
    assert clusters == {"original"}  # named for its canonical: a tie, so the first seen
    verdict = dedup.process(Document("late", text=edited(body, 200)))
    assert verdict.cluster == "original" and verdict.duplicate_of == "original"
    assert verdict.candidates >= 30
    assert verdict.verified == 1


def test_a_member_out_of_reach_is_skipped_and_nothing_is_lost(dedup: Deduplicator) -> None:
    body = words(2)
    dedup.process(Document("original", text=" ".join(body)))
    for n in range(12):
        dedup.process(Document(f"copy-{n}", text=edited(body, n)))
    # Half the text shared: a candidate through some keys, a duplicate of nothing.
    half = " ".join(body[:150] + [f"x{word}" for word in words(3, 150)])
    verdict = dedup.process(Document("half", text=half))
    assert not verdict.is_duplicate and verdict.candidates >= 1
    # the cluster's head (copy-0, its smallest id) and the page first seen, whose similarity to
    # the head is not stored; the other copies are all out of reach
    assert verdict.verified == 2
    # The same page checked against every member says the same.
    fp = dedup.fingerprinter.fingerprint(Document("half", text=half))
    for entry in dedup.index.get([f"copy-{n}" for n in range(12)]).values():
        stored = dedup.fingerprinter.decode(entry.signatures)
        for name, caps in dedup.fingerprinter.capabilities.items():
            assert not caps.judge(fp.signatures[name], stored[name])[1]


def test_a_page_reaching_a_cluster_through_a_member_is_found(backend_config: NearDupConfig) -> None:
    """o ~ m and m ~ p, but not o ~ p: p joins o's cluster through m (bag: weighted Jaccard)."""
    # each pair's 3-word resemblance (0.66) is near the default order threshold (0.6): the
    # estimate from 84 minimums must not decide what this test is about
    config = backend_config.replace(methods=("bag",), language="en", bag_order_threshold=0.5)
    index = open_index(config.backend, config)
    try:
        dedup = Deduplicator(index, config)
        distinct = [f"{a}{b}" for a, b in itertools.product(VOCAB[:20], VOCAB[:20])][:140]
        assert dedup.process(Document("o", text=" ".join(distinct[0:100]))).cluster == "o"
        m = dedup.process(Document("m", text=" ".join(distinct[20:120])))
        assert m.duplicate_of == "o" and m.to_original  # 80 of 120 words: 0.67
        p = dedup.process(Document("p", text=" ".join(distinct[40:140])))
        assert p.scores["bag"] < 0.7
        assert p.cluster == "o" and p.nearest == "m"  # 0.43 to o, 0.67 to m
        assert p.duplicate_of == "o"  # the canonical: first seen
        # m verified (the nearest); o too when a candidate ahead of m in the cluster's queue
        assert 1 <= p.verified <= p.candidates
    finally:
        index.close()


def test_memberships_carry_the_similarity_to_the_original(dedup: Deduplicator) -> None:
    body = words(4)
    dedup.process(Document("original", text=" ".join(body)))
    copy = dedup.process(Document("copy", text=edited(body, 7)))
    found = memberships(dedup.index, ["original", "copy", "unknown"])
    assert set(found) == {"original", "copy"}
    assert found["original"] == Membership("original")
    assert found["copy"].cluster == "copy"  # stored under its own name, linked to its cluster
    assert copy.cluster == "original"
    assert dedup.clusters.roots(["original", "copy"]) == {"original": "copy", "copy": "copy"}
    assert dict(found["copy"].to_original) == pytest.approx(copy.to_original)
    assert set(copy.to_original) == set(dedup.fingerprinter.methods)
    original_hash = dedup.index.get(["original"])["original"].meta["content_hash"]
    assert found["copy"].original_hash == original_hash is not None


def test_a_changed_original_makes_the_stored_similarities_stale(dedup: Deduplicator) -> None:
    """The original re-crawled with other content, still a near-copy: its members' distances
    were measured against the old content and must not prune."""
    body = words(5)
    dedup.process(Document("original", text=" ".join(body)))
    dedup.process(Document("copy", text=edited(body, 3)))
    dedup.process(Document("original", text=edited(body, 250)))
    now = dedup.index.get(["original"])["original"].meta["content_hash"]
    assert memberships(dedup.index, ["copy"])["copy"].original_hash != now


def test_an_original_that_left_never_prunes_its_cluster(dedup: Deduplicator) -> None:
    """The original re-crawled with other content leaves its cluster: the members' stored
    similarities were measured against content that is gone, and a copy of the old content
    is still found through them."""
    body = words(6)
    dedup.process(Document("a", text=" ".join(body)))
    dedup.process(Document("b", text=edited(body, 5)))
    dedup.process(Document("c", text=edited(edited(body, 5).split(), 9)))
    left = dedup.process(Document("a", text=" ".join(words(7))))  # a leaves
    now = dedup.index.get(["a"])["a"].meta["content_hash"]
    assert memberships(dedup.index, ["b"])["b"].original_hash != now
    later = dedup.process(Document("d", text=edited(body, 6)))
    assert later.is_duplicate and later.cluster != left.cluster


def simhash_membership(distance: int, original_hash: str | None = "h") -> Membership:
    return Membership("o", {"simhash": 1 - distance / 64}, original_hash)


@pytest.mark.parametrize(
    ("page", "member", "floors", "out"),
    [
        (8, 4, {"simhash": 61 / 64}, True),  # 8 - 4 > 3: no member within 3 bits of the page
        (7, 4, {"simhash": 61 / 64}, False),  # 7 - 4 = 3: the member may be within reach
        (8, 4, {"simhash": 61 / 64, "rarewords": None}, False),  # a method without a metric
        (8, 4, {}, False),
    ],
)
def test_beyond_reach_is_the_triangle_inequality(
    page: int, member: int, floors: dict[str, float | None], out: bool
) -> None:
    assert beyond_reach({"simhash": 1 - page / 64}, "h", simhash_membership(member), floors) is out


def test_beyond_reach_needs_the_same_original_and_every_similarity() -> None:
    floors = {"simhash": 61 / 64}
    assert not beyond_reach({"simhash": 0.5}, "h", simhash_membership(1, "old"), floors)
    assert not beyond_reach({"simhash": 0.5}, None, simhash_membership(1, None), floors)
    assert not beyond_reach({}, "h", simhash_membership(1), floors)
    assert not beyond_reach({"simhash": 0.5}, "h", Membership("o", {}, "h"), floors)


def test_pruning_is_sound_on_real_pages() -> None:
    """The guide's first 25 English sections rendered for several architectures: for every
    original o and member m of one section and every page p, where `beyond_reach` would skip m,
    m is truly no near-duplicate of p under any method (signatures as stored, weights rounded).
    The pages have no URL: no site, so no containment across sites, which no floor bounds."""
    fpr = Deduplicator(open_index("memory", NearDupConfig()), NearDupConfig()).fingerprinter
    floors = {name: caps.metric_floor for name, caps in fpr.capabilities.items()}
    with_site = fpr.fingerprint(Document("https://example.org/p", text=" ".join(words(4)),
                                         url="https://example.org/p"))
    assert fpr.capabilities["bag"].floor_for(with_site.signatures["bag"]) is None
    sections: dict[str, list[Document]] = defaultdict(list)
    for page in installation_guide_pages():
        if page.info["lang"] == "en":
            sections[page.group].append(Document(page.doc_id, html=page.html))
    shared = sorted(group for group, members in sections.items() if len(members) > 1)[:25]
    docs = [doc for group in shared for doc in sections[group]]
    group_of = {doc.doc_id: group for group in shared for doc in sections[group]}
    fps = [fp for fp in map(fpr.fingerprint, docs) if fp.status == "ok"]
    stored = [fpr.decode(fpr.encode(fp)) for fp in fps]
    # pair[p][x]: each method's similarity of page p (fresh) to x (as stored), and the verdict
    pair = [[_compare(fpr.capabilities, p.signatures, x) for x in stored] for p in fps]
    skipped = 0
    for o, m in itertools.permutations(range(len(fps)), 2):
        if group_of[fps[o].doc_id] != group_of[fps[m].doc_id]:
            continue
        member = Membership(fps[o].doc_id, pair[m][o][0], "h")
        for p in range(len(fps)):
            if p not in (o, m) and beyond_reach(pair[p][o][0], "h", member, floors):
                skipped += 1
                assert not pair[p][m][1], (fps[p].doc_id, fps[m].doc_id)
    assert len(fps) > 200 and skipped > 10_000


def _compare(
    methods: Mapping[str, MethodCapabilities], page: Mapping[str, Any], stored: Mapping[str, Any]
) -> tuple[dict[str, float], bool]:
    judged = {name: caps.judge(page[name], stored[name]) for name, caps in methods.items()}
    return {name: sim for name, (sim, _) in judged.items()}, any(d for _, d in judged.values())


def test_sqlite_caches_follow_other_connections(tmp_path: Path) -> None:
    """Entries and memberships kept between lookups are dropped when another connection (a
    second crawler process) commits: its writes may have replaced them."""
    from neardup_pipeline.index import IndexEntry
    from neardup_pipeline.index.sqlite.store import SqliteIndex

    path = tmp_path / "shared.sqlite"
    first, second = SqliteIndex(path), SqliteIndex(path)
    try:
        first.add(IndexEntry("x", {"m": "1"}, {"m": ["k"]}, {"cluster": "x"}))
        first.flush()
        assert second.get(["x"])["x"].signatures == {"m": "1"}
        assert memberships(second, ["x"])["x"] == Membership("x")
        first.add(IndexEntry("x", {"m": "2"}, {"m": ["k"]}, {
            "cluster": "o", "to_original": {"content_hash": "h", "similarity": {"m": 0.9}}}))
        assert second.get(["x"])["x"].signatures == {"m": "1"}  # not committed yet
        first.flush()
        assert second.get(["x"])["x"].signatures == {"m": "2"}
        assert second.get(["x"])["x"].meta["cluster"] == "o"
        assert memberships(second, ["x"])["x"] == Membership("o", {"m": 0.9}, "h")
        assert first.get(["x"])["x"].meta["cluster"] == "o"  # its own write, from its cache
    finally:
        first.close()
        second.close()


def test_recent_entries_are_bounded_by_their_size() -> None:
    from neardup_pipeline.index.sqlite.cache import Recent

    cache: Recent[str] = Recent(10)
    for key in "abc":
        cache.put(key, key.upper(), 4)
    assert list(cache) == ["b", "c"]  # 12 > 10: the oldest went
    cache.put("b", "B2", 1)  # written again: the newest now
    assert list(cache) == ["c", "b"] and cache.pick(["b", "x"]) == {"b": "B2"}
    cache.put("huge", "H", 50)  # heavier than the bound: kept alone until the next one
    assert list(cache) == ["huge"]
    cache.clear()
    cache.put("a", "A", 10)
    assert list(cache) == ["a"]
