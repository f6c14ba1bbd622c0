"""The order candidates are verified in, one cluster at a time, and the triangle-inequality
bound that skips a cluster member no method can match."""

from __future__ import annotations

from collections.abc import Mapping

from neardup_pipeline.index.base import Membership

_PRUNE_SLACK = 0.01  # stored bag weights are rounded to float16: bounds keep this margin


def cluster_queues(clusters: dict[str, str]) -> dict[str, list[str]]:
    """Candidates grouped by cluster, in the order they are verified: clusters by name, each
    with the member the cluster is named after first (the one whose similarities most members
    store), then its other members by id."""
    queues: dict[str, list[str]] = {}
    for doc_id, cluster in sorted(clusters.items()):
        queues.setdefault(cluster, []).append(doc_id)
    for cluster, members in queues.items():
        if cluster in members:
            members.remove(cluster)
            members.insert(0, cluster)
    return dict(sorted(queues.items()))


def beyond_reach(
    page_to_original: Mapping[str, float],
    original_hash: str | None,
    member: Membership,
    floors: Mapping[str, float | None],
) -> bool:
    """True when no method can call the page a duplicate of `member`, by the triangle inequality
    through the cluster's original: d(page, member) >= d(page, original) - d(member, original),
    with d = 1 - similarity a metric for each method with a `metric_floor`. Every method must
    be ruled out; one without a floor, or without both similarities, never is. The member's
    similarity must have been measured against the original's present content."""
    if not floors or original_hash is None or member.original_hash != original_hash:
        return False
    for name, floor in floors.items():
        page, known = page_to_original.get(name), member.to_original.get(name)
        if floor is None or page is None or known is None:
            return False
        if (1.0 - page) - (1.0 - known) <= (1.0 - floor) + _PRUNE_SLACK:
            return False
    return True
