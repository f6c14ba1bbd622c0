"""Which copy of a near-duplicate cluster a search engine should show: the canonical rule.

Two policies (`NEARDUP_CANONICAL`):
- `first`: the first copy seen stays canonical (the cluster's original; the default).
- `best`: the best copy by one fixed rule, compared field by field until one differs:
  1. a copy declared canonical (it names itself with rel=canonical or og:url, or the copy it
     replaced named it: verdict/declared.py), then a copy that says nothing, then one that
     names another URL: the site's own word beats any guess;
  2. the earlier date (a page without a date loses to one with): the first publication;
  3. the longer text: a copy that lost nothing (no cut teaser, no shortened print view);
  4. https over http: the same page, served safely.
  The URL's length is no criterion: a shorter path says nothing about which copy is the
  original (`/archive/x` is as likely a copy as `/articles/x`). A full tie keeps the copy seen
  first, so the canonical never flaps between equal copies.
Pure: no I/O. `page_date` reads a date from the page's own markup and URL only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

CanonicalPolicy = Literal["first", "best"]
POLICIES: tuple[str, ...] = ("first", "best")
DATE_HEAD_BYTES = 256 * 1024  # dates live in <head> and the first markup: never parse more


@dataclass(frozen=True)
class Candidate:
    """The facts the rule compares about one copy."""

    doc_id: str
    url: str = ""
    text_length: int = 0  # characters of the text the fingerprint was made from
    date: str | None = None  # ISO date (YYYY-MM-DD) of the page, when it states one
    seen: float = 0.0  # when the copy was first seen (epoch seconds): the last tie-break
    declared: bool | None = None  # the page's own word: Verdict.declared_canonical


def rule_key(c: Candidate) -> tuple[int, str, int, int]:
    """The `best` rule as a sort key: smaller is better."""
    scheme = urlsplit(c.url).scheme.lower() if c.url else ""
    # "~" sorts after every digit: a page without a date loses the date comparison.
    declared = 0 if c.declared else 1 if c.declared is None else 2
    return (declared, c.date or "~", -c.text_length, 0 if scheme == "https" else 1)


def prefer(challenger: Candidate, incumbent: Candidate, policy: CanonicalPolicy) -> bool:
    """True when `challenger` should replace `incumbent` as the cluster's canonical copy."""
    if challenger.doc_id == incumbent.doc_id or policy == "first":
        return False
    return rule_key(challenger) < rule_key(incumbent)  # a tie keeps the incumbent


def choose(members: Iterable[Candidate], policy: CanonicalPolicy) -> Candidate:
    """The canonical copy among `members` (at least one): first seen, or best by the rule."""
    ordered = sorted(members, key=lambda c: (c.seen, c.doc_id))
    if not ordered:
        raise ValueError("a cluster has at least one member")
    best = ordered[0]
    for member in ordered[1:]:
        if prefer(member, best, policy):
            best = member
    return best


def page_date(html: str | bytes | None, url: str | None = None) -> str | None:
    """The page's publication date (htmldate, fast mode: meta tags, <time>, the URL), or None.

    Bytes only go in: htmldate downloads a *string* that looks like a URL, and page text is
    hostile input. The head of the page is enough and bounds the cost.
    """
    if html is None:
        return None
    from htmldate import find_date

    head = (html.encode("utf-8", "replace") if isinstance(html, str) else html)[:DATE_HEAD_BYTES]
    try:
        found = find_date(head, extensive_search=False, original_date=True, url=url)
    except Exception:  # a date is a tie-break, never a reason to fail a page
        return None
    return str(found) if found else None
