"""The site a page belongs to: its URL's registrable domain (the public suffix plus one label).

Two pages of one site share its chrome, so only their whole texts tell copies from distinct
pages; a page on another site shares no chrome with them, and an article found inside it is a
copy (methods/bag.py compares such pairs by containment). `news.example.co.uk` and
`www.example.co.uk` are one site: the registrable domain, not the host, is what one publisher
controls. The Public Suffix List is the one tldextract ships (Scrapy's own dependency, for
cookie domains); it is never fetched.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import tldextract


@cache
def _suffixes() -> tldextract.TLDExtract:
    """The public suffix list, loaded on the first URL: importing tldextract costs a command's
    start-up more than the rest of neardup's reading does. The list's private section too:
    each blog under blogspot.com or github.io is its own site."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None,
                                 include_psl_private_domains=True)


def site_of(url: str | None) -> str:
    """The registrable domain of an http(s) URL, lower-cased ("bbc.co.uk"); the host itself for
    an IP address or a name under no public suffix ("localhost"); "" when there is no such URL
    (a document given as text, an id that is not a URL)."""
    if not url:
        return ""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not host:
        return ""
    return _site_of_host(host)


@lru_cache(maxsize=4096)
def _site_of_host(host: str) -> str:
    """A crawl meets few hosts many times: each is looked up once."""
    return _suffixes()(host).top_domain_under_public_suffix or host
