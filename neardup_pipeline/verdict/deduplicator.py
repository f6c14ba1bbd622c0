"""Candidates -> verification -> Verdict: the one place that decides what is a near-duplicate.

A page is verified against every cluster its lookup keys reach, and against the pages its
declaration links it to (the page it declares canonical, the pages declaring it canonical);
it then joins every cluster it matches (verdict/clusters.py), so a cluster is the same set of
pages whatever order they came in. Its verdict names the cluster's canonical by the rule of
verdict/clusters.py, and the canonicals it displaced (`superseded`)."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import partial
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
    cluster_store,
    memberships,
    to_original_meta,
)
from neardup_pipeline.index.clusters import ClusterStore, Offer
from neardup_pipeline.index.memory import MemoryIndex
from neardup_pipeline.methods.contract import lookup_keys
from neardup_pipeline.text.canonical import url_key
from neardup_pipeline.verdict.batch import (
    PrefetchedClusters,
    PrefetchedIndex,
    batchable,
    freeze,
)
from neardup_pipeline.verdict.clusters import doc_id_of, entry_facts, join, offer_of, page_facts
from neardup_pipeline.verdict.decision import (
    Found,
    Match,
    closest,
    compare,
    duplicate_verdict,
    joined_verdict,
)
from neardup_pipeline.verdict.declared import CANONICAL_META, names_other
from neardup_pipeline.verdict.pruning import beyond_reach, cluster_queues
from neardup_pipeline.verdict.recrawl import changed, leave
from neardup_pipeline.verdict.verdict import Verdict, not_compared
from neardup_pipeline.verdict.warmup_replay import WarmupReplay

__all__ = ["Decided", "Deduplicator", "Verdict"]  # its results

Decided = tuple[Fingerprint, Verdict, str | None]  # a page decided, not yet settled (`settle`)

_DECODE_CACHE_SIZE = 2_000  # bounds memory: a 4,096-word bag decodes to ~50 KB


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
        self.clusters: ClusterStore = cluster_store(index)
        # doc id -> (stored signatures, decoded): see _decoded
        self._decode_cache: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._replays = [  # stream warm-up (rarewords): young profiles are redone once, at its end
            WarmupReplay(name, caps.warms_up)
            for name, caps in self.fingerprinter.capabilities.items()
            if caps.warms_up is not None
        ]
        # Whether the index publishes a write order, asked once per index object: a runtime
        # Protocol's isinstance reads every attribute it names, once a page otherwise.
        self._publishes: tuple[object, bool] = (None, False)

    def check(self, doc: Document) -> tuple[Verdict, Fingerprint]:
        """Verdict for `doc` against what the index holds (the index is not changed)."""
        fp = self.fingerprinter.fingerprint(doc, self.index)  # the index keeps DF (rarewords)
        if fp.status != "ok":
            return not_compared(doc.doc_id, fp.status), fp
        return self.verdict_for(fp), fp

    def verdict_for(self, fp: Fingerprint) -> Verdict:
        """The content verdict, without joining or recording: the most similar match, if any."""
        found = self._verify_candidates(fp, self._find_previous(fp))
        best = found.best()
        if best is None:
            return Verdict(fp.doc_id, "ok", cluster=fp.doc_id, canonical=fp.doc_id,
                           scores=found.scores, candidates=found.candidates,
                           verified=found.verified)
        held = self.clusters.canonicals([best.cluster]).get(best.cluster)
        canonical = held[1] if held is not None else best.doc_id
        if canonical == fp.doc_id:  # its own copies matched: it is their canonical
            return Verdict(fp.doc_id, "ok", cluster=canonical, canonical=canonical,
                           nearest=best.doc_id, scores=found.scores,
                           candidates=found.candidates, verified=found.verified)
        return duplicate_verdict(fp.doc_id, best, found, canonical)

    def _find_previous(self, fp: Fingerprint) -> IndexEntry | None:
        return self.index.get([fp.doc_id]).get(fp.doc_id)

    def _verify_candidates(self, fp: Fingerprint, previous: IndexEntry | None) -> Found:
        """Verify the candidates sharing a lookup key, one cluster at a time.

        A cluster's members are verified in turn, its root first, up to the first that matches:
        the page then belongs to that cluster, and the other members (in a long crawl, tens of
        copies of one text) need no verification. In a cluster whose root does not match, the
        other members are verified too, so a page that resembles any one member is still found;
        only a member the triangle inequality puts out of reach is skipped (`beyond_reach`).
        A page seen before is verified against its own cluster too: what it matches there
        says whether it still belongs. `scores` are the best similarity per method of the pairs
        verified.
        """
        ids = self.index.candidates(fp.keys)
        ids.discard(fp.doc_id)  # a page is never its own duplicate
        belongs = memberships(self.index, ids)
        roots = self.clusters.roots({m.cluster for m in belongs.values()})
        queues = cluster_queues({i: roots[m.cluster] for i, m in belongs.items()})
        stored = self.index.get(members[0] for members in queues.values())
        found = Found(candidates=len(ids), previous=previous)
        for cluster, members in queues.items():
            entry = stored.get(members[0])
            sims, match = self._verify(fp, entry, found.scores, cluster)
            found.verified += bool(sims)
            if match is not None:
                found.add(match)
            if entry is not None and sims and members[0] == cluster_of(entry) == cluster:
                found.originals[cluster] = (sims, entry.meta.get("content_hash"))
        floors = {name: caps.floor_for(fp.signatures[name])
                  for name, caps in self.fingerprinter.capabilities.items()
                  if name in fp.signatures}
        unmatched = {
            cluster: [m for m in members[1:] if cluster not in found.originals
                      or not beyond_reach(*found.originals[cluster], belongs[m], floors)]
            for cluster, members in queues.items() if cluster not in found.matches
        }
        if any(unmatched.values()):
            stored = self.index.get(m for members in unmatched.values() for m in members)
            for cluster, members in unmatched.items():
                for member in members:
                    sims, match = self._verify(fp, stored.get(member), found.scores, cluster)
                    found.verified += bool(sims)
                    if match is not None:
                        found.add(match)
                        break
        return found

    def _verify(
        self, fp: Fingerprint, entry: IndexEntry | None, scores: dict[str, float], cluster: str
    ) -> tuple[dict[str, float], Match | None]:
        """Each method's similarity of `fp` to `entry` (also kept as the best in `scores`), and
        the most similar method calling it a near-duplicate, if any, as a match in `cluster`."""
        if entry is None or entry.doc_id == fp.doc_id:
            return {}, None  # gone since the lookup, or the page itself
        sims, best = compare(self.fingerprinter.capabilities, fp.signatures,
                             self._decoded(entry))
        for name, sim in sims.items():
            scores[name] = max(scores.get(name, 0.0), sim)
        return sims, None if best is None else Match(entry.doc_id, cluster, *best)

    def keyed(self, entry: IndexEntry) -> IndexEntry:
        """`entry` with its lookup keys made again by its methods from its signatures: an index
        keeps keys to search, not to read back, so an entry read from one may have none."""
        return IndexEntry(entry.doc_id, entry.signatures,
                          lookup_keys(self.fingerprinter.methods, self._decoded(entry)),
                          entry.meta)

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

    def _declared_matches(self, fp: Fingerprint, url: str | None, found: Found) -> None:
        """Verify the pages a declaration links the page to, whatever the lookup keys found:
        the page it declares canonical, and the pages that declared it canonical. A declaration
        never makes different texts duplicates: only a match joins or names."""
        if not url:
            return
        named = fp.canonical_url if names_other(url, fp.canonical_url) else None
        own = url_key(url)
        declarers = self.clusters.declarers([own]).get(own, set()) - {fp.doc_id}
        wanted = [*declarers, *([named] if named else [])]
        if not wanted:
            return
        stored = self.index.get(wanted)
        roots = self.clusters.roots({cluster_of(e) for e in stored.values()})
        for doc_id, entry in stored.items():
            if doc_id == fp.doc_id:
                continue
            _, match = self._verify(fp, entry, found.scores, roots[cluster_of(entry)])
            if match is None:
                continue
            found.verified += 1
            found.add(match)
            if doc_id == named:
                found.named.append(entry)
            if doc_id in declarers and names_other(entry.meta.get("url"),
                                                    entry.meta.get(CANONICAL_META)):
                found.named_by_member = True

    def _record(self, fp: Fingerprint, verdict: Verdict, url: str | None = None,
               name: str | None = None) -> None:
        """Store a checked document so later pages are compared with it, under its name in the
        cluster store (its id, unless it left a cluster under another: `recrawl.leave`)."""
        if fp.status != "ok":
            return
        meta: dict[str, Any] = {
            "cluster": name or fp.doc_id,
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
        if url and fp.canonical_url and names_other(url, fp.canonical_url):
            self.clusters.declare(fp.doc_id, url_key(fp.canonical_url))
        for replay in self._replays:
            replay.remember(entry, fp.signatures[replay.name])

    def _count_words(self, fp: Fingerprint) -> None:
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
        """Check, join and, by policy, record: originals always, duplicates when
        index_duplicates."""
        return self.process_and_fingerprint(doc)[0]

    def process_and_fingerprint(self, doc: Document) -> tuple[Verdict, Fingerprint | None]:
        """`process`, also returning the fingerprint (its text and title, extracted once)."""
        fp = self.fingerprinter.fingerprint(doc, self.index)  # the index keeps DF (rarewords)
        return self.process_fingerprint(fp, doc.url), fp

    def process_fingerprint(self, fp: Fingerprint, url: str | None = None) -> Verdict:
        """`process` for a fingerprint computed elsewhere (a child process; sweeps reuse them)."""
        return self.settle([(fp, self.decide(fp, url), url)])[0]

    def decide(self, fp: Fingerprint, url: str | None) -> Verdict:
        """The verdict against what this process can see, the clusters it matched joined and
        the page recorded by policy. `settle` then makes it final (`process_fingerprint` does
        both). Doc ids are URLs where pages declare canonicals, as in a crawl."""
        name = fp.doc_id
        if fp.status != "ok":
            verdict = not_compared(fp.doc_id, fp.status)
        else:
            found = self._verify_candidates(fp, self._find_previous(fp))
            self._declared_matches(fp, url, found)
            verdict, name = self._join(fp, url, found)
        self._apply(fp, verdict, url, name)
        return verdict

    def _join(self, fp: Fingerprint, url: str | None, found: Found) -> tuple[Verdict, str]:
        """Join the page with every cluster it matched; its verdict by the cluster's canonical."""
        previous = found.previous
        name, successor = fp.doc_id, None
        if previous is not None:
            if changed(previous, fp, self.fingerprinter) and not self._rejoins(previous, found):
                name, successor = leave(self.clusters, self.index, previous, fp, self._demote,
                                        self.keyed)
            else:
                name = cluster_of(previous)
        facts = page_facts(fp.doc_id, url, fp.canonical_url, time.time(), found.named_by_member)
        offers: list[Offer] = [offer_of(facts, self._demote)]
        offers += [offer_of(entry_facts(entry, named=True), self._demote)
                   for entry in found.named]
        joined = join(self.clusters, name, offers, found.matches, self._ranks_of,
                      fresh=previous is None)
        declared = True if facts.named else facts.declares
        verdict = joined_verdict(fp.doc_id, found, joined)
        return replace(verdict, declared_canonical=declared, successor=successor), name

    def _ranks_of(self, names: Iterable[str],
                  published: FingerprintIndex | None = None) -> dict[str, Offer]:
        """The canonical offers of clusters of one page, from the page's stored entry (or the
        one another process `published` and may not have sent yet)."""
        ids = {name: doc_id_of(name) for name in names}
        stored = published.get(set(ids.values())) if published is not None else {}
        stored.update(self.index.get(set(ids.values()) - stored.keys()))
        return {name: offer_of(entry_facts(stored[doc_id]), self._demote)
                for name, doc_id in ids.items() if doc_id in stored}

    def _rejoins(self, previous: IndexEntry, found: Found) -> bool:
        """Whether a changed page still matches a member of the cluster it was in."""
        label = cluster_of(previous)
        return self.clusters.roots([label])[label] in found.matches

    @property
    def _demote(self) -> tuple[str, ...]:
        return self.config.verdict.canonical_demote

    def as_clusters_stand(self, verdicts: Sequence[Verdict], chunk: int = 500) -> list[Verdict]:
        """`verdicts` restated as the clusters stand now: each page's cluster, its canonical
        and, for the other members, their similarity to it, measured between the two stored
        entries (a fresh page against a stored one rounds differently). What a run that writes
        its verdicts at the end reports: the same whatever order the pages came in."""
        checked = [v for v in verdicts if v.status == "ok"]
        canonical_of = self.canonicals_of(v.doc_id for v in checked)
        final: dict[str, Verdict] = {}
        for start in range(0, len(checked), chunk):
            part = checked[start:start + chunk]
            wanted = {v.doc_id: canonical_of[v.doc_id] for v in part}
            need = {i for v in part for i in (v.doc_id, wanted[v.doc_id])
                    if wanted[v.doc_id] != v.doc_id}
            stored = self.index.get(need) if need else {}
            for verdict in part:
                final[verdict.doc_id] = self._restated(verdict, wanted[verdict.doc_id], stored)
        return [final.get(v.doc_id, v) if v.status == "ok" else v for v in verdicts]

    def canonicals_of(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """The canonical of each recorded page's cluster as it stands (what names it)."""
        roots = self.clusters.roots(doc_ids)
        held = self.clusters.canonicals(set(roots.values()))
        return {doc_id: held[root][1] if root in held else doc_id_of(root)
                for doc_id, root in roots.items()}

    def _restated(self, verdict: Verdict, canonical: str,
                  stored: dict[str, IndexEntry]) -> Verdict:
        if canonical == verdict.doc_id:
            return replace(verdict, cluster=canonical, canonical=canonical, duplicate_of=None,
                           similarity=None, method=None)
        moved = replace(verdict, cluster=canonical, canonical=canonical, duplicate_of=canonical)
        page, other = stored.get(verdict.doc_id), stored.get(canonical)
        if page is None or other is None:
            return replace(moved, similarity=None, method=None)
        similarity, method = closest(self.fingerprinter.capabilities, self._decoded(page),
                                     self._decoded(other))
        return replace(moved, similarity=similarity, method=method)

    def _demote_stored(self, fp: Fingerprint, verdict: Verdict) -> None:
        """Write the pages `verdict` displaced as canonical as the copies they now are, so the
        index reads as the clusters stand (`neardup stats`, `report`)."""
        if not verdict.superseded:
            return
        canonical = str(verdict.canonical)
        stored = self.index.get([*verdict.superseded, canonical])
        theirs = (fp.signatures if canonical == fp.doc_id
                  else self._decoded(stored[canonical]) if canonical in stored else None)
        for doc_id in verdict.superseded:
            entry = stored.get(doc_id)
            if entry is None or theirs is None:
                continue
            similarity, method = closest(self.fingerprinter.capabilities,
                                         self._decoded(entry), theirs)
            meta = {**entry.meta, "duplicate_of": canonical, "similarity": similarity,
                    "method": method}
            meta.pop("to_original", None)
            self.index.add(IndexEntry(doc_id, entry.signatures, self.keyed(entry).keys, meta))

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
        view = self.prefetched(fps, [doc.url for doc in docs])
        decided = [(fp, view.decide(fp, doc.url), doc.url)
                   for doc, fp in zip(docs, fps, strict=True)]
        return self.settle(decided)

    def prefetched(self, fps: Sequence[Fingerprint],
                   urls: Sequence[str | None] = ()) -> Deduplicator:
        """A view of this deduplicator whose candidates for every page of `fps` come from one
        lookup made now (one round trip: msearch on Elasticsearch) and the stored entries of
        all of them from one more; `decide` each page in order through it, then `settle` them
        here. The verdicts are the one-by-one verdicts: a page recorded earlier in the batch is
        a candidate for the later ones (batch.py); so are the pages declaring the batch's
        `urls` canonical. The view shares the cluster store and the decode cache and writes
        through to both. For `batchable` methods only."""
        asked = [fp.keys for fp in fps if fp.status == "ok"]
        found = candidates_many(self.index, asked)
        wanted = set().union(*found, (fp.doc_id for fp in fps if fp.status == "ok"))
        stored: dict[str, IndexEntry | None] = dict.fromkeys(wanted)
        stored.update(self.index.get(wanted))  # one round trip for the batch's verifications
        view = copy.copy(self)
        view.index = PrefetchedIndex(
            self.index, dict(zip(map(freeze, asked), found, strict=True)), stored)
        own = [url_key(url) for url in urls if url]
        if own:  # who declares the batch's pages canonical: one round trip too
            view.clusters = PrefetchedClusters(self.clusters, self.clusters.declarers(own), own)
        return view

    def settle(self, decided: Sequence[Decided]) -> list[Verdict]:
        """Publish the pages just decided to a shared index's write order, then compare them
        with what other processes published before them, which the lookups may have missed
        (written at the same moment, not yet searchable): a page matching one of them joins its
        cluster, as in `decide`. The earlier writer never needs to change: the join is in the
        shared cluster store."""
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
            others.add(self.keyed(entry))  # a later record of a page replaces an earlier one
        settled: list[Verdict] = []
        for fp, verdict, url in decided:
            if verdict.status != "ok" or fp.status != "ok":
                settled.append(verdict)
                continue
            found = Found(scores=dict(verdict.scores), candidates=verdict.candidates,
                           verified=verdict.verified)
            entries = others.get(others.candidates(fp.keys) - {fp.doc_id}).values()
            roots = self.clusters.roots({cluster_of(e) for e in entries})
            for entry in entries:
                _, match = self._verify(fp, entry, found.scores, roots[cluster_of(entry)])
                if match is not None:
                    found.add(match)
            if not found.matches:
                settled.append(verdict)
                continue
            if verdict.nearest is not None and verdict.similarity is not None:
                own = self.clusters.roots([fp.doc_id])[fp.doc_id]
                found.add(Match(verdict.nearest, own, str(verdict.method), verdict.similarity))
            # it comes after them in the write order: seen after them, whatever the clocks say
            seen = max([time.time(), *(float(e.meta.get("added") or 0.0) + 1e-6
                                       for e in entries)])
            offer = offer_of(page_facts(fp.doc_id, url, fp.canonical_url, seen), self._demote)
            joined = join(self.clusters, fp.doc_id, [offer], found.matches,
                          partial(self._ranks_of, published=others))
            new = joined_verdict(fp.doc_id, found, joined)
            new = replace(new, reason=f"{new.reason} (written at the same time by another "
                                      "process)".lstrip())
            if not new.is_duplicate or self.config.verdict.index_duplicates:
                self._record(fp, new, url)
            settled.append(new)
        return settled

    def _apply(self, fp: Fingerprint, verdict: Verdict, url: str | None,
              name: str | None = None) -> None:
        """The record policy, in one place: count words, store by policy, replay warm-ups."""
        if verdict.status == "ok":
            self._count_words(fp)
        keep = not verdict.is_duplicate or self.config.verdict.index_duplicates
        if verdict.status == "ok" and keep:
            self._record(fp, verdict, url, name)
        if verdict.status == "ok":
            self._demote_stored(fp, verdict)
        for replay in self._replays:
            replay.replay(self.index)

