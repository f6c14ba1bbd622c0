"""Which credentials reach Elasticsearch, and from where.

One source wins, the first of: the settings (`es_api_key`, `es_basic_auth`: the NEARDUP_ES_API_KEY
and NEARDUP_ES_BASIC_AUTH Scrapy settings), the URL's `user:password@`, the environment
(NEARDUP_ES_API_KEY, NEARDUP_ES_BASIC_AUTH, NEARDUP_ES_USERNAME + NEARDUP_ES_PASSWORD). Within
one source an API key wins over a user and password. Secrets come only from there, never from a
command-line flag (a flag shows in `ps` and shell history).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

from neardup_pipeline.errors import ConfigError

__all__ = [
    "BASIC_AUTH_VARIABLES", "ENV_API_KEY", "ENV_BASIC_AUTH", "ENV_PASSWORD", "ENV_USERNAME",
    "Credentials", "parse_basic_auth", "resolve_credentials",
]

ENV_API_KEY = "NEARDUP_ES_API_KEY"
ENV_BASIC_AUTH = "NEARDUP_ES_BASIC_AUTH"
ENV_USERNAME = "NEARDUP_ES_USERNAME"
ENV_PASSWORD = "NEARDUP_ES_PASSWORD"
BASIC_AUTH_VARIABLES = (f"{ENV_USERNAME} and {ENV_PASSWORD} (or {ENV_BASIC_AUTH}=user,password, "
                        "or user:password in the URL)")

Kind = Literal["api key", "basic"]


@dataclass(frozen=True)
class Credentials:
    """The credentials a client sends, and where they came from (for the log and errors)."""

    kind: Kind | None = None
    source: str = ""
    api_key: str | None = field(default=None, repr=False)
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every form of the secret a message must never hold (the header's base64 too)."""
        found: list[str] = []
        if self.api_key:
            found.append(self.api_key)
        if self.basic_auth is not None:
            user, password = self.basic_auth
            if password:
                found.append(password)
            found.append(base64.b64encode(f"{user}:{password}".encode()).decode())
        return tuple(found)

    def summary(self) -> str:
        """`api key from NEARDUP_ES_API_KEY`, `basic as USER from the URL`, or `none`."""
        if self.kind == "api key":
            return f"api key from {self.source}"
        if self.kind == "basic" and self.basic_auth is not None:
            return f"basic as {self.basic_auth[0]!r} from {self.source}"
        return "none"

    def client_options(self) -> dict[str, Any]:
        """The client's keyword arguments for these credentials."""
        if self.api_key is not None:
            return {"api_key": self.api_key}
        if self.basic_auth is not None:
            return {"basic_auth": self.basic_auth}
        return {}


def parse_basic_auth(value: object, name: str = ENV_BASIC_AUTH) -> tuple[str, str]:
    """A user and a password: `"user,password"` (split at the FIRST comma, so the password may
    hold commas) or a list of two strings. The error names the setting, never the value."""
    if isinstance(value, str):
        user, comma, password = value.partition(",")
        if comma and user.strip():
            return user.strip(), password
    elif isinstance(value, Sequence) and len(value) == 2 and all(
            isinstance(v, str) for v in value) and str(value[0]).strip():
        return str(value[0]).strip(), str(value[1])
    raise ConfigError(f"{name} must be a user and a password: 'user,password' (the password "
                      "may hold commas) or a list of two strings")


def url_credentials(userinfo: str) -> tuple[str, str]:
    """User and password of a URL's `user:password` part, percent-decoded (write a literal `%`
    followed by two hex digits as `%25`)."""
    user, _, password = userinfo.partition(":")
    return unquote(user), unquote(password)


def resolve_credentials(
    settings_api_key: str | None,
    settings_basic_auth: tuple[str, str] | None,
    userinfo: str | None,
    env: Mapping[str, str],
) -> Credentials:
    """The credentials to send: settings, else the URL's, else the environment's."""
    if settings_api_key:
        return Credentials("api key", ENV_API_KEY, api_key=settings_api_key)
    if settings_basic_auth is not None:
        return Credentials("basic", ENV_BASIC_AUTH,
                           basic_auth=parse_basic_auth(settings_basic_auth))
    if userinfo:
        return Credentials("basic", "the URL", basic_auth=url_credentials(userinfo))
    if env.get(ENV_API_KEY):
        return Credentials("api key", ENV_API_KEY, api_key=env[ENV_API_KEY])
    if env.get(ENV_BASIC_AUTH):
        return Credentials("basic", ENV_BASIC_AUTH,
                           basic_auth=parse_basic_auth(env[ENV_BASIC_AUTH]))
    if env.get(ENV_USERNAME):
        return Credentials("basic", f"{ENV_USERNAME} and {ENV_PASSWORD}",
                           basic_auth=(env[ENV_USERNAME], env.get(ENV_PASSWORD, "")))
    return Credentials()
