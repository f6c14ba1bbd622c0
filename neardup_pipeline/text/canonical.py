"""The URL a page declares canonical: `<link rel="canonical" href>`, else `<meta property="og:url"
content>`, resolved against the page's URL (and its `<base href>`).

A page's own declaration is the web's standard signal of which copy is the original (RFC 6596),
so the verdict stage lets it decide between near-duplicates. It lives in <head>: a regex over the
first bytes is enough, and costs nothing next to the text walk. Pure: no I/O.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urljoin, urlsplit, urlunsplit

HEAD_BYTES = 64 * 1024  # declarations live in <head>: never read more of a page

_HIDDEN_START = re.compile(r"<!--|<(script|style|noscript|template)\b", re.IGNORECASE)
_CLOSING = {
    tag: re.compile(f"</{tag}", re.IGNORECASE)
    for tag in ("script", "style", "noscript", "template")
} | {"--": re.compile("-->")}
_BODY = re.compile(r"</head\s*>|<body[\s>]", re.IGNORECASE)
# Where the head's markup ends ("</..." or "<body..."), or a comment or script first hides
# some of it, whichever comes first; in bytes, ASCII spellings only (each match is one in the
# decoded text). No group: one makes the regex engine's scan 15 times slower.
_END_OR_HIDDEN = re.compile(
    r"</head\s*>|<body[\s>]|<!--|<(?:script|style|noscript|template)\b", re.IGNORECASE)
_END_OR_HIDDEN_BYTES = re.compile(_END_OR_HIDDEN.pattern.encode(), re.IGNORECASE)
_TAG = re.compile(r"<(link|meta|base)\b([^>]*)>", re.IGNORECASE)
_ATTR = re.compile(r"""([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_MENTIONS = re.compile(r"canonical|og:url", re.IGNORECASE)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_DOTTED_I = ("\u0130", "\u0131")  # dotted capital I, dotless small i: the regex folds both to "i"
# The case-blind regex's other non-ASCII folds onto ASCII letters: long s, Kelvin sign.
_REGEX_FOLDS = str.maketrans({**dict.fromkeys(_DOTTED_I, "i"), "\u017f": "s", "\u212a": "k"})
_DOTTED_I_UTF8 = tuple(c.encode() for c in _DOTTED_I)  # b"\xc4\xb0", b"\xc4\xb1"


def declared_canonical(page: str | bytes | None, url: str | None = None) -> str | None:
    """The absolute http(s) URL `page` declares canonical (fragment dropped), or None.

    rel=canonical wins over og:url (a social-card URL is set for sharing, not for search); the
    first of each counts. A relative URL needs `url` to resolve; without it only an absolute one
    is returned.
    """
    if not page:
        return None
    head = _before_body(page[:HEAD_BYTES])
    if not _mentions_declaration(head):
        return None  # most pages declare nothing: one scan, no parsing
    text = _head_markup(head.decode("utf-8", "replace") if isinstance(head, bytes) else head)
    base, canonical, og_url = url or "", None, None
    for tag in _TAG.finditer(text):
        name, raw = tag.group(1).lower(), tag.group(2)
        if name != "base" and not _MENTIONS.search(raw):
            continue  # most <meta> and <link> tags: their attributes need not be read
        attrs = _attributes(raw)
        if name == "base" and attrs.get("href") and base == (url or ""):
            base = urljoin(base, attrs["href"])
        elif (
            name == "link"
            and canonical is None
            and attrs.get("href")
            and "canonical" in attrs.get("rel", "").lower().split()
        ):
            canonical = attrs["href"]
        elif (
            name == "meta"
            and og_url is None
            and attrs.get("content")
            and "og:url" in (attrs.get("property", "").lower(), attrs.get("name", "").lower())
        ):
            og_url = attrs["content"]
    for found in (canonical, og_url):
        resolved = _absolute(found, base) if found else None
        if resolved is not None:
            return resolved
    return None


def _before_body(head: str | bytes) -> str | bytes:
    """The markup before the first <body> (or </head>) when no comment or script comes before
    it, as on most pages: all of `_head_markup`'s text then lies in it, so the declarations are
    looked for in a page's head instead of its first 64 KB. Otherwise `head` itself. (The bytes
    pattern matches ASCII spellings only, a subset of what the two find in the decoded text:
    an earlier end lies inside this part too, and the part is read for an earlier script.)"""
    if isinstance(head, bytes):
        first = _END_OR_HIDDEN_BYTES.search(head)  # a page with scripts in its head: stops there
        if first is None or head[first.start() + 1] not in b"/bB":
            return head
        markup = head[: first.start()]
        return head if _HIDDEN_START.search(markup.decode("utf-8", "replace")) else markup
    found = _END_OR_HIDDEN.search(head)
    return head if found is None or head[found.start() + 1] not in "/bB" else \
        head[: found.start()]


def _mentions_declaration(head: str | bytes) -> bool:
    """Whether `_MENTIONS` ("canonical" or "og:url", any letter case) occurs in `head`, by
    lowering and two substring scans: C loops, many times faster than the case-blind regex over
    64 KB. The regex also folds U+0130 and U+0131 (dotted capital I, dotless small i) to "i", its
    only non-ASCII folds onto these letters: a head holding either is left to the regex, so the
    answer is always the same."""
    if isinstance(head, bytes):
        # Both letters' UTF-8 starts with 0xC4: one memchr rules most heads out, where each
        # two-byte search would cost a scan of its own.
        if b"\xc4" in head and (_DOTTED_I_UTF8[0] in head or _DOTTED_I_UTF8[1] in head):
            return _MENTIONS.search(head.decode("utf-8", "replace")) is not None
        low = head.lower()
        return b"canonical" in low or b"og:url" in low
    if _DOTTED_I[0] in head or _DOTTED_I[1] in head:
        return _MENTIONS.search(head) is not None
    lowered = head.lower()
    return "canonical" in lowered or "og:url" in lowered


def url_key(url: str) -> str:
    """A URL in the form two spellings of one address share: scheme and host lowercased, the
    default port, the fragment and an empty path's missing "/" made explicit, never guessed
    further (a query or a trailing slash can name another page)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    if parts.username or parts.password:
        netloc = f"{parts.netloc.rsplit('@', 1)[0]}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def same_url(a: str | None, b: str | None) -> bool:
    """True when both are given and name the same address (`url_key`)."""
    return bool(a) and bool(b) and url_key(str(a)) == url_key(str(b))


def same_site(a: str | None, b: str | None) -> bool:
    """True when both URLs are on one host (a leading "www." aside): a site's own canonical
    statements rank its pages against each other, never against another site's copy."""
    return bool(a) and bool(b) and _site(str(a)) == _site(str(b)) != ""


def _site(url: str) -> str:
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""
    return host.removeprefix("www.")


def _head_markup(text: str) -> str:
    """The markup of <head> outside comments and scripts, in one pass: a declaration quoted in
    a script or commented out does not count, and hostile markup costs linear time."""
    kept: list[str] = []
    at = 0
    while True:
        hidden = _HIDDEN_START.search(text, at)
        body = _BODY.search(text, at, hidden.start() if hidden else len(text))
        if body is not None:
            kept.append(text[at : body.start()])
            break
        if hidden is None:
            kept.append(text[at:])
            break
        kept.append(text[at : hidden.start()])
        closing = _CLOSING[_tag_name(hidden.group(1) or "--")].search(text, hidden.end())
        if closing is None:
            break  # never closed: nothing after it is markup
        at = closing.end()
    return " ".join(kept)


def _tag_name(matched: str) -> str:
    """A tag name the case-blind regex matched, as `_CLOSING` names it: besides ASCII letters
    that regex takes U+0130, U+0131, U+017F and U+212A (dotted I, dotless i, long s, Kelvin
    sign) for "i", "i", "s" and "k" (a long s in "script" still opens a script), which
    str.lower() alone does not map."""
    return matched.translate(_REGEX_FOLDS).lower()


def _attributes(source: str) -> dict[str, str]:
    """Attribute name -> value (entities decoded); the first of a repeated name counts."""
    found: dict[str, str] = {}
    for match in _ATTR.finditer(source):
        value = next((v for v in match.group(2, 3, 4) if v is not None), "")
        found.setdefault(match.group(1).lower(), html.unescape(value).strip())
    return found


def _absolute(href: str, base: str) -> str | None:
    try:
        resolved = urljoin(base, href) if base else href
        parts = urlsplit(resolved)
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return urlunsplit((parts.scheme.lower(), parts.netloc, parts.path or "/", parts.query, ""))
