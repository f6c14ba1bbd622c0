"""Elasticsearch 8.19 and 9.x with one client (index/elastic/compat.py).

The version check itself is pure and tested on the answers servers give; the index contract
(tests/test_index_contract.py) runs again here on a real 8.19 server (tests/es8.py), the 9.x
server of `make test` having run it already, and so does one `neardup dedup` run, whose verdicts
must be the memory backend's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import BadRequestError, Elasticsearch
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import NearDupConfig
from neardup_pipeline.cli.main import main
from neardup_pipeline.errors import UnsupportedServer
from neardup_pipeline.index.elastic import compat
from neardup_pipeline.index.elastic.compat import (
    Answer,
    Negotiation,
    question,
    read_answer,
    rewrite,
    server_compatibility,
)
from tests.cli_runner import write_jsonl
from tests.documents import corpus_with_copies
from tests.test_index_contract import (  # noqa: F401  (collected again on 8.19: see below)
    test_candidates_need_a_shared_key_of_the_same_method,
    test_deduplicator_on_every_backend,
    test_every_backend_is_a_context_manager,
    test_flush_keeps_everything_findable,
    test_minhash_keys_and_signatures_on_every_backend,
    test_parameters_are_recorded_and_mismatch_refused,
    test_persistent_backends_survive_reopening,
    test_re_adding_a_doc_id_replaces_it,
    test_read_after_write_without_flush,
    test_unusual_ids_round_trip,
)

REFUSED_9 = {  # an 8.19 server's answer to a request marked compatible-with=9
    "error": {
        "type": "media_type_header_exception",
        "reason": "Invalid media-type value on headers [Accept, Content-Type]",
        "caused_by": {"type": "status_exception", "reason": "Accept version must be either "
                      "version 8 or 7, but found 9."},
    },
    "status": 400,
}


def nodes(version: str) -> dict[str, object]:
    """The answer to `GET /_nodes/_local?filter_path=nodes.*.version`."""
    return {"nodes": {"zYPC7oyPS3-HVjTc20UqzA": {"version": version}}}


# ------------------------------------------------------------------------- the check, pure


def test_answers_are_read_as_refused_or_accepted_with_a_version() -> None:
    assert read_answer(400, REFUSED_9) == Answer(refused=True, version=None)
    assert read_answer(200, nodes("8.19.0")) == Answer(refused=False, version="8.19.0")
    # A user without the `monitor` privilege, or bad credentials: accepted, version unknown.
    assert read_answer(403, {"error": {"type": "security_exception"}}) == \
        Answer(refused=False, version=None)
    assert read_answer(401, b"") == Answer(refused=False, version=None, unauthenticated=True)
    assert read_answer(400, {"error": {"type": "illegal_argument_exception"}}).refused is False


def test_the_older_major_is_marked_only_when_the_client_major_is_refused() -> None:
    here = "http://127.0.0.1:9200"
    assert server_compatibility([Answer(False, "9.2.0")], here) is None
    assert server_compatibility([Answer(False, None)], here) is None
    older = compat.CLIENT_MAJOR - 1
    assert server_compatibility([Answer(True, None), Answer(False, "8.19.0")], here) == older
    assert server_compatibility([Answer(True, None), Answer(False, None)], here) == older


@pytest.mark.parametrize(
    ("answers", "found"),
    [
        ([Answer(True, None), Answer(True, None)], "accepts neither"),  # 7.x and older
        ([Answer(False, "10.0.0")], "runs version 10.0.0"),
        ([Answer(False, "2.11.1")], "runs version 2.11.1"),  # OpenSearch
    ],
)
def test_an_unsupported_server_is_named_with_the_supported_range(
    answers: list[Answer], found: str
) -> None:
    with pytest.raises(UnsupportedServer, match=found) as raised:
        server_compatibility(answers, "http://127.0.0.1:9200")
    assert "8.19 and 9.x" in str(raised.value)


def test_an_8x_older_than_the_tested_one_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=compat.__name__):
        server_compatibility([Answer(True, None), Answer(False, "8.12.2")], "http://h:9200")
    assert "8.12.2" in caplog.text and "8.19, the oldest tested" in caplog.text


def test_only_the_version_of_the_two_media_types_is_rewritten() -> None:
    headers = {
        "accept": "application/vnd.elasticsearch+json; compatible-with=9",
        "content-type": "application/vnd.elasticsearch+x-ndjson; compatible-with=9",
        "x-opaque-id": "compatible-with=9",
    }
    marked = rewrite(headers, 8)
    assert marked["accept"] == "application/vnd.elasticsearch+json; compatible-with=8"
    assert marked["content-type"] == "application/vnd.elasticsearch+x-ndjson; compatible-with=8"
    assert marked["x-opaque-id"] == "compatible-with=9"
    assert headers["accept"].endswith("=9")  # a copy: the caller's headers are left alone


def test_the_question_carries_the_request_credentials_and_no_body_type() -> None:
    asked = question({"authorization": "Basic eDp5", "content-type": "application/json",
                      "accept": "application/json"}, 8)
    assert asked == {"authorization": "Basic eDp5",
                     "accept": "application/vnd.elasticsearch+json; compatible-with=8"}


def test_a_refused_login_leaves_the_question_open_for_the_next_request() -> None:
    negotiation = Negotiation([])
    negotiation.settle([Answer(refused=False, version=None, unauthenticated=True)])
    assert not negotiation.settled and negotiation.major is None
    negotiation.settle([Answer(True, None), Answer(False, "8.19.0")])
    assert negotiation.settled and negotiation.major == compat.CLIENT_MAJOR - 1
    marked = negotiation.mark({"headers": {"accept": "application/vnd.elasticsearch+json; "
                                           "compatible-with=9"}, "body": None})
    assert marked["headers"]["accept"].endswith(f"compatible-with={negotiation.major}")


# ------------------------------------------------------------------------- a real 8.19 server


# The index contract imported above runs here on the 8.19 server: every test of it but the one
# about a process that exits with its index open (nothing in it depends on the server version).
@pytest.fixture
def backend_config(es8_url: str, es8_index_names: dict[str, str]) -> NearDupConfig:
    """The contract's backend, here the 8.19 server (overrides tests/conftest.py's)."""
    return NearDupConfig(backend=es8_url).replace(**es8_index_names)


@pytest.fixture
def persistent_config(backend_config: NearDupConfig) -> NearDupConfig:
    return backend_config


@pytest.fixture
def es8(es8_url: str) -> Iterator[Elasticsearch]:
    client = compat.client(es8_url, request_timeout=30)
    yield client
    client.close()


def test_the_8x_server_refuses_the_plain_client_and_takes_ours(
    es8_url: str, es8: Elasticsearch
) -> None:
    plain = Elasticsearch(es8_url, request_timeout=30)
    try:
        with pytest.raises(BadRequestError, match="media_type_header_exception"):
            plain.cluster.health()
    finally:
        plain.close()
    assert es8.cluster.health()["status"] in ("green", "yellow")
    version = next(iter(es8.nodes.info(node_id="_local")["nodes"].values()))["version"]
    assert version.startswith("8.")


@deferred_f_from_coro_f
async def test_the_async_client_takes_the_8x_server_too(es8_url: str) -> None:
    client = compat.async_client(es8_url, request_timeout=30)
    try:
        assert (await client.cluster.health())["status"] in ("green", "yellow")
    finally:
        await client.close()


def test_dedup_on_8x_with_templates_left_to_an_administrator_gives_the_memory_verdicts(
    tmp_path: Path, es8_url: str, es8_index_names: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The commands run in this process (cli.main.main): the `neardup` executable's code."""
    fingerprints = es8_index_names["fingerprint_index"]
    assert main(["es", "install-templates", "--es", es8_url, "--fingerprint-index",
                 fingerprints, "--es-request-timeout", "30"]) == 0
    source = write_jsonl(tmp_path / "in.jsonl",
                         [{"id": d.doc_id, "text": d.text} for d in corpus_with_copies()])
    assert main(["dedup", str(source), "-o", str(tmp_path / "memory.jsonl")]) == 0
    monkeypatch.setenv("NEARDUP_ES_MANAGE_TEMPLATES", "false")
    assert main(["dedup", str(source), "-o", str(tmp_path / "es8.jsonl"), "--backend", es8_url,
                 "--fingerprint-index", fingerprints]) == 0
    memory, on_es8 = ((tmp_path / f"{name}.jsonl").read_text().splitlines()
                      for name in ("memory", "es8"))
    assert on_es8 == memory and any('"duplicate_of": "' in line for line in memory)
