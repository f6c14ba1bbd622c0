"""Declared canonicals: a page's own `<link rel="canonical">` (then `og:url`) decides which copy
of a near-duplicate cluster is its original, whatever order the copies were seen in.

Rules (the deduplicator applies them after the content verdict; a declaration never makes two
different texts duplicates, so a template naming the home page canonical everywhere drops
nothing):
- a page that names another, stored page canonical and is a near-duplicate of it is a duplicate
  of that page;
- a page that is a near-duplicate of a cluster becomes the cluster's original when the original
  names it canonical, or when, on the original's own site, it names itself and the original does
  not (a CMS that names every URL canonical, copies too, leaves the first copy the original;
  another site naming its own copy canonical says nothing about the first site's page);
- taking over, it moves the cluster: every member follows it, the old original is its copy.
"""

from __future__ import annotations

from collections.abc import Mapping

from neardup_pipeline.index.base import FingerprintIndex, IndexEntry
from neardup_pipeline.text.canonical import same_site, same_url
from neardup_pipeline.verdict.recrawl import ClusterMove
from neardup_pipeline.verdict.verdict import Verdict

CANONICAL_META = "canonical_url"  # an entry's declared canonical URL, in its metadata


def names_itself(url: str | None, canonical_url: str | None) -> bool:
    """True when a page declares its own URL canonical."""
    return same_url(url, canonical_url)


def names_other(url: str | None, canonical_url: str | None) -> bool:
    """True when a page declares another URL canonical: by its own word, a copy."""
    return bool(canonical_url) and not same_url(url, canonical_url)


def takes_over(page_url: str | None, page_canonical: str | None, original: IndexEntry) -> bool:
    """Whether a page near-duplicate of `original`'s cluster replaces it as the original."""
    original_url = original.meta.get("url")
    original_canonical = original.meta.get(CANONICAL_META)
    if not page_url or names_other(page_url, page_canonical):
        return False
    if same_url(original_canonical, page_url):  # the original names this page
        return True
    return (
        same_site(page_url, original_url)
        and names_itself(page_url, page_canonical)
        and not names_itself(original_url, original_canonical)
    )


def promote(
    index: FingerprintIndex, verdict: Verdict, members: Mapping[str, IndexEntry]
) -> ClusterMove:
    """Relabel every member of `verdict.cluster` to the page just checked (`verdict.doc_id`),
    its new original; the old original becomes its copy, matched as the verdict says when the
    page matched it directly. The page itself is recorded afterwards, as an original."""
    leaving, page = str(verdict.cluster), verdict.doc_id
    for entry in members.values():
        if entry.doc_id == page:
            continue  # a re-crawl of the page: recorded again as the original
        meta = {**entry.meta, "cluster": page}
        meta.pop("to_original", None)  # measured against the original that stepped down
        if entry.doc_id == leaving:
            direct = verdict.duplicate_of == leaving
            meta.update(
                duplicate_of=page,
                method=verdict.method,
                similarity=verdict.similarity if direct else None,
            )
        index.add(IndexEntry(entry.doc_id, entry.signatures, entry.keys, meta))
    moved = tuple(sorted(m for m in members if m != page))
    return ClusterMove(leaving, page, moved, declared=True)
