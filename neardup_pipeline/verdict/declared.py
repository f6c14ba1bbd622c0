"""Declared canonicals: a page's own `<link rel="canonical">` (then `og:url`).

A page that declares another URL canonical is verified against the stored page of that URL, and
a page is verified against the stored pages that declared it canonical, whichever came first
(deduplicator.py). A match joins them, and the declared page ranks first as its cluster's
canonical (verdict/clusters.py); a declaration never makes two different texts duplicates, so a
template naming the home page canonical everywhere drops nothing.
"""

from __future__ import annotations

from neardup_pipeline.text.canonical import same_url

CANONICAL_META = "canonical_url"  # an entry's declared canonical URL, in its metadata


def names_itself(url: str | None, canonical_url: str | None) -> bool:
    """True when a page declares its own URL canonical."""
    return same_url(url, canonical_url)


def names_other(url: str | None, canonical_url: str | None) -> bool:
    """True when a page declares another URL canonical: by its own word, a copy."""
    return bool(canonical_url) and not same_url(url, canonical_url)
