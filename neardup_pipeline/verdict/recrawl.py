"""Re-crawl: a page seen before comes back. Unchanged, it stays in its cluster; changed so that
it matches no member of its cluster any more, it leaves it under a name of its own, and the
cluster it left picks its canonical again among the members that remain."""

from __future__ import annotations

from neardup_pipeline.fingerprint import Fingerprint, Fingerprinter
from neardup_pipeline.index.base import FingerprintIndex, IndexEntry, cluster_of
from neardup_pipeline.index.clusters import ClusterStore, Offer
from neardup_pipeline.text.canonical import url_key
from neardup_pipeline.verdict.clusters import PageFacts, offer_of, page_facts
from neardup_pipeline.verdict.declared import CANONICAL_META

NAME_SEPARATOR = "\x1f"  # never in a URL: a changed page's name is its id, this, its hash


def changed(previous: IndexEntry, fp: Fingerprint, fingerprinter: Fingerprinter) -> bool:
    """Whether the page's content differs from what the index holds of it."""
    old_hash = previous.meta.get("content_hash")
    if old_hash:
        return bool(old_hash != fp.content_hash)
    return previous.signatures != fingerprinter.encode(fp)


def leave(
    store: ClusterStore, index: FingerprintIndex, previous: IndexEntry, fp: Fingerprint,
    demote: tuple[str, ...],
) -> tuple[str, str | None]:
    """The name a changed page takes on leaving its cluster (its id and content hash: the old
    cluster may be named after it; `doc_id_of` reads the id back), and, when it was that
    cluster's canonical, the member the rule chooses in its place."""
    root = store.roots([cluster_of(previous)])[cluster_of(previous)]
    held = store.canonicals([root]).get(root)
    successor = None
    if held is not None and held[1] == fp.doc_id:
        members = cluster_members(index, store, root, previous)
        members.pop(fp.doc_id, None)
        offers = [offer_of(entry_facts(m, named=_named(store, m, members)), demote)
                  for m in members.values()]
        best = min(offers) if offers else None
        store.reset(root, best)
        successor = best[1] if best is not None else None
    return f"{fp.doc_id}{NAME_SEPARATOR}{fp.content_hash[:16]}", successor


def doc_id_of(name: str) -> str:
    """The doc id a cluster name was first recorded under."""
    return name.partition(NAME_SEPARATOR)[0]


def _named(store: ClusterStore, entry: IndexEntry, members: dict[str, IndexEntry]) -> bool:
    url = entry.meta.get("url")
    if not url:
        return False
    own = url_key(str(url))
    return bool(store.declarers([own]).get(own, set()) & members.keys())


def entry_facts(entry: IndexEntry, named: bool = False) -> PageFacts:
    """The canonical rule's facts of a stored page."""
    return page_facts(entry.doc_id, entry.meta.get("url"), entry.meta.get(CANONICAL_META),
                      float(entry.meta.get("added") or 0.0), named)


def cluster_members(
    index: FingerprintIndex, store: ClusterStore, root: str, start: IndexEntry,
    limit: int = 100_000,
) -> dict[str, IndexEntry]:
    """The stored members of cluster `root`: each joined by matching, so sharing a key with, a
    member found before it, and a walk over shared keys from any member reaches them all."""
    found: dict[str, IndexEntry] = {start.doc_id: start}
    seen = {start.doc_id}
    frontier = [start]
    while frontier and len(seen) < limit:
        ids = index.candidates(frontier.pop().keys) - seen
        seen |= ids
        entries = index.get(ids)
        roots = store.roots({cluster_of(e) for e in entries.values()})
        for doc_id, entry in entries.items():
            if roots[cluster_of(entry)] == root:
                found[doc_id] = entry
                frontier.append(entry)
    return found


__all__ = ["NAME_SEPARATOR", "Offer", "changed", "cluster_members", "doc_id_of", "entry_facts",
           "leave"]
