"""Re-crawl: a page seen before comes back. Unchanged, it stays in its cluster; changed so that
it matches no member of its cluster any more, it leaves it under a name of its own, and the
cluster it left picks its canonical again among the members that remain."""

from __future__ import annotations

from collections.abc import Callable

from neardup_pipeline.fingerprint import Fingerprint, Fingerprinter
from neardup_pipeline.index.base import FingerprintIndex, IndexEntry, cluster_of
from neardup_pipeline.index.clusters import ClusterStore
from neardup_pipeline.text.canonical import url_key
from neardup_pipeline.verdict.clusters import NAME_SEPARATOR, cluster_members, entry_facts, offer_of


def changed(previous: IndexEntry, fp: Fingerprint, fingerprinter: Fingerprinter) -> bool:
    """Whether the page's content differs from what the index holds of it."""
    old_hash = previous.meta.get("content_hash")
    if old_hash:
        return bool(old_hash != fp.content_hash)
    return previous.signatures != fingerprinter.encode(fp)


def leave(
    store: ClusterStore, index: FingerprintIndex, previous: IndexEntry, fp: Fingerprint,
    demote: tuple[str, ...], keyed: Callable[[IndexEntry], IndexEntry],
) -> tuple[str, str | None]:
    """The name a changed page takes on leaving its cluster (its id and content hash: the old
    cluster may be named after it; `doc_id_of` reads the id back), and, when it was that
    cluster's canonical, the member the rule chooses in its place."""
    root = store.roots([cluster_of(previous)])[cluster_of(previous)]
    held = store.canonicals([root]).get(root)
    successor = None
    if held is not None and held[1] == fp.doc_id:
        members = cluster_members(index, store, root, previous, keyed)
        members.pop(fp.doc_id, None)
        offers = [offer_of(entry_facts(m, named=_named(store, m, members)), demote)
                  for m in members.values()]
        best = min(offers) if offers else None
        store.reset(root, best)
        successor = best[1] if best is not None else None
    return f"{fp.doc_id}{NAME_SEPARATOR}{fp.content_hash[:16]}", successor


def _named(store: ClusterStore, entry: IndexEntry, members: dict[str, IndexEntry]) -> bool:
    url = entry.meta.get("url")
    if not url:
        return False
    own = url_key(str(url))
    return bool(store.declarers([own]).get(own, set()) & members.keys())
