"""The settings of neardup: one section per component, each defined beside the component that
reads it and validated there; `NearDupConfig` composes them.

Users name settings flat (`simhash_k`, NEARDUP_SIMHASH_K in Scrapy): a section's prefix and its
field make the flat name, unless the field names its own. `python -m neardup_pipeline.settings_doc`
prints the settings tables of docs/settings.md.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.index.elastic.redaction import redact_url, split_userinfo
from neardup_pipeline.index.elastic.settings import ElasticSettings
from neardup_pipeline.index.sqlite.spec import SQLITE_SCHEME, sqlite_path
from neardup_pipeline.methods.settings import (
    AnchorsSettings,
    BagSettings,
    MinhashSettings,
    RarewordsSettings,
    SimhashSettings,
)
from neardup_pipeline.scrapy.settings import ScrapySettings, TagFields
from neardup_pipeline.setting import doc
from neardup_pipeline.sketch.settings import SketchSettings
from neardup_pipeline.text.settings import CONTENTS, Content, TextSettings
from neardup_pipeline.verdict.settings import VerdictSettings

__all__ = [
    "AUTO_METHODS", "CONTENTS", "DEFAULT_BACKEND", "KNOWN_METHODS", "METHOD_CHOICES",
    "SCRAPY_ONLY_SETTINGS", "Content", "FlatSetting", "NearDupConfig", "TagFields",
    "flat_settings", "redact_backend", "unknown_scrapy_settings",
]

KNOWN_METHODS: tuple[str, ...] = ("simhash", "minhash", "bag", "rarewords", "anchors")
# `auto`: simhash finds the near-identical cheaply; the word bag catches reordered blocks and a
# few percent of changed words, which break too many shingles (docs/calibration.md).
AUTO_METHODS: tuple[str, ...] = ("simhash", "bag")
METHOD_CHOICES: tuple[str, ...] = ("auto", *KNOWN_METHODS)  # what a user may name
DEFAULT_BACKEND = "sqlite:neardup.sqlite"


def redact_backend(backend: str) -> str:
    """A backend spec or URL fit for logs and messages: user:password replaced by ***, even
    where the URL does not parse (a password with `/`, `#`, `?` or `@` written as it is)."""
    return redact_url(backend)


class Section(Protocol):
    """A settings section: a frozen dataclass whose flat names start with PREFIX."""

    PREFIX: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


@dataclass(frozen=True)
class FlatSetting:
    """One user-facing setting: its flat name, its section (None: the top level), its field."""

    name: str
    section: str | None
    field: dataclasses.Field[Any]

    @property
    def scrapy_name(self) -> str:
        return "NEARDUP_" + self.name.upper()

    @property
    def doc(self) -> str:
        return str(self.field.metadata.get("doc", ""))

    @property
    def default(self) -> Any:
        if self.field.default_factory is not dataclasses.MISSING:
            return self.field.default_factory()
        return self.field.default


@dataclass(frozen=True)
class NearDupConfig:
    """Every setting of neardup: the methods, the backend, and one section per component."""

    methods: tuple[str, ...] = field(
        default=("auto",),
        metadata=doc(
            "A list or comma-separated string: `auto` (= simhash + bag), or any of "
            "`simhash`, `minhash`, `bag`, `rarewords`, `anchors` (a page is a duplicate "
            "when any says so); see [methods.md](methods.md)"
        ),
    )
    backend: str = field(
        default=DEFAULT_BACKEND,
        metadata=doc("`memory`, `sqlite:PATH` or `http(s)://host:9200` (Elasticsearch; the "
                     "nodes of one cluster: their URLs separated by commas, see "
                     "[reliability.md](reliability.md#a-node-lost)). `sqlite:PATH` is the path "
                     "as written, relative to the working directory (`sqlite:neardup.sqlite`); "
                     "`sqlite:///abs/path.sqlite` (three slashes) is an absolute path; "
                     "`sqlite://name.sqlite` is refused (it would be a file at the filesystem "
                     "root)"),
    )
    text: TextSettings = field(default_factory=TextSettings)
    sketch: SketchSettings = field(default_factory=SketchSettings)
    simhash: SimhashSettings = field(default_factory=SimhashSettings)
    minhash: MinhashSettings = field(default_factory=MinhashSettings)
    bag: BagSettings = field(default_factory=BagSettings)
    rarewords: RarewordsSettings = field(default_factory=RarewordsSettings)
    anchors: AnchorsSettings = field(default_factory=AnchorsSettings)
    verdict: VerdictSettings = field(default_factory=VerdictSettings)
    scrapy: ScrapySettings = field(default_factory=ScrapySettings)
    elastic: ElasticSettings = field(default_factory=ElasticSettings)

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHOD_CHOICES]
        if not self.methods or unknown:
            raise ConfigError(f"methods must be among {METHOD_CHOICES}, got {list(self.methods)}")
        if self.minhash.mode == "containment" and "minhash" not in self.method_names:
            raise ConfigError("containment mode needs the minhash method (shingle sets)")
        check_backend(self.backend)

    @property
    def method_names(self) -> tuple[str, ...]:
        """The detection methods to run, with the `auto` preset expanded."""
        names: list[str] = []
        for name in self.methods:
            for method in AUTO_METHODS if name == "auto" else (name,):
                if method not in names:
                    names.append(method)
        return tuple(names)

    def replace(self, **changes: Any) -> NearDupConfig:
        """A copy with settings changed, by flat name (`simhash_k=2`), `methods`, `backend` or
        a whole section (`text=TextSettings(...)`); validated again."""
        by_name = _flat_index()
        top: dict[str, Any] = {}
        sections: dict[str, dict[str, Any]] = {}
        unknown: list[str] = []
        for name, value in changes.items():
            if name in _SECTIONS:
                top[name] = value
                continue
            flat = by_name.get(name)
            if flat is None:
                unknown.append(name)
            elif flat.section is None:
                top[name] = _coerced(name, value)
            else:
                sections.setdefault(flat.section, {})[flat.field.name] = _coerced(name, value)
        if unknown:
            raise ConfigError(f"unknown neardup settings: {sorted(unknown)}")
        for section, values in sections.items():
            try:
                top[section] = dataclasses.replace(
                    top.get(section, getattr(self, section)), **values
                )
            except ConfigError as exc:
                raise ConfigError(_naming_given(str(exc), section, changes)) from None
        return dataclasses.replace(self, **top)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> NearDupConfig:
        """Build from a plain dict of flat names; unknown names are an error, not ignored."""
        return cls().replace(**values)

    @classmethod
    def from_settings(cls, settings: Any) -> NearDupConfig:
        """Build from Scrapy settings (NEARDUP_* names, typed getters); project values win."""
        values: dict[str, Any] = {}
        for flat in flat_settings():
            if settings.get(flat.scrapy_name) is None:
                continue
            try:
                value = _scrapy_value(settings, flat)
            except ValueError as exc:  # Scrapy's typed getters name neither setting nor value
                raise ConfigError(
                    f"{flat.scrapy_name}={settings.get(flat.scrapy_name)!r} is not "
                    f"{_expected(flat.default)} ({exc})"
                ) from None
            if value is not _ABSENT:
                values[flat.name] = value
        try:
            return cls.from_mapping(values)
        except ConfigError as exc:  # the sections name their fields; the project wrote NEARDUP_*
            raise ConfigError(_in_scrapy_names(str(exc), settings, values)) from None


_ABSENT = object()  # an empty NEARDUP_TAG_FIELDS: the defaults stay


def _naming_given(message: str, section: str, changes: Mapping[str, Any]) -> str:
    """A section's error, with the settings given for it when the message names none
    (`thresholds must lie in (0, 1]` says neither which threshold nor its value)."""
    by_name = _flat_index()
    given = {name: value for name, value in changes.items()
             if name in by_name and by_name[name].section == section}
    if any(re.search(rf"(?<![\w.-]){re.escape(name)}(?!\w)", message) for name in given):
        return message
    return f"{message} (given: {', '.join(_given(by_name[n], v) for n, v in given.items())})"


def _given(flat: FlatSetting, value: Any) -> str:
    """`name=value` for a number or a switch; the name alone for text, which may be a secret
    (a password, an API key, a URL with credentials) and is never echoed."""
    return f"{flat.name}={value}" if _echoable(flat) else flat.name


def _echoable(flat: FlatSetting) -> bool:
    return isinstance(flat.default, (bool, int, float))


def _in_scrapy_names(message: str, settings: Any, given: Mapping[str, Any]) -> str:
    """`simhash_k must lie in [0, 63]` -> `NEARDUP_SIMHASH_K must lie in [0, 63] (the
    settings give NEARDUP_SIMHASH_K = '99')`: the names and values the project wrote."""
    by_name = _flat_index()
    named: list[str] = []
    for name in sorted(given, key=len, reverse=True):  # `simhash_k` before a shorter `k`
        scrapy_name = by_name[name].scrapy_name
        replaced, count = re.subn(rf"(?<![\w.-]){re.escape(name)}(?![\w])", scrapy_name, message)
        if count:
            message = replaced
            written = settings.get(scrapy_name)
            if _echoable(by_name[name]) and str(written) not in message:  # never a secret
                named.append(f"{scrapy_name} = {written!r}")
    return f"{message} (the settings give {', '.join(named)})" if named else message


def _scrapy_value(settings: Any, flat: FlatSetting) -> Any:
    """The value of `flat` from Scrapy settings, through the typed getter its default calls for;
    ValueError for a value of another type."""
    key, default = flat.scrapy_name, flat.default
    if isinstance(default, TagFields):
        return settings.getdict(key) or _ABSENT
    if flat.name == "es_basic_auth":  # "user,pa,ss": split at the first comma, not every one
        return settings.get(key)
    if isinstance(default, bool):
        return settings.getbool(key)
    if isinstance(default, int):
        return settings.getint(key)
    if isinstance(default, float):
        return settings.getfloat(key)
    if isinstance(default, tuple) or "tuple" in str(flat.field.type):
        return tuple(settings.getlist(key))
    if default is None:
        return settings.get(key) or None
    return settings.get(key)


def _expected(default: object) -> str:
    """What a setting with this default takes, for an error message."""
    if isinstance(default, TagFields):
        return "a JSON object of field names"
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "a whole number"
    if isinstance(default, float):
        return "a number"
    return "a valid value"


BACKEND_SCHEMES: tuple[str, ...] = ("memory", "sqlite:", "http://", "https://")


def check_backend(spec: str) -> None:
    """Refuse a backend spec `open_index` cannot open, before anything starts: a mistyped
    scheme (`htp://`, `sqlit:`) would otherwise surface only when the index opens."""
    if spec == "memory":
        return
    if spec.startswith(SQLITE_SCHEME):
        sqlite_path(spec)  # a path, or a ConfigError saying how to write one
        return
    if spec.startswith(("http://", "https://")) and _hostname(spec):
        return
    shown = redact_backend(spec) if "://" in spec else spec
    if spec.startswith(("http://", "https://")):
        raise ConfigError(f"backend {shown!r} names no host: http(s)://host:9200")
    scheme = spec.split("://", 1)[0] + "://" if "://" in spec else spec.split(":", 1)[0]
    guess = difflib.get_close_matches(scheme, BACKEND_SCHEMES, n=1, cutoff=0.6)
    hint = f" (did you mean {guess[0]!r}?)" if guess else ""
    raise ConfigError(
        f"unknown backend {shown!r}{hint}: use 'memory', 'sqlite:PATH' or "
        "'http(s)://host:9200' (NEARDUP_BACKEND, --backend)"
    )


def _hostname(url: str) -> str | None:
    """The host of a URL whose credentials may not parse; None when it names none."""
    try:
        return urlsplit(split_userinfo(url)[0]).hostname
    except ValueError:
        return None


_SECTIONS: dict[str, type[Section]] = {
    f.name: f.default_factory  # type: ignore[misc]
    for f in dataclasses.fields(NearDupConfig) if f.default_factory is not dataclasses.MISSING
}


def flat_settings() -> Iterator[FlatSetting]:
    """Every user-facing setting, top level first, then section by section."""
    for f in dataclasses.fields(NearDupConfig):
        if f.name not in _SECTIONS:
            yield FlatSetting(f.name, None, f)
    for section, section_type in _SECTIONS.items():
        for f in dataclasses.fields(section_type):
            yield FlatSetting(f.metadata.get("name", section_type.PREFIX + f.name), section, f)


# Scrapy settings of the add-on that are no neardup setting (nothing to configure there).
SCRAPY_ONLY_SETTINGS: tuple[str, ...] = ("NEARDUP_ENABLED",)


def unknown_scrapy_settings(names: Iterable[str]) -> dict[str, str | None]:
    """The NEARDUP_* names among `names` that neardup does not read, each with the closest
    known name (a likely misspelling: NEARDUP_ACTOIN -> NEARDUP_ACTION) or None."""
    known = [*SCRAPY_ONLY_SETTINGS, *(flat.scrapy_name for flat in flat_settings())]
    prefix = len("NEARDUP_")  # compared without it: the shared prefix would make all "close"
    by_suffix = {name[prefix:]: name for name in known}
    return {
        name: next((by_suffix[m] for m in difflib.get_close_matches(
            name[prefix:].upper(), list(by_suffix), n=1)), None)
        for name in sorted(names)
        if name.upper().startswith("NEARDUP_") and name not in known
    }


@functools.cache
def _flat_index() -> dict[str, FlatSetting]:
    return {flat.name: flat for flat in flat_settings()}


def _coerced(name: str, value: Any) -> Any:
    """Plain values (a dict's, a list's, a string's) as the fields hold them."""
    if name == "methods":
        if isinstance(value, str):
            value = value.split(",")
        return tuple(str(v).strip().lower() for v in value if str(v).strip())
    if name == "tag_fields" and isinstance(value, Mapping):
        return TagFields(**value)
    if name == "es_basic_auth" and isinstance(value, list):
        return tuple(value)
    return value

