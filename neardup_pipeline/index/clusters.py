"""Where clusters are kept: a union-find forest of cluster names, each root with its canonical.

A stored entry carries the name of the cluster it joined (`meta["cluster"]`). When a later page
matches members of several clusters, their roots are linked into one (`link`): no member is
rewritten, a name is resolved to its cluster by following links (`roots`). Each root keeps the
best canonical offered to it, as a rank string (smaller is better) and a doc id; the verdict
stage computes ranks (verdict/clusters.py), a store only keeps the smallest.

The store takes no side: `link` never replaces a link (the first writer wins and the caller
resolves again), which is what keeps a forest shared by several processes free of cycles when
every caller links the larger name below the smaller.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

Offer = tuple[str, str]  # (rank, doc id) of a canonical candidate: smaller rank is better


@runtime_checkable
class ClusterStore(Protocol):
    """Links between cluster names, the canonical of each root, and who declares which URL."""

    def roots(self, names: Iterable[str]) -> dict[str, str]:
        """Each name's root: itself when it has no link."""
        ...

    def link(self, child: str, parent: str) -> bool:
        """Make root `child` a child of `parent`; False when `child` has a link already."""
        ...

    def canonicals(self, roots: Iterable[str]) -> dict[str, Offer]:
        """The best offer each root holds (roots never offered anything are left out)."""
        ...

    def offer(self, root: str, offer: Offer) -> None:
        """Keep `offer` as `root`'s canonical when it ranks before the one it holds."""
        ...

    def reset(self, root: str, offer: Offer | None) -> None:
        """Replace `root`'s canonical (its canonical left the cluster), or forget it (None)."""
        ...

    def declare(self, doc_id: str, url: str) -> None:
        """Remember that `doc_id` declares `url` canonical (rel=canonical, og:url)."""
        ...

    def declarers(self, urls: Iterable[str]) -> dict[str, set[str]]:
        """Ids of the documents that declared each of `urls` canonical (none: left out)."""
        ...


def follow(parent: dict[str, str], name: str) -> str:
    """The root `name` leads to through the links in `parent` (child -> parent)."""
    while (up := parent.get(name)) is not None:
        name = up
    return name


class MemoryClusters:
    """The forest in dicts, for the memory index and for one process's view of another store."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}
        self._canonical: dict[str, Offer] = {}
        self._declarers: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def roots(self, names: Iterable[str]) -> dict[str, str]:
        with self._lock:
            return {name: self._find(name) for name in names}

    def _find(self, name: str) -> str:
        path = []
        while (parent := self._parent.get(name)) is not None:
            path.append(name)
            name = parent
        for step in path:  # path compression: each name on the way points at the root
            self._parent[step] = name
        return name

    def link(self, child: str, parent: str) -> bool:
        with self._lock:
            if child in self._parent:
                return False
            self._parent[child] = parent
            return True

    def canonicals(self, roots: Iterable[str]) -> dict[str, Offer]:
        with self._lock:
            return {root: self._canonical[root] for root in roots if root in self._canonical}

    def offer(self, root: str, offer: Offer) -> None:
        with self._lock:
            held = self._canonical.get(root)
            if held is None or offer < held:
                self._canonical[root] = offer

    def reset(self, root: str, offer: Offer | None) -> None:
        with self._lock:
            if offer is None:
                self._canonical.pop(root, None)
            else:
                self._canonical[root] = offer

    def declare(self, doc_id: str, url: str) -> None:
        with self._lock:
            self._declarers.setdefault(url, set()).add(doc_id)

    def declarers(self, urls: Iterable[str]) -> dict[str, set[str]]:
        with self._lock:
            return {url: set(self._declarers[url]) for url in urls if url in self._declarers}
