"""The least-privilege roles of docs/elasticsearch.md, on the real secured server
(tests/secured_es.py): each `neardup dedup` run gives the memory backend's verdicts.

- `neardup` (cluster `monitor` + `manage_index_templates`; `read`, `write`, `manage` on
  `neardup-*`): neardup installs its templates itself, as by default;
- `index_only` (cluster `monitor` only): an administrator runs `neardup es install-templates`
  once, and runs set NEARDUP_ES_MANAGE_TEMPLATES to false; without the templates a run stops
  with an error naming that command;
- `reader` (cluster `monitor`; `read`, `view_index_metadata`): a `neardup hygiene --dry-run` on
  the indices a writer's run made is asked for no privilege to create them.

The commands run in this process (`neardup_pipeline.cli.main.main`): the same code as the
`neardup` executable, without an interpreter start per run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch, helpers

from neardup_pipeline.cli.main import main
from neardup_pipeline.index.elastic import compat
from neardup_pipeline.index.elastic.templates import neardup_indices, template_for
from tests.cli_runner import write_jsonl
from tests.documents import corpus_with_copies
from tests.secured_es import SecuredES, User

ENV_NAMES = ("NEARDUP_ES_API_KEY", "NEARDUP_ES_BASIC_AUTH", "NEARDUP_ES_USERNAME",
             "NEARDUP_ES_PASSWORD", "NEARDUP_ES_CA_CERTS", "NEARDUP_ES_VERIFY_CERTS",
             "NEARDUP_ES_MANAGE_TEMPLATES")

Rows = list[dict[str, object]]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def neardup(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """`neardup(*argv)`: the command line run here, its exit code and output."""

    def run(*argv: str) -> Run:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Rows]:
    """The input (near-copies, re-checked ids, an empty page) and its verdicts on the memory
    backend, made once for the module."""
    folder = tmp_path_factory.mktemp("corpus")
    source = write_jsonl(folder / "in.jsonl",
                         [{"id": d.doc_id, "text": d.text} for d in corpus_with_copies()])
    assert main(["dedup", str(source), "-o", str(folder / "memory.jsonl")]) == 0
    return source, rows((folder / "memory.jsonl").read_text(encoding="utf-8"))


def rows(text: str) -> Rows:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def fingerprint_index(secured_es: SecuredES) -> Iterator[str]:
    """A fingerprint index name of the test's own (under `neardup-*`), its indices deleted
    afterwards by the administrator."""
    name = f"neardup-fingerprints-lp-{uuid.uuid4().hex[:10]}"
    yield name
    admin = admin_client(secured_es)
    try:
        for spec in neardup_indices(name, None):
            admin.options(ignore_status=404).indices.delete(index=spec.index)
    finally:
        admin.close()


@pytest.fixture
def as_user(
    secured_es: SecuredES, monkeypatch: pytest.MonkeyPatch
) -> Callable[[User], None]:
    """`as_user(user)` sets the environment the commands reach the server with."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)

    def login(user: User) -> None:
        for name, value in secured_es.env(user).items():
            monkeypatch.setenv(name, value)

    return login


def admin_client(secured_es: SecuredES) -> Elasticsearch:
    return compat.client(secured_es.url, ca_certs=str(secured_es.ca_path),
                         basic_auth=tuple(secured_es.users.admin), request_timeout=30)


def delete_templates(secured_es: SecuredES, fingerprint_index: str) -> None:
    """Leave the server without neardup's templates (as a cluster no crawl has run on)."""
    admin = admin_client(secured_es)
    try:
        for spec in neardup_indices(fingerprint_index, "neardup-pages"):
            name, _ = template_for(spec)
            admin.options(ignore_status=404).indices.delete_index_template(name=name)
    finally:
        admin.close()


def test_a_read_only_role_runs_a_hygiene_dry_run_on_existing_indices(
    secured_es: SecuredES, as_user: Callable[[User], None], neardup: Callable[..., Run],
    tmp_path: Path,
) -> None:
    """The writer's run makes the fingerprint indices; the reader's dry run opens them and
    needs neither `create_index` nor `manage` (Elasticsearch checks the privilege to create an
    index before whether it exists)."""
    content = f"neardup-lp-content-{uuid.uuid4().hex[:10]}"
    admin = admin_client(secured_es)
    try:
        admin.indices.create(index=content, settings={"number_of_shards": 1,
                                                      "number_of_replicas": 0})
        helpers.bulk(admin, ({"_index": content, "_id": d.doc_id, "_source": {"text": d.text}}
                             for d in corpus_with_copies()[:12]), refresh=True)
        hygiene = ["hygiene", "--es", secured_es.url, "--index", content, "--text-field", "text",
                   "--language", "en"]
        as_user(secured_es.users.neardup)
        written = neardup(*hygiene)
        assert written.code == 0, written.err
        as_user(secured_es.users.reader)
        dry = neardup(*hygiene, "--dry-run", "--report", str(tmp_path / "report.html"))
        assert dry.code == 0, dry.err
        assert "create_index" not in dry.err and "nothing written" in dry.err + dry.out
    finally:
        made = admin.indices.get(index=f"{content}*", expand_wildcards="all",
                                 allow_no_indices=True)
        for name in made:
            admin.indices.delete(index=name)
        found = admin.options(ignore_status=404).indices.get_index_template(name=f"{content}*")
        own = found.body.get("index_templates", []) if found.meta.status == 200 else []
        for template in own:  # the content index's own, named after it
            admin.indices.delete_index_template(name=template["name"])
        admin.close()


def test_the_least_privilege_role_runs_a_dedup(
    secured_es: SecuredES, as_user: Callable[[User], None], fingerprint_index: str,
    corpus: tuple[Path, Rows], neardup: Callable[..., Run],
) -> None:
    source, memory = corpus
    as_user(secured_es.users.neardup)
    run = neardup("dedup", str(source), "--backend", secured_es.url,
                  "--fingerprint-index", fingerprint_index)
    assert run.code == 0, run.err
    assert rows(run.out) == memory and any(row["duplicate_of"] for row in memory)


def test_without_templates_an_index_only_role_is_told_to_install_them(
    secured_es: SecuredES, as_user: Callable[[User], None], fingerprint_index: str,
    corpus: tuple[Path, Rows], neardup: Callable[..., Run], monkeypatch: pytest.MonkeyPatch,
) -> None:
    delete_templates(secured_es, fingerprint_index)
    as_user(secured_es.users.index_only)
    source, _ = corpus
    dedup = ["dedup", str(source), "--backend", secured_es.url,
             "--fingerprint-index", fingerprint_index]
    checked = neardup(*dedup, "--no-es-manage-templates")
    assert checked.code == 2 and not checked.out
    assert "has no index template 'neardup-fingerprints'" in checked.err
    assert "neardup es install-templates" in checked.err
    monkeypatch.setenv("NEARDUP_ES_MANAGE_TEMPLATES", "false")  # the variable, as the flag
    assert "neardup es install-templates" in neardup(*dedup).err
    monkeypatch.delenv("NEARDUP_ES_MANAGE_TEMPLATES")
    installing = neardup(*dedup)  # the default: install them, which this role may not
    assert installing.code == 2
    assert "manage_index_templates" in installing.err
    assert "neardup es install-templates" in installing.err
    refused = neardup("es", "install-templates", "--es", secured_es.url)
    assert refused.code == 2 and "manage_index_templates" in refused.err


def test_templates_installed_by_an_administrator_serve_an_index_only_role(
    secured_es: SecuredES, as_user: Callable[[User], None], fingerprint_index: str,
    corpus: tuple[Path, Rows], neardup: Callable[..., Run], monkeypatch: pytest.MonkeyPatch,
) -> None:
    delete_templates(secured_es, fingerprint_index)
    as_user(secured_es.users.admin)
    installed = neardup("es", "install-templates", "--es", secured_es.url,
                        "--es-request-timeout", "30")
    assert installed.code == 0, installed.err
    assert "installed index template neardup-fingerprints" in installed.out
    again = neardup("es", "install-templates", "--es", secured_es.url, "--json")
    assert {t["action"] for t in json.loads(again.out)} == {"current"}
    as_user(secured_es.users.index_only)
    monkeypatch.setenv("NEARDUP_ES_MANAGE_TEMPLATES", "false")
    source, memory = corpus
    run = neardup("dedup", str(source), "--backend", secured_es.url,
                  "--fingerprint-index", fingerprint_index)
    assert run.code == 0, run.err
    assert rows(run.out) == memory
