"""Clusters that do not depend on arrival order: joining, and the rule that picks a canonical.

A page that matches members of several clusters joins them all into one: the clusters are the
connected components of the match graph, whichever page arrived first. Each page is stored
under its own name (its doc id), and the roots of the joined clusters are linked below the
smallest name (index/clusters.py keeps the forest); a cluster is shown by its canonical's id.

Each cluster's canonical is the member that ranks first by `canonical_rank`, compared as
strings (smaller first):
1. a page another member declares canonical (rel=canonical, og:url) and matches;
2. its own word: naming itself, then saying nothing, then naming another URL (a copy by its
   own word);
3. the URL: one that `demoted_by` finds to be a print, AMP, mobile, tracking-parameter or
   session URL ranks below the plain page; https above http;
4. the first seen, then the doc id.
The URL's length is no criterion: a shorter path says nothing about which copy is the original.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from neardup_pipeline.index.base import FingerprintIndex, IndexEntry, cluster_of
from neardup_pipeline.index.clusters import ClusterStore, Offer
from neardup_pipeline.verdict.declared import CANONICAL_META, names_itself, names_other

DEMOTIONS: tuple[str, ...] = ("print", "amp", "mobile", "tracking", "session")

_PATH_WORDS = {
    "print": re.compile(r"(?:^|[/._-])(?:print|printable|printer|druck|imprimir|imprimer)"
                        r"(?:$|[/._-])", re.IGNORECASE),
    "amp": re.compile(r"(?:^|[/._-])amp(?:$|[/._-])", re.IGNORECASE),
    "mobile": re.compile(r"(?:^|/)(?:m|mobile)(?:$|/)", re.IGNORECASE),
}
_QUERY_FLAGS = {
    "print": {"print", "printable", "printer", "view=print", "output=print", "format=print"},
    "amp": {"amp", "outputtype=amp", "format=amp"},
    "mobile": {"mobile", "m", "view=mobile"},
}
_TRACKING = re.compile(r"^(?:utm_\w+|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|_ga|yclid|igshid|"
                       r"ref|ref_src|spm|cmpid|wt\.mc_id)$", re.IGNORECASE)
_SESSION = re.compile(r"^(?:sid|sessionid|session_id|phpsessid|jsessionid|aspsessionid\w*|"
                      r"cfid|cftoken|s)$", re.IGNORECASE)
NAME_SEPARATOR = "\x1f"  # never in a URL: a changed page's name is its id, this, its hash
_SEEN_DIGITS = 18  # seconds since the epoch with microseconds, zero-padded: sorts as a number


def demoted_by(url: str | None, kinds: Iterable[str] = DEMOTIONS) -> tuple[str, ...]:
    """The kinds of `kinds` that make `url` a variant a search engine ranks below the plain page."""
    if not url:
        return ()
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:
        return ()
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = [name.lower() for name, _ in query]
    flags = {name.lower() for name, value in query if value.lower() in ("", "1", "true", "yes")}
    flags |= {f"{name.lower()}={value.lower()}" for name, value in query}
    found = {
        "print": bool(_PATH_WORDS["print"].search(parts.path) or flags & _QUERY_FLAGS["print"]),
        "amp": bool(_PATH_WORDS["amp"].search(parts.path) or flags & _QUERY_FLAGS["amp"]),
        "mobile": bool(host.startswith(("m.", "mobile.")) or _PATH_WORDS["mobile"].search(
            parts.path) or flags & _QUERY_FLAGS["mobile"]),
        "tracking": any(_TRACKING.match(name) for name in names),
        "session": ";jsessionid=" in parts.path.lower() or any(
            _SESSION.match(name) for name in names),
    }
    return tuple(kind for kind in kinds if found.get(kind))


@dataclass(frozen=True)
class PageFacts:
    """What the canonical rule reads about one page; all of it the page's own, bar `named`."""

    doc_id: str
    url: str | None = None
    declares: bool | None = None  # True: names itself; False: names another URL; None: silent
    seen: float = 0.0  # when it was first recorded (epoch seconds)
    named: bool = False  # a member of its cluster declares it canonical


def page_facts(doc_id: str, url: str | None, declared: str | None, seen: float,
               named: bool = False) -> PageFacts:
    """The facts of a page at `url` that declares `declared` canonical (or nothing)."""
    declares = (None if not declared or not url
                else True if names_itself(url, declared)
                else False if names_other(url, declared) else None)
    return PageFacts(doc_id, url, declares, seen, named)


def canonical_rank(page: PageFacts, demote: Iterable[str] = DEMOTIONS) -> str:
    """The rule of this module's docstring as a string key: smaller ranks first."""
    own_word = 0 if page.declares else 1 if page.declares is None else 2
    demoted = 1 if demoted_by(page.url, demote) else 0
    scheme = 0 if page.url and page.url.strip().lower().startswith("https:") else 1
    seen = f"{max(page.seen, 0.0):0{_SEEN_DIGITS}.6f}"
    return f"{0 if page.named else 1}{own_word}{demoted}{scheme}{seen}"


def offer_of(page: PageFacts, demote: Iterable[str] = DEMOTIONS) -> Offer:
    """What a page offers as its cluster's canonical: its rank and its id."""
    return canonical_rank(page, demote), page.doc_id


def entry_facts(entry: IndexEntry, named: bool = False) -> PageFacts:
    """The canonical rule's facts of a stored page."""
    return page_facts(entry.doc_id, entry.meta.get("url"), entry.meta.get(CANONICAL_META),
                      float(entry.meta.get("added") or 0.0), named)


def doc_id_of(name: str) -> str:
    """The doc id a cluster name was first recorded under."""
    return name.partition(NAME_SEPARATOR)[0]


@dataclass(frozen=True)
class Joined:
    """A page's cluster after it joined every cluster it matched."""

    cluster: str  # the root's name: the smallest doc id of the component
    canonical: str  # the doc id the rule ranks first
    superseded: tuple[str, ...]  # canonicals of the joined clusters that are canonical no more


RanksOf = Callable[[Iterable[str]], dict[str, Offer]]  # offers of clusters of one page


def join(store: ClusterStore, page: str, offers: Sequence[Offer], names: Iterable[str],
         ranks_of: RanksOf, fresh: bool = False) -> Joined:
    """Join `page` (its own name, or that of its cluster on a second visit) with the clusters
    `names` belong to, make `offers` (the page's own first) to the cluster they form and say
    which canonicals it displaced. `fresh`: the page was never recorded, so its name has no
    link and no canonical in the store (nothing to read about it).

    A page alone in its cluster writes nothing: its rank follows from its stored entry
    (`ranks_of`, asked for every root the store holds no canonical of). Safe with several
    writers on one store: a link is never replaced, so a root another writer linked first is
    resolved again and linked where it now leads."""
    names = set(names) - {page}
    if fresh and not names and len(offers) == 1:
        return Joined(page, offers[0][1], ())
    roots = set(store.roots(names if fresh else {page, *names}).values()) | (
        {page} if fresh else set())
    held = store.canonicals(roots - {page} if fresh else roots)
    if roots == {page} and not held and len(offers) == 1:
        return Joined(page, offers[0][1], ())
    stored = dict(held)  # what the store holds already, as against the ranks read below
    unheld = {page} if fresh else set()  # names known to hold no canonical

    def others(names: Iterable[str]) -> dict[str, Offer]:  # the page's own rank: offers[0]
        return ranks_of(set(names) - {page})

    held.update(others(roots - held.keys()))
    first = target = min(roots)
    for root in sorted(roots - {target}):
        target = _attach(store, root, target, others, unheld, {page} if fresh else set())
    kept = stored.get(first) if target == first else None  # the target holds it already
    target = _offer(store, target, [o for o in [*held.values(), *offers] if o != kept])
    canonical = store.canonicals([target]).get(target, offers[0])
    superseded = sorted({doc for _, doc in held.values()} - {canonical[1]})
    return Joined(target, canonical[1], tuple(superseded))


def _attach(store: ClusterStore, child: str, parent: str, ranks_of: RanksOf,
            unheld: set[str], unlinked: set[str]) -> str:
    """Link `child`'s cluster and `parent`'s into one, the larger root below the smaller, its
    canonical carried over; returns the root they share. `unlinked`: names taken for roots
    without a read (a page this process never recorded), until a link of one fails: another
    writer checking the same page linked it first."""
    while True:
        found = store.roots([name for name in (child, parent) if name not in unlinked])
        child, parent = found.get(child, child), found.get(parent, parent)
        if child == parent:
            return parent
        low, high = min(child, parent), max(child, parent)
        if store.link(high, low):
            carried = None if high in unheld else (
                store.canonicals([high]).get(high) or ranks_of([high]).get(high))
            return low if carried is None else _offer(store, low, [carried])
        unlinked = unlinked - {high}


def _offer(store: ClusterStore, root: str, offers: Sequence[Offer]) -> str:
    """Offer the best of them to `root` (a store keeps the smallest offer, so one write does
    what offering each in turn would), then to wherever it leads if another writer linked it
    meanwhile."""
    if not offers:
        return store.roots([root])[root]
    best = min(offers)
    while True:
        store.offer(root, best)
        now = store.roots([root])[root]
        if now == root:
            return root
        root = now


def cluster_members(
    index: FingerprintIndex, store: ClusterStore, root: str, start: IndexEntry,
    keyed: Callable[[IndexEntry], IndexEntry], limit: int = 100_000,
) -> dict[str, IndexEntry]:
    """The stored members of cluster `root`: each joined by matching, so sharing a key with, a
    member found before it, and a walk over shared keys from any member reaches them all.
    `keyed` gives a stored entry its lookup keys (the deduplicator's `keyed`)."""
    found: dict[str, IndexEntry] = {start.doc_id: start}
    seen = {start.doc_id}
    frontier = [start]
    while frontier and len(seen) < limit:
        ids = index.candidates(keyed(frontier.pop()).keys) - seen
        seen |= ids
        entries = index.get(ids)
        roots = store.roots({cluster_of(e) for e in entries.values()})
        for doc_id, entry in entries.items():
            if roots[cluster_of(entry)] == root:
                found[doc_id] = entry
                frontier.append(entry)
    return found
