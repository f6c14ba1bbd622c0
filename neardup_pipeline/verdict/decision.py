"""The decision, pure: how two pages compare, what a page's verification found, and the Verdict
that follows from it and from the cluster it joined. No index, no I/O (deduplicator.py gathers
the candidates and the entries; clusters.py joins)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from neardup_pipeline.index.base import IndexEntry
from neardup_pipeline.methods.contract import MethodCapabilities
from neardup_pipeline.verdict.clusters import Joined
from neardup_pipeline.verdict.verdict import Verdict

Capabilities = Mapping[str, MethodCapabilities]
Signatures = Mapping[str, Any]  # decoded signatures by method


@dataclass(frozen=True)
class Match:
    """A stored page a page matched: by which method, how closely, in which cluster (root)."""

    doc_id: str
    cluster: str
    method: str
    similarity: float


@dataclass
class Found:
    """What verification found for one page: its best match per cluster (by root name)."""

    matches: dict[str, Match] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)  # best similarity per method
    # per cluster whose head was verified: the similarities to it and the head's content hash
    originals: dict[str, tuple[dict[str, float], str | None]] = field(default_factory=dict)
    candidates: int = 0
    verified: int = 0
    previous: IndexEntry | None = None  # the page's own stored entry (a second visit)
    named: list[IndexEntry] = field(default_factory=list)  # the page it declares, matched
    named_by_member: bool = False  # a page declaring it canonical matched it

    def add(self, match: Match) -> None:
        held = self.matches.get(match.cluster)
        if held is None or match.similarity > held.similarity:
            self.matches[match.cluster] = match

    def best(self) -> Match | None:
        return max(self.matches.values(), key=lambda m: (m.similarity, m.doc_id), default=None)


def compare(capabilities: Capabilities, mine: Signatures, theirs: Signatures
            ) -> tuple[dict[str, float], tuple[str, float] | None]:
    """Each method's similarity of two pages, and the most similar method calling them
    near-duplicates (method, similarity), if any: none for template twins, and none from a
    method whose document frequencies are too young to decide on."""
    sims: dict[str, float] = {}
    best: tuple[str, float] | None = None
    twins: bool | None = None  # asked once, and only of a pair some method matches
    for name, caps in capabilities.items():
        if name not in theirs or name not in mine:
            continue
        sim, duplicate = caps.judge(mine[name], theirs[name])
        sims[name] = sim
        if caps.warms_up is not None and caps.warms_up.warming_up(mine[name]):
            continue
        if duplicate and (best is None or sim > best[1]):
            if twins is None:
                twins = template_twins(capabilities, mine, theirs)
            if not twins:
                best = (name, sim)
    return sims, best


def template_twins(capabilities: Capabilities, mine: Signatures, theirs: Signatures) -> bool:
    """Whether a method that can tell (the bag: subject.py) finds the two pages to be template
    twins: distinct pages, whatever any method's similarity."""
    return any(caps.finds_twins is not None and name in theirs and name in mine
               and caps.finds_twins.twins(mine[name], theirs[name])
               for name, caps in capabilities.items())


def closest(capabilities: Capabilities, a: Signatures, b: Signatures
            ) -> tuple[float | None, str | None]:
    """The highest similarity of two pages under any method, rounded as verdicts are, and the
    method."""
    sims, _ = compare(capabilities, a, b)
    if not sims:
        return None, None
    method = max(sims, key=lambda name: sims[name])
    return round(sims[method], 6), method


def duplicate_verdict(doc_id: str, best: Match, found: Found, canonical: str) -> Verdict:
    """A page whose cluster's canonical is another page, matched best to `best`."""
    to_original, original_hash = found.originals.get(best.cluster, ({}, None))
    direct = best.doc_id == best.cluster  # its similarity to the cluster's head is known
    return Verdict(
        doc_id, "ok", duplicate_of=canonical, similarity=round(best.similarity, 6),
        method=best.method, cluster=canonical, canonical=canonical, nearest=best.doc_id,
        scores=found.scores, candidates=found.candidates, verified=found.verified,
        reason=f"{best.method} similarity {best.similarity:.3f} to {best.doc_id}",
        to_original=to_original if direct else {},
        original_hash=original_hash if direct else None,
    )


def joined_verdict(doc_id: str, found: Found, joined: Joined) -> Verdict:
    """The verdict of a page that joined `joined`: a copy of its canonical, or the canonical
    (naming the pages it displaced)."""
    superseded = tuple(s for s in joined.superseded if s != doc_id)
    best = found.best()
    if joined.canonical != doc_id and best is not None:
        return replace(duplicate_verdict(doc_id, best, found, joined.canonical),
                       superseded=superseded)
    return Verdict(
        doc_id, "ok", cluster=joined.canonical, canonical=joined.canonical,
        nearest=best.doc_id if best else None,
        similarity=round(best.similarity, 6) if best else None,
        method=best.method if best else None, scores=found.scores,
        candidates=found.candidates, verified=found.verified,
        reason=f"the canonical of its cluster; displaces {', '.join(superseded)}"
        if superseded else "",
        superseded=superseded,
    )
