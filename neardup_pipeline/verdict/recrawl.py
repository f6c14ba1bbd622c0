"""Re-crawl: a cluster's original came back with other content and left its cluster; the member
seen first becomes the cluster's original, so no copy points at content that no longer exists."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from neardup_pipeline.index.base import FingerprintIndex, IndexEntry, cluster_of


@dataclass(frozen=True)
class ClusterMove:
    """A cluster's members now follow `new_cluster`: its original changed and left it (re-crawl),
    or a page declared canonical took it over (`declared`)."""

    old_cluster: str
    new_cluster: str  # the member seen first, promoted to original
    members: tuple[str, ...]
    # a declared canonical took the cluster over (verdict/declared.py): the old original stays,
    # a copy of the new one, which is the page just checked
    declared: bool = False


def cluster_members(
    index: FingerprintIndex, cluster: str, root: IndexEntry, limit: int = 100_000
) -> dict[str, IndexEntry]:
    """Entries labelled `cluster`: each joined by sharing a key with an earlier member, so a
    walk over shared keys from the original reaches all of them (no cluster lookup needed)."""
    found: dict[str, IndexEntry] = {}
    seen = {cluster}
    frontier = [root]
    while frontier and len(seen) < limit:
        ids = index.candidates(frontier.pop().keys) - seen
        seen |= ids
        for cand_id, entry in index.get(ids).items():
            if cluster_of(entry) == cluster:
                found[cand_id] = entry
                frontier.append(entry)
    return found


def move_cluster(
    index: FingerprintIndex, leaving: str, members: Mapping[str, IndexEntry]
) -> ClusterMove:
    """Relabel every member of `leaving`'s cluster to the member seen first, promoted to
    original; a member that named `leaving` as its match names the new original instead."""
    root = min(members.values(), key=lambda e: (float(e.meta.get("added") or 0), e.doc_id))
    for entry in members.values():
        meta = {**entry.meta, "cluster": root.doc_id}
        meta.pop("to_original", None)  # measured against the original that left
        if entry.doc_id == root.doc_id:
            meta.update(duplicate_of=None, similarity=None, method=None)
        elif meta.get("duplicate_of") == leaving:
            meta["duplicate_of"] = root.doc_id
        index.add(IndexEntry(entry.doc_id, entry.signatures, entry.keys, meta))
    return ClusterMove(leaving, root.doc_id, tuple(sorted(members)))
