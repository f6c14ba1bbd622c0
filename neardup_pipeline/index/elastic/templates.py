"""neardup's index templates and indices: installed at start, or left to an administrator.

By default every start puts the composable templates of `es_mappings/` when missing or older
(cluster privilege `manage_index_templates`) and creates the indices. With template management
off (`NEARDUP_ES_MANAGE_TEMPLATES = False`), a start only reads the templates (cluster privilege
`monitor` suffices) and stops with `TemplatesMissing` naming `neardup es install-templates` when
one is missing or older than this neardup's; the indices are still created here (index privilege
`manage` on them), taking the administrator's templates. An index that exists is not created
again: only the fields it lacks are added, so a run on existing indices (a read-only role's dry
run) needs no privilege to create one.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from elasticsearch import ApiError, BadRequestError

from neardup_pipeline.errors import IndexFailure, PrivilegeMissing, TemplatesMissing
from neardup_pipeline.index.elastic.connection import Connection, describe, error_type
from neardup_pipeline.index.elastic.mappings import load_mapping
from neardup_pipeline.index.elastic.settings import ElasticSettings

__all__ = [
    "IndexSpec",
    "TemplateState",
    "install_templates",
    "neardup_indices",
    "prepare_index",
    "template_for",
]

INSTALL_COMMAND = "neardup es install-templates"
# The install command's index names when its flags are left out (cli/es.py, cli/options.py).
INSTALL_FINGERPRINT_INDEX = ElasticSettings.fingerprint_index
INSTALL_PAGES_INDEX = "neardup-pages"
_SIDE_MAPPINGS = ("df", "writelog", "clusters")


@dataclass(frozen=True)
class IndexSpec:
    """One neardup index: its mapping file (`es_mappings/<mapping>.json` and
    `<mapping>-template.json`), its name, and the name of the template that covers it."""

    mapping: str
    index: str
    template_name: str


@dataclass(frozen=True)
class TemplateState:
    """What `install_templates` did with one template: installed, updated or current."""

    name: str
    patterns: tuple[str, ...]
    version: int
    action: str


def neardup_indices(fingerprint_index: str, pages_index: str | None) -> list[IndexSpec]:
    """Every index a crawl with these names may create (the side indices are named after the
    fingerprint index, as store.py names them); the pages index only when one is named."""
    specs = [
        IndexSpec("fingerprints", fingerprint_index, "neardup-fingerprints"),
        IndexSpec("df", f"{fingerprint_index}-df", "neardup-df"),
        IndexSpec("writelog", f"{fingerprint_index}-writelog", "neardup-writelog"),
        IndexSpec("clusters", f"{fingerprint_index}-clusters", "neardup-clusters"),
    ]
    if pages_index:
        specs.append(IndexSpec("pages", pages_index, "neardup-pages"))
    return specs


def template_for(spec: IndexSpec) -> tuple[str, dict[str, Any]]:
    """The template's name and body for an index: the file's, when its patterns cover the index;
    else one named after the index, for that index only (a user's own index name)."""
    template = load_mapping(f"{spec.mapping}-template")
    if any(fnmatch.fnmatchcase(spec.index, p) for p in template["index_patterns"]):
        return spec.template_name, template
    return spec.index, {**template, "index_patterns": [spec.index]}


def installed_version(connection: Connection, name: str) -> int | None:
    """The version of the installed template `name` (0: installed without one); None: none."""
    client = connection.client
    answer = connection.call(
        lambda: client.options(ignore_status=404).indices.get_index_template(name=name)
    )
    installed = [t["index_template"] for t in answer.body.get("index_templates", [])]
    return int(installed[0].get("version") or 0) if installed else None


def put_template(connection: Connection, name: str, template: dict[str, Any]) -> None:
    """Install or replace the composable template `name`."""
    client = connection.client
    # The client names the body's `_meta` parameter `meta`.
    args = {("meta" if k == "_meta" else k): v for k, v in template.items()}
    connection.call(lambda: client.indices.put_index_template(name=name, **args))


def ensure_template(connection: Connection, spec: IndexSpec, manage: bool) -> None:
    """Put the index's template when missing or older (`manage`); else check it is there and
    current, raising TemplatesMissing naming the command that installs it."""
    name, template = template_for(spec)
    wanted = int(template["version"])
    found = installed_version(connection, name)
    if found is not None and found >= wanted:
        return
    if not manage:
        state = "no index template" if found is None else \
            f"index template version {found} (this neardup needs {wanted}) of"
        raise TemplatesMissing(
            f"Elasticsearch at {connection.location} has {state} {name!r} for index "
            f"{spec.index!r}, and neardup may not install it (NEARDUP_ES_MANAGE_TEMPLATES is "
            f"off): run `{install_command(connection, spec)}` once as a user with the cluster "
            "privilege manage_index_templates"
        )
    try:
        put_template(connection, name, template)
    except PrivilegeMissing as exc:  # the other way out than the privilege
        raise PrivilegeMissing(
            f"{exc}; or have an administrator run `{INSTALL_COMMAND}` once and set "
            "NEARDUP_ES_MANAGE_TEMPLATES to false"
        ) from exc


def install_command(connection: Connection, spec: IndexSpec) -> str:
    """The `neardup es install-templates` command that installs every template of this run, as
    it can be run: the nodes without credentials (the administrator's own come from the
    environment), the run's CA file (or verification off), and its index names where they are
    not the command's defaults (`connection.index_names`; else the names `spec` implies)."""
    configs = [node.config for node in connection.client.transport.node_pool.all()]
    nodes = ",".join(f"{c.scheme}://{c.host}:{c.port}{c.path_prefix or ''}" for c in configs)
    words = [*INSTALL_COMMAND.split(), "--es", nodes or connection.location]
    tls = configs[0] if configs and configs[0].scheme == "https" else None
    if tls is not None and not tls.verify_certs:
        words.append("--no-es-verify-certs")
    elif tls is not None and tls.ca_certs:
        words += ["--es-ca-certs", str(tls.ca_certs)]
    if connection.index_names is not None:
        fingerprint_index, pages_index = connection.index_names
    elif spec.mapping == "pages":
        fingerprint_index, pages_index = INSTALL_FINGERPRINT_INDEX, spec.index
    else:
        side = f"-{spec.mapping}" if spec.mapping in _SIDE_MAPPINGS else ""
        fingerprint_index, pages_index = spec.index.removesuffix(side), None
    if fingerprint_index != INSTALL_FINGERPRINT_INDEX:
        words += ["--fingerprint-index", fingerprint_index]
    if pages_index and pages_index != INSTALL_PAGES_INDEX:
        words += ["--pages-index", pages_index]
    return shlex.join(words)


def create_index(connection: Connection, spec: IndexSpec) -> None:
    """Create the index with its mapping; an existing one (another process, an older neardup)
    gets the fields it lacks, and nothing when it lacks none: Elasticsearch checks the privilege
    to create an index before whether it exists, so asking to create one that exists would
    refuse a role that may only read it."""
    client = connection.client
    body = load_mapping(spec.mapping)
    existing = connection.call(
        lambda: client.options(ignore_status=404).indices.get_mapping(index=spec.index))
    if existing.meta.status != 404:
        mappings = lacking_fields(connection, spec.index, body["mappings"], existing.body)
        if mappings:
            connection.call(lambda: client.indices.put_mapping(index=spec.index, **mappings))
        return
    try:
        connection.call(
            lambda: client.indices.create(
                index=spec.index, settings=body["settings"], mappings=body["mappings"]
            )
        )
    except BadRequestError as exc:
        if error_type(exc) != "resource_already_exists_exception":
            raise
        mappings = lacking_fields(connection, spec.index, body["mappings"])
        if mappings:
            connection.call(lambda: client.indices.put_mapping(index=spec.index, **mappings))


def lacking_fields(
    connection: Connection, index: str, mappings: dict[str, Any],
    found: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The mapping to put on an existing index: the fields it lacks, and the rules for fields to
    come that differ from its own; empty when it lacks nothing. A field it has keeps its
    parameters: Elasticsearch refuses to change most of them (an index made before the key
    fields lost their doc values keeps them). `found`: its get-mapping answer, if read."""
    if found is None:
        found = connection.call(
            lambda: connection.client.indices.get_mapping(index=index)).body
    current = [one.get("mappings", {}) for one in found.values()]
    have = {name for mapping in current for name in mapping.get("properties", {})}
    rules = {k: v for k, v in mappings.items() if k not in ("_meta", "properties")
             and not all(_same(mapping.get(k), v) for mapping in current)}
    fields = {name: field for name, field in mappings.get("properties", {}).items()
              if name not in have}
    if not rules and not fields:
        return {}
    return {**{k: v for k, v in mappings.items() if k not in ("_meta", "properties")},
            "properties": fields}


def _same(stored: Any, wanted: Any) -> bool:
    """Whether a mapping rule as Elasticsearch returns it is the one wanted (it returns
    `dynamic` as a string)."""
    if isinstance(wanted, bool):
        return str(stored).lower() == str(wanted).lower()
    return bool(stored == wanted)


def prepare_index(connection: Connection, spec: IndexSpec) -> None:
    """The index's template (put when missing or older, or only checked when the connection's
    `manage_templates` is off), then the index: what a start needs."""
    try:
        ensure_template(connection, spec, connection.manage_templates)
        create_index(connection, spec)
    except ApiError as exc:
        raise IndexFailure(
            f"cannot prepare Elasticsearch index {spec.index!r} at {connection.location}: "
            f"{describe(exc)}"
        ) from exc


def install_templates(connection: Connection, specs: Iterable[IndexSpec]) -> list[TemplateState]:
    """Install or update the templates of these indices (not the indices): the administrator's
    step, so that crawls may run with template management off."""
    done: list[TemplateState] = []
    seen: set[str] = set()
    for spec in specs:
        name, template = template_for(spec)
        if name in seen:
            continue
        seen.add(name)
        wanted = int(template["version"])
        try:
            found = installed_version(connection, name)
            if found is None or found < wanted:
                put_template(connection, name, template)
        except ApiError as exc:
            raise IndexFailure(
                f"cannot install index template {name!r} at {connection.location}: "
                f"{describe(exc)}"
            ) from exc
        action = "installed" if found is None else "updated" if found < wanted else "current"
        done.append(TemplateState(name, tuple(template["index_patterns"]),
                                  max(wanted, found or 0), action))
    return done
