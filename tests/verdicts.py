"""Verdicts as plain rows, so two runs' verdicts compare with one `==`."""

from __future__ import annotations

from collections.abc import Iterable

from neardup_pipeline.verdict.deduplicator import Verdict


def outcome(verdicts: Iterable[Verdict]) -> list[tuple[object, ...]]:
    """Each verdict's id, status, original, similarity, method and cluster, in order."""
    return [
        (v.doc_id, v.status, v.duplicate_of, v.similarity, v.method, v.cluster) for v in verdicts
    ]
