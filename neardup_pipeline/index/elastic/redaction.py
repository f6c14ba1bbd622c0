"""Secrets kept out of every message: the user:password of a URL, and known secrets in text.

A password typed into a URL by hand may hold `/ # ? @ :` unencoded, so no URL parser finds where
it ends. The rule here does not parse: the credentials are everything between `://` and the
LAST `@` (a host never holds `@`; an Elasticsearch URL has no `@` in its path). Whatever the
input, what comes back holds nothing of that part.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

__all__ = ["REDACTED", "redact_url", "scrub", "split_userinfo"]

REDACTED = "***"
# A scheme, then anything without whitespace up to the last `@` of the token: URL credentials
# inside free text (an exception's message, a log line).
_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)\S*@")


def split_userinfo(url: str) -> tuple[str, str | None]:
    """The URL without its credentials, and the raw credentials (None when it has none)."""
    start = url.find("://")
    if start < 0:
        return url, None
    rest = url[start + 3:]
    at = rest.rfind("@")
    if at < 0:
        return url, None
    return url[:start + 3] + rest[at + 1:], rest[:at]


def redact_url(url: str) -> str:
    """The URL fit for logs and messages: its credentials replaced by ***, parseable or not."""
    bare, userinfo = split_userinfo(url)
    if userinfo is None:
        return url
    start = bare.find("://") + 3
    return f"{bare[:start]}{REDACTED}@{bare[start:]}"


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without URL credentials and without any of `secrets` (as written, or
    percent-encoded as a URL would carry them)."""
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for form in {secret, quote(secret, safe="")}:
            text = text.replace(form, REDACTED)
    return text
