"""Joining clusters in the shared store (verdict/clusters.py `join`) when two writers check the
same new page at once."""

from __future__ import annotations

from collections.abc import Iterable

from neardup_pipeline.index.clusters import MemoryClusters, Offer
from neardup_pipeline.verdict.clusters import join


class CountedLinks(MemoryClusters):
    """The memory store, failing a test that links without end."""

    def __init__(self) -> None:
        super().__init__()
        self.links = 0

    def link(self, child: str, parent: str) -> bool:
        self.links += 1
        assert self.links < 20, "a join tried the same link without end"
        return super().link(child, parent)


def ranks(names: Iterable[str]) -> dict[str, Offer]:
    return {name: (f"rank-{name}", name) for name in names}


def test_a_page_two_writers_join_at_once_ends_in_one_cluster() -> None:
    """Each writer takes the page for new (fresh: no read of its own name); the second one's
    link of it fails because the first linked it, and it joins through where it now leads."""
    store = CountedLinks()
    first = join(store, "z", [("rank-z", "z")], {"a"}, ranks, fresh=True)
    second = join(store, "z", [("rank-z", "z")], {"b"}, ranks, fresh=True)
    roots = store.roots(["a", "b", "z"])
    assert len(set(roots.values())) == 1
    assert first.cluster == "a" and second.cluster == roots["z"] == "a"
