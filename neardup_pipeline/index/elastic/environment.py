"""The NEARDUP_ES_* variables of the connection (CA file, verification, timeouts) over settings.

A setting left at its default takes its variable; a setting given (in Scrapy settings, a
configuration, a command-line flag) wins. Credentials are read apart (credentials.py): they
are secrets, with an order of their own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.index.elastic.settings import ElasticSettings

__all__ = ["VARIABLES", "parse_bool", "with_environment"]

# ElasticSettings field -> its variable (the field's flat name, upper-cased: one name each)
VARIABLES: dict[str, str] = {
    "ca_certs": "NEARDUP_ES_CA_CERTS",
    "verify_certs": "NEARDUP_ES_VERIFY_CERTS",
    "request_timeout": "NEARDUP_ES_REQUEST_TIMEOUT",
    "retry_seconds": "NEARDUP_ES_RETRY_SECONDS",
    "manage_templates": "NEARDUP_ES_MANAGE_TEMPLATES",
}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def parse_bool(value: str, name: str) -> bool:
    """`true/false`, `1/0`, `yes/no`, `on/off` (any case); else a ConfigError naming `name`."""
    word = value.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ConfigError(f"{name}={value!r} is not true or false")


def _parse(field_name: str, value: str) -> Any:
    name = VARIABLES[field_name]
    if field_name in ("verify_certs", "manage_templates"):
        return parse_bool(value, name)
    if field_name in ("request_timeout", "retry_seconds"):
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not a number of seconds") from None
    return value


def environment_values(env: Mapping[str, str]) -> dict[str, Any]:
    """The connection settings the environment sets, parsed, by field name."""
    return {f: _parse(f, env[name]) for f, name in VARIABLES.items() if env.get(name)}


def with_environment(settings: ElasticSettings, env: Mapping[str, str]) -> ElasticSettings:
    """`settings` with each field still at its default taken from its variable, if set."""
    defaults = ElasticSettings()
    changes = {f: v for f, v in environment_values(env).items()
               if getattr(settings, f) == getattr(defaults, f)}
    return dataclasses.replace(settings, **changes) if changes else settings
