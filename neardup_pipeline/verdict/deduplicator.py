"""Candidates -> verification -> Verdict: the one place that decides what is a near-duplicate."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.index.base import (
    FingerprintIndex,
    IndexEntry,
    SupportsPublish,
    candidates_many,
    cluster_of,
    memberships,
    to_original_meta,
)
from neardup_pipeline.index.memory import MemoryIndex
from neardup_pipeline.verdict.batch import PrefetchedIndex, batchable, freeze
from neardup_pipeline.verdict.declared import (
    CANONICAL_META,
    names_itself,
    names_other,
    promote,
    takes_over,
)
from neardup_pipeline.verdict.pruning import beyond_reach, cluster_queues
from neardup_pipeline.verdict.recrawl import ClusterMove, cluster_members, move_cluster
from neardup_pipeline.verdict.verdict import Verdict
from neardup_pipeline.verdict.warmup_replay import WarmupReplay

__all__ = ["ClusterMove", "Decided", "Deduplicator", "Verdict"]  # its results

Decided = tuple[Fingerprint, Verdict, str | None]  # a page decided, not yet settled (`settle`)

_DECODE_CACHE_SIZE = 2_000  # bounds memory: a 4,096-word bag decodes to ~50 KB


@dataclass(frozen=True)
class _Match:
    doc_id: str
    cluster: str
    method: str
    similarity: float


class Deduplicator:
    """Checks documents against an index and records them, with one fingerprinter's rules."""

    def __init__(
        self,
        index: FingerprintIndex,
        config: NearDupConfig | None = None,
        fingerprinter: Fingerprinter | None = None,
    ) -> None:
        self.config = config or NearDupConfig()
        self.fingerprinter = fingerprinter or Fingerprinter(self.config)
        self.index = index
        # An index made with other text rules, hashes or method parameters is refused here.
        index.ensure_params(self.fingerprinter.params())
        # doc id -> (stored signatures, decoded): see _decoded
        self._decode_cache: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._replays = [  # stream warm-up (rarewords): young profiles are redone once, at its end
            WarmupReplay(name, caps.warms_up)
            for name, caps in self.fingerprinter.capabilities.items()
            if caps.warms_up is not None
        ]
        # Re-crawl: the stored entry of the page last checked (fetched with its candidates) and
        # the cluster move its changed content caused, if any (the pipeline mirrors it in pages).
        self._previous: tuple[str, IndexEntry | None] | None = None
        self.last_move: ClusterMove | None = None
        self._heads: tuple[str, dict[str, IndexEntry]] = ("", {})  # see verdict_for
        # Whether the index publishes a write order, asked once per index object: a runtime
        # Protocol's isinstance reads every attribute it names, once a page otherwise.
        self._publishes: tuple[object, bool] = (None, False)

    def check(self, doc: Document) -> tuple[Verdict, Fingerprint]:
        """Verdict for `doc` against what the index holds (the index is not changed)."""
        fp = self.fingerprinter.fingerprint(doc, self.index)  # the index keeps DF (rarewords)
        if fp.status != "ok":
            return Verdict(doc.doc_id, "no_text", reason="no words to compare"), fp
        return self.verdict_for(fp), fp

    def verdict_for(self, fp: Fingerprint) -> Verdict:
        """Verify the candidates sharing a lookup key, one cluster at a time.

        A cluster's members are verified in turn, its original first, up to the first that
        matches: the page then belongs to that cluster, and the other members (in a long crawl,
        tens of copies of one text) need no verification. In a cluster whose original does not
        match, the other members are verified too, so a page that resembles any one member is
        still found; only a member the triangle inequality puts out of reach is skipped
        (`beyond_reach`). Of the matched clusters, the most similar match wins. `scores` are
        the best similarity per method among the pairs verified.
        """
        ids = self.index.candidates(fp.keys)
        ids.discard(fp.doc_id)  # a page is never its own duplicate
        belongs = memberships(self.index, ids)
        queues = cluster_queues({i: m.cluster for i, m in belongs.items()}, fp.doc_id)
        stored = self.index.get([*(members[0] for members in queues.values()), fp.doc_id])
        self._previous = (fp.doc_id, stored.pop(fp.doc_id, None))  # its own entry: re-crawl
        self._heads = (fp.doc_id, stored)  # clusters' originals, mostly: declarations read them
        scores: dict[str, float] = {}
        matches: dict[str, _Match] = {}
        originals: dict[str, tuple[dict[str, float], str | None]] = {}  # page -> original
        verified = 0
        for cluster, members in queues.items():
            entry = stored.get(members[0])
            sims, match = self._verify(fp, entry, scores)
            verified += bool(sims)
            if match is not None:
                matches[cluster] = match
            if entry is not None and members[0] == cluster and sims:
                originals[cluster] = (sims, entry.meta.get("content_hash"))
        floors = {name: caps.floor_for(fp.signatures[name])
                  for name, caps in self.fingerprinter.capabilities.items()
                  if name in fp.signatures}
        unmatched = {
            cluster: [m for m in members[1:] if cluster not in originals
                      or not beyond_reach(*originals[cluster], belongs[m], floors)]
            for cluster, members in queues.items() if cluster not in matches
        }
        if any(unmatched.values()):
            stored = self.index.get(m for members in unmatched.values() for m in members)
            for cluster, members in unmatched.items():
                for member in members:
                    sims, match = self._verify(fp, stored.get(member), scores)
                    verified += bool(sims)
                    if match is not None:
                        matches[cluster] = match
                        break
        if not matches:
            return Verdict(fp.doc_id, "ok", cluster=fp.doc_id, scores=scores,
                           candidates=len(ids), verified=verified)
        cluster = max(matches, key=lambda c: matches[c].similarity)
        best = matches[cluster]
        to_original, original_hash = originals.get(cluster, ({}, None))
        return Verdict(
            fp.doc_id,
            "ok",
            duplicate_of=best.doc_id,
            similarity=round(best.similarity, 6),
            method=best.method,
            cluster=best.cluster,
            scores=scores,
            candidates=len(ids),
            verified=verified,
            reason=f"{best.method} similarity {best.similarity:.3f} to {best.doc_id}",
            to_original=to_original,
            original_hash=original_hash,
        )

    def _verify(
        self, fp: Fingerprint, entry: IndexEntry | None, scores: dict[str, float]
    ) -> tuple[dict[str, float], _Match | None]:
        """Each method's similarity of `fp` to `entry` (also kept as the best in `scores`), and
        the most similar method calling it a near-duplicate, if any."""
        if entry is None or cluster_of(entry) == fp.doc_id:
            return {}, None  # gone since the lookup, or one of this page's own copies
        cand_sigs = self._decoded(entry)
        sims: dict[str, float] = {}
        best: _Match | None = None
        twins: bool | None = None  # asked once, and only of a pair some method matches
        for name, caps in self.fingerprinter.capabilities.items():
            if name not in cand_sigs or name not in fp.signatures:
                continue
            sim, duplicate = caps.judge(fp.signatures[name], cand_sigs[name])
            sims[name] = sim
            scores[name] = max(scores.get(name, 0.0), sim)
            if caps.warms_up is not None and caps.warms_up.warming_up(fp.signatures[name]):
                continue  # DF too young to decide on
            if duplicate and (best is None or sim > best.similarity):
                if twins is None:
                    twins = self._template_twins(fp, cand_sigs)
                if not twins:
                    best = _Match(entry.doc_id, cluster_of(entry), name, sim)
        return sims, best

    def _template_twins(self, fp: Fingerprint, cand_sigs: dict[str, Any]) -> bool:
        """Whether a method that can tell (the bag: subject.py) finds the two pages to be template
        twins: distinct pages, whatever any method's similarity."""
        for name, caps in self.fingerprinter.capabilities.items():
            if caps.finds_twins is not None and name in cand_sigs and name in fp.signatures \
                    and caps.finds_twins.twins(fp.signatures[name], cand_sigs[name]):
                return True
        return False

    def _decoded(self, entry: IndexEntry) -> dict[str, Any]:
        """A stored entry's signatures, decoded once: the same originals are candidates again and
        again (a site's copies), and base64 + JSON decoding is most of a verification."""
        cached = self._decode_cache.get(entry.doc_id)
        # A re-recorded entry stores other signatures: compared, not hashed (the dicts of one
        # index are mostly the very same strings, which compare by identity; others by memcmp).
        if cached is not None and cached[0] == entry.signatures:
            return cached[1]
        found = self.fingerprinter.decode(entry.signatures)
        if cached is None and len(self._decode_cache) >= _DECODE_CACHE_SIZE:
            self._decode_cache.pop(next(iter(self._decode_cache)))  # oldest first
        self._decode_cache[entry.doc_id] = (entry.signatures, found)
        return found

    def record(self, fp: Fingerprint, verdict: Verdict, url: str | None = None) -> None:
        """Store a checked document so later pages are compared with it."""
        if fp.status != "ok":
            return
        meta: dict[str, Any] = {
            "cluster": verdict.cluster or fp.doc_id,
            "duplicate_of": verdict.duplicate_of,
            "similarity": verdict.similarity,
            "method": verdict.method,
            "url": url,
            "added": time.time(),
            "content_hash": fp.content_hash,  # re-crawl: tells a changed page from the same one
            "words": fp.word_count,
        }
        if fp.canonical_url:
            meta[CANONICAL_META] = fp.canonical_url  # a later copy may be the one it names
        if verdict.to_original:
            meta["to_original"] = to_original_meta(verdict.to_original, verdict.original_hash)
        entry = IndexEntry(fp.doc_id, self.fingerprinter.encode(fp), fp.keys, meta)
        self.index.add(entry)
        for replay in self._replays:
            replay.remember(entry, fp.signatures[replay.name])

    def count_words(self, fp: Fingerprint) -> None:
        """Add a checked document's distinct words to the index's DF (a re-add replaces them)."""
        for name, caps in self.fingerprinter.capabilities.items():
            learns = caps.learns_words
            words = learns.corpus_words(fp.signatures[name]) if learns is not None else None
            if words is not None:
                self.index.add_document_frequencies(fp.doc_id, words.tolist())
                return

    def learn(self, doc: Document) -> None:
        """Batch mode's first pass: count `doc`'s words in DF only (no lookup, no verdict)."""
        capabilities = self.fingerprinter.capabilities.values()
        if not any(caps.learns_words is not None for caps in capabilities):
            return
        words = self.fingerprinter.normalizer.words(self.fingerprinter.text_of(doc)[0]).words
        if len(words) >= self.config.text.min_tokens:
            hashes = np.unique(self.fingerprinter.hasher.word_hashes(words))
            self.index.add_document_frequencies(doc.doc_id, hashes.tolist())

    def process(self, doc: Document) -> Verdict:
        """Check and, by policy, record: originals always, duplicates when index_duplicates."""
        return self.process_and_fingerprint(doc)[0]

    def process_and_fingerprint(self, doc: Document) -> tuple[Verdict, Fingerprint | None]:
        """`process`, also returning the fingerprint (its text and title, extracted once)."""
        fp = self.fingerprinter.fingerprint(doc, self.index)  # the index keeps DF (rarewords)
        return self.process_fingerprint(fp, doc.url), fp

    def recrawl(self, fp: Fingerprint) -> ClusterMove | None:
        """A cluster's original came back changed and matches none of its copies any more.

        Rule: the member seen first becomes the cluster's original; every member is relabelled
        to it (and one that named the old original as its match now names the new one), so no
        copy points at content that no longer exists. The changed page is then checked like a
        new one. Still matching one of its copies, or unchanged, it stays their original.
        """
        previous = self._previous  # fetched by verdict_for, along with the candidates
        if previous is not None and previous[0] == fp.doc_id:
            old = previous[1]
        else:
            old = self.index.get([fp.doc_id]).get(fp.doc_id)
        if old is None or cluster_of(old) != fp.doc_id:
            return None
        old_hash = old.meta.get("content_hash")
        if old_hash == fp.content_hash or (
            old_hash is None and old.signatures == self.fingerprinter.encode(fp)
        ):
            return None
        members = cluster_members(self.index, fp.doc_id, old)
        if not members or self._matches_any(fp, members.values()):
            return None
        return move_cluster(self.index, fp.doc_id, members)

    def _matches_any(self, fp: Fingerprint, entries: Iterable[IndexEntry]) -> bool:
        """True when `fp` is a near-duplicate of one of `entries` under some method."""
        for entry in entries:
            sigs = self._decoded(entry)
            for name, method in self.fingerprinter.methods.items():
                if name in sigs and name in fp.signatures and method.is_duplicate(
                    fp.signatures[name], sigs[name]
                ):
                    return True
        return False

    def process_fingerprint(self, fp: Fingerprint, url: str | None = None) -> Verdict:
        """`process` for a fingerprint computed elsewhere (a child process; sweeps reuse them)."""
        return self.settle([(fp, self.decide(fp, url), url)])[0]

    def decide(self, fp: Fingerprint, url: str | None) -> Verdict:
        """The verdict against what this process can see, recorded by policy; `last_move`
        is the cluster move it caused. `settle` then makes it final (`process_fingerprint`
        does both)."""
        if fp.status != "ok":
            self.last_move = None
            verdict = Verdict(fp.doc_id, "no_text", reason="no words to compare")
        else:
            verdict = self.verdict_for(fp)
            self.last_move = self.recrawl(fp)
            if self.last_move is not None:  # its former copies moved away: check it again
                verdict = self.verdict_for(fp)
            else:
                verdict = self.follow_declaration(fp, verdict, url)
        self.apply(fp, verdict, url)
        return verdict

    def follow_declaration(self, fp: Fingerprint, verdict: Verdict, url: str | None) -> Verdict:
        """The content verdict, amended by the page's declared canonical (verdict/declared.py):
        a duplicate of the stored page it names, or its cluster's new original (the cluster
        moved to it: `last_move`). Doc ids are URLs here, as in a crawl."""
        named = fp.canonical_url
        if not url:
            return verdict
        if named is not None and names_other(url, named):
            target = self.index.get([named]).get(named)
            if target is None or target.doc_id == fp.doc_id or cluster_of(target) == fp.doc_id:
                return replace(verdict, declared_canonical=False)
            sims, match = self._verify(fp, target, dict(verdict.scores))
            if match is None:  # a declaration never makes different texts duplicates
                return replace(verdict, declared_canonical=False)
            to_original, original_hash = (
                (sims, target.meta.get("content_hash")) if cluster_of(target) == target.doc_id
                else (verdict.to_original, verdict.original_hash)
                if match.cluster == verdict.cluster else ({}, None)
            )
            return replace(
                verdict, declared_canonical=False, duplicate_of=match.doc_id,
                similarity=round(match.similarity, 6), method=match.method, cluster=match.cluster,
                reason=f"declares {match.doc_id} canonical; {match.method} similarity "
                       f"{match.similarity:.3f}",
                to_original=to_original, original_hash=original_hash,
            )
        if names_itself(url, named):
            verdict = replace(verdict, declared_canonical=True)
        if not verdict.is_duplicate or verdict.cluster is None:
            return verdict
        heads = self._heads[1] if self._heads[0] == fp.doc_id else {}
        original = heads.get(verdict.cluster) or self.index.get([verdict.cluster]).get(
            verdict.cluster)
        if original is None or not takes_over(url, named, original):
            return verdict
        members = cluster_members(self.index, verdict.cluster, original)
        members[original.doc_id] = original
        self.last_move = promote(self.index, verdict, members)
        return Verdict(
            fp.doc_id, "ok", cluster=fp.doc_id, scores=verdict.scores,
            candidates=verdict.candidates, verified=verdict.verified,
            reason=f"declared canonical: takes over the cluster of {verdict.cluster} "
                   f"({len(self.last_move.members)} pages)",
            declared_canonical=True,
        )

    @property
    def batchable(self) -> bool:
        """Whether pages can be fingerprinted ahead and looked up together (`prefetched`) with
        the one-by-one verdicts: not while a signature depends on the index (rarewords)."""
        return not self._replays and batchable(self.fingerprinter)

    def process_batch(
        self, docs: Sequence[Document], fingerprints: Sequence[Fingerprint] | None = None
    ) -> list[Verdict]:
        """`process` of each document in order, with every lookup of the batch made first in one
        round trip (msearch on Elasticsearch). The verdicts are the one-by-one verdicts (see
        `prefetched`). `fingerprints`: the documents' fingerprints, computed elsewhere (child
        processes; self-contained methods only). Not thread-safe."""
        if fingerprints is not None and not self.batchable:
            raise ValueError("fingerprints computed elsewhere need self-contained methods")
        if fingerprints is None and (len(docs) < 2 or not self.batchable):
            return [self.process(doc) for doc in docs]
        fps = (
            list(fingerprints) if fingerprints is not None
            else [self.fingerprinter.fingerprint(doc, self.index) for doc in docs]
        )
        with self.prefetched(fps):
            decided = [(fp, self.decide(fp, doc.url), doc.url)
                       for doc, fp in zip(docs, fps, strict=True)]
        return self.settle(decided)

    @contextmanager
    def prefetched(self, fps: Sequence[Fingerprint]) -> Iterator[None]:
        """Inside, the candidates of every page of `fps` come from one lookup made now (one
        round trip: msearch on Elasticsearch) and the stored entries of all of them from one
        more; `decide` each page in order, then `settle` them. The verdicts are the one-by-one
        verdicts: a page recorded earlier in the batch is a candidate for the later ones
        (batch.py). For `batchable` methods only; not thread-safe."""
        asked = [fp.keys for fp in fps if fp.status == "ok"]
        found = candidates_many(self.index, asked)
        wanted = set().union(*found, (fp.doc_id for fp in fps if fp.status == "ok"))
        stored: dict[str, IndexEntry | None] = dict.fromkeys(wanted)
        stored.update(self.index.get(wanted))  # one round trip for the batch's verifications
        index = self.index
        self.index = PrefetchedIndex(
            index, dict(zip(map(freeze, asked), found, strict=True)), stored)
        try:
            yield
        finally:
            self.index = index

    def settle(self, decided: Sequence[Decided]) -> list[Verdict]:
        """Publish the pages just decided to a shared index's write order, then compare them
        with what other processes published before them, which the lookups may have missed
        (written at the same moment, not yet searchable): such a match wins as in
        `verdict_for`, the most similar one, and the page is recorded again. A page of this
        batch that was its own cluster's original takes the batch's later pages of that
        cluster along. The earlier writer never needs to change: it came first."""
        verdicts = [verdict for _, verdict, _ in decided]
        index = self.index
        if self._publishes[0] is not index:
            self._publishes = (index, isinstance(index, SupportsPublish))
        if not decided or not self._publishes[1]:
            return verdicts
        earlier = cast(SupportsPublish, index).publish()  # asked above, once for this index
        if not earlier:
            return verdicts
        others = MemoryIndex()
        for entry in earlier:
            others.add(entry)  # a later record of the same page replaces an earlier one
        moved: dict[str, str] = {}  # a cluster of this batch -> the earlier cluster it joined
        settled: list[Verdict] = []
        for fp, verdict, url in decided:
            if verdict.status != "ok" or fp.status != "ok":
                settled.append(verdict)
                continue
            new = verdict
            if verdict.cluster in moved:
                new = replace(new, cluster=moved[verdict.cluster])
            scores = dict(new.scores)
            best: tuple[_Match, dict[str, float], IndexEntry] | None = None
            for entry in others.get(others.candidates(fp.keys) - {fp.doc_id}).values():
                sims, match = self._verify(fp, entry, scores)
                if match is not None and (best is None or match.similarity > best[0].similarity):
                    best = (match, sims, entry)
            if best is not None and (not new.is_duplicate or
                                     best[0].similarity > (new.similarity or 0.0)):
                match, sims, entry = best
                if not verdict.is_duplicate:
                    moved[fp.doc_id] = match.cluster
                original = entry.doc_id == match.cluster
                new = replace(
                    new, duplicate_of=match.doc_id, similarity=round(match.similarity, 6),
                    method=match.method, cluster=match.cluster, scores=scores,
                    reason=f"{match.method} similarity {match.similarity:.3f} to "
                           f"{match.doc_id} (written at the same time by another process)",
                    to_original=sims if original else {},
                    original_hash=entry.meta.get("content_hash") if original else None,
                )
            if new is not verdict and (not new.is_duplicate or
                                       self.config.verdict.index_duplicates):
                self.record(fp, new, url)
            settled.append(new)
        return settled

    def apply(self, fp: Fingerprint, verdict: Verdict, url: str | None) -> None:
        """The record policy, in one place: count words, store by policy, replay warm-ups."""
        if verdict.status == "ok":
            self.count_words(fp)
        keep = not verdict.is_duplicate or self.config.verdict.index_duplicates
        if verdict.status == "ok" and keep:
            self.record(fp, verdict, url)
        for replay in self._replays:
            replay.replay(self.index)
