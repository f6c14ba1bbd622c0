"""What neardup decided about one document: the value every check returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

VerdictStatus = Literal["ok", "no_text", "not_html", "error", "unchecked"]

# Why a document was not compared, by the status its fingerprint gave.
NOT_COMPARED = {
    "no_text": "no words to compare",
    "not_html": "not text: an image, an archive or control characters",
}


@dataclass(frozen=True)
class Verdict:
    """What neardup decided about one document, and why."""

    doc_id: str
    status: VerdictStatus
    duplicate_of: str | None = None  # the cluster's canonical, when it is another page
    similarity: float | None = None  # of the best match (`nearest`), by `method`
    method: str | None = None
    cluster: str | None = None  # names the cluster: the doc id of its canonical
    scores: dict[str, float] = field(default_factory=dict)  # best similarity per method
    candidates: int = 0
    verified: int = 0  # candidates compared signature by signature (verdict_for)
    reason: str = ""
    # similarity per method to the cluster's original, and that original's content hash, when
    # they were compared: stored with the page, so later lookups can skip it (beyond_reach)
    to_original: dict[str, float] = field(default_factory=dict)
    original_hash: str | None = None
    # the page's own word (rel=canonical, og:url; verdict/declared.py): True when it names
    # itself or the original it replaced named it, False when it names another URL, None when
    # it says nothing
    declared_canonical: bool | None = None
    canonical: str | None = None  # the cluster's canonical after this page (clusters.py's rule)
    nearest: str | None = None  # the most similar page it matched
    superseded: tuple[str, ...] = ()  # pages that were canonical of a cluster it joined, no more
    # re-crawled changed, it left the cluster it was the canonical of: that cluster's canonical now
    successor: str | None = None

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate_of is not None


def not_compared(doc_id: str, status: Literal["no_text", "not_html"]) -> Verdict:
    """The verdict of a document whose fingerprint has no words: kept, never compared."""
    return Verdict(doc_id, status, reason=NOT_COMPARED[status])


def verdict_record(verdict: Verdict) -> dict[str, Any]:
    """The output line of docs/design.md; `status` only for a document that was not checked."""
    record: dict[str, Any] = {
        "id": verdict.doc_id,
        "duplicate_of": verdict.duplicate_of,
        "similarity": verdict.similarity,
        "method": verdict.method,
        "cluster": verdict.cluster or verdict.doc_id,
        "canonical": verdict.status == "ok" and verdict.canonical in (None, verdict.doc_id),
    }
    if verdict.status != "ok":
        record["status"] = verdict.status
    return record
