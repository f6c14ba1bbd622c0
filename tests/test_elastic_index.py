"""The Elasticsearch backend against the real test server: mapping, bulk, cache, errors, sharing."""

from __future__ import annotations

import logging
import socket
import time

import pytest
from elasticsearch import Elasticsearch

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import IndexFailure, IndexParamsError
from neardup_pipeline.index import IndexEntry, open_index
from neardup_pipeline.index.elastic.store import ElasticIndex, es_id

PARAMS = {"simhash": {"bits": 64, "shingle": 3, "k": 3, "blocks": 4}, "hash": "rabin"}


def entry(doc_id: str, keys: list[str], **meta: object) -> IndexEntry:
    """A simhash entry whose signature is derived from the id (content is irrelevant here)."""
    signature = f"{abs(hash(doc_id)) % (1 << 64):016x}"
    return IndexEntry(
        doc_id, {"simhash": signature}, {"simhash": keys}, {"cluster": doc_id, **meta}
    )


@pytest.fixture
def config(es_url: str, es_index_names: dict[str, str]) -> NearDupConfig:
    return NearDupConfig(backend=es_url).replace(
        es_bulk_size=1000,
        fingerprint_index=es_index_names["fingerprint_index"],
        pages_index=es_index_names["pages_index"],
    )


def open_elastic(config: NearDupConfig, **changes: object) -> ElasticIndex:
    cfg = config.replace(**changes) if changes else config
    return ElasticIndex.from_config(cfg.backend, cfg)


def raw_count(es: Elasticsearch, index: str) -> int:
    """Documents Elasticsearch can see right now, without refreshing on our behalf."""
    return int(es.count(index=index)["count"])


def test_open_index_spec_gives_elastic_backend(config: NearDupConfig) -> None:
    index = open_index(config.backend, config)
    try:
        assert isinstance(index, ElasticIndex)
    finally:
        index.close()


def test_mapping_and_template_applied_idempotently(
    config: NearDupConfig, es: Elasticsearch
) -> None:
    for _ in range(2):  # a second open finds everything in place and changes nothing
        index = open_elastic(config)
        index.close()
    name = config.elastic.fingerprint_index
    props = es.indices.get_mapping(index=name)[name]["mappings"]["properties"]
    assert props["simhash_keys"]["type"] == "keyword"
    assert props["doc_id"]["type"] == "keyword"
    assert props["signatures"] == {"type": "object", "enabled": False}
    assert props["meta"] == {"type": "object", "enabled": False}
    assert props["similarity"]["type"] == "float"
    assert props["added"]["type"] == "date"
    settings = es.indices.get_settings(index=name)[name]["settings"]["index"]
    assert settings["number_of_shards"] == "1"
    assert settings["auto_expand_replicas"] == "0-1"
    templates = es.indices.get_index_template(name="neardup-fingerprints")["index_templates"]
    assert templates[0]["index_template"]["index_patterns"] == ["neardup-fingerprints*"]
    pages = es.indices.get_index_template(name="neardup-pages")["index_templates"]
    assert pages[0]["index_template"]["index_patterns"] == ["neardup-pages*"]


def test_any_method_gets_keyword_keys(config: NearDupConfig, es: Elasticsearch) -> None:
    index = open_elastic(config)
    try:
        index.add(IndexEntry("a", {"other": "x"}, {"other": ["0:1", "1:2"]}, {"cluster": "a"}))
        index.flush()
        assert index.candidates({"other": ["1:2"]}) == {"a"}
        assert index.candidates({"simhash": ["1:2"]}) == set()
        assert index.get(["a"])["a"].signatures == {"other": "x"}
    finally:
        index.close()
    name = config.elastic.fingerprint_index
    props = es.indices.get_mapping(index=name)[name]["mappings"]["properties"]
    assert props["other_keys"]["type"] == "keyword"
    # Searched, not kept: the stored document leaves its keys out (its methods make them again).
    stored = es.get(index=name, id="a")["_source"]
    assert "other_keys" not in stored and stored["signatures"] == {"other": "x"}


def test_key_fields_are_searched_without_doc_values(
    config: NearDupConfig, es: Elasticsearch
) -> None:
    """A lookup only searches the keys (the terms) and reads doc_id's doc values: the keys'
    own doc values would be disk and indexing work nothing reads."""
    index = open_elastic(config)
    try:
        index.add(IndexEntry("a", {"other": "x"}, {"other": ["0:1"], "simhash": ["0:2"]},
                             {"cluster": "a"}))
        index.flush()
        assert index.candidates({"other": ["0:1"]}) == index.candidates({"simhash": ["0:2"]}) \
            == {"a"}
    finally:
        index.close()
    name = config.elastic.fingerprint_index
    props = es.indices.get_mapping(index=name)[name]["mappings"]["properties"]
    assert props["simhash_keys"]["doc_values"] is False
    assert props["other_keys"]["doc_values"] is False  # a method's keys: the dynamic template


def test_an_index_made_with_key_doc_values_still_opens(
    config: NearDupConfig, es: Elasticsearch
) -> None:
    """An index made before the key fields lost their doc values keeps them (Elasticsearch
    refuses to change the parameter): opening it adds only the fields it lacks."""
    name = config.elastic.fingerprint_index
    es.indices.create(index=name, mappings={"properties": {
        "simhash_keys": {"type": "keyword"}, "doc_id": {"type": "keyword"}}})
    index = open_elastic(config)
    try:
        index.add(entry("a", ["0:1"]))
        index.flush()
        assert index.candidates({"simhash": ["0:1"]}) == {"a"}
    finally:
        index.close()
    props = es.indices.get_mapping(index=name)[name]["mappings"]["properties"]
    assert "doc_values" not in props["simhash_keys"]  # as it was made
    assert props["signatures"] == {"type": "object", "enabled": False}  # what it lacked


def test_params_stored_and_mismatch_refused(config: NearDupConfig, es: Elasticsearch) -> None:
    first = open_elastic(config)
    first.ensure_params(PARAMS)
    first.ensure_params(PARAMS)
    first.close()
    name = config.elastic.fingerprint_index
    meta = es.indices.get_mapping(index=name)[name]["mappings"]["_meta"]
    assert meta["neardup_params"] == PARAMS
    assert meta["neardup_schema"] == 1  # the mapping's own _meta is kept beside the params
    second = open_elastic(config)
    try:
        second.ensure_params(PARAMS)
        other = {**PARAMS, "hash": "xxh64"}
        with pytest.raises(IndexParamsError, match="hash"):
            second.ensure_params(other)
    finally:
        second.close()


def test_read_after_write_without_refresh(config: NearDupConfig, es: Elasticsearch) -> None:
    index = open_elastic(config)
    try:
        index.add(entry("page-1", ["0:aa", "1:bb"], url="http://example.org/1"))
        assert raw_count(es, config.elastic.fingerprint_index) == 0  # still buffered: never sent
        assert index.candidates({"simhash": ["1:bb"]}) == {"page-1"}
        got = index.get(["page-1", "unknown"])
        assert set(got) == {"page-1"}
        assert got["page-1"].meta["url"] == "http://example.org/1"
        assert index.count() == 1
    finally:
        index.close()


def test_readd_replaces_keys_before_and_after_flush(config: NearDupConfig) -> None:
    index = open_elastic(config)
    try:
        index.add(entry("doc", ["0:old"], similarity=0.5))
        index.flush()
        assert index.candidates({"simhash": ["0:old"]}) == {"doc"}
        index.add(entry("doc", ["0:new"], similarity=0.9))
        # Elasticsearch still holds the old keys; the cache must win for this doc id.
        assert index.candidates({"simhash": ["0:old"]}) == set()
        assert index.candidates({"simhash": ["0:new"]}) == {"doc"}
        assert index.get(["doc"])["doc"].meta["similarity"] == 0.9
        index.flush()
        assert index.candidates({"simhash": ["0:old"]}) == set()
        assert index.candidates({"simhash": ["0:new"]}) == {"doc"}
        stored = index.get(["doc"])["doc"]
        assert stored.keys == {}  # searched, not stored: the methods make them again
        assert stored.meta == {"cluster": "doc", "similarity": 0.9}
        assert index.count() == 1
    finally:
        index.close()


def test_count_does_not_double_count_pending_readd(config: NearDupConfig) -> None:
    index = open_elastic(config)
    try:
        index.add(entry("a", ["0:1"]))
        index.add(entry("b", ["0:2"]))
        index.flush()
        index.add(entry("a", ["0:3"]))
        assert index.count() == 2
    finally:
        index.close()


def test_bulk_flush_by_size(config: NearDupConfig, es: Elasticsearch) -> None:
    index = open_elastic(config, es_bulk_size=3)
    try:
        index.add(entry("a", ["0:1"]))
        index.add(entry("b", ["0:1"]))
        assert raw_count(es, config.elastic.fingerprint_index) == 0
        index.add(entry("c", ["0:1"]))  # third write fills the buffer: bulk + refresh
        assert raw_count(es, config.elastic.fingerprint_index) == 3
        index.add(entry("d", ["0:1"]))
        assert raw_count(es, config.elastic.fingerprint_index) == 3
        assert index.candidates({"simhash": ["0:1"]}) == {"a", "b", "c", "d"}
        assert index.count() == 4
    finally:
        index.close()


def test_close_flushes(config: NearDupConfig) -> None:
    index = open_elastic(config)
    index.add(entry("kept", ["2:ff"]))
    index.close()
    again = open_elastic(config)
    try:
        assert again.candidates({"simhash": ["2:ff"]}) == {"kept"}
        assert again.count() == 1
    finally:
        again.close()
    with pytest.raises(IndexFailure, match="closed"):
        index.add(entry("late", ["2:ff"]))


def test_bulk_error_is_raised_with_a_summary(config: NearDupConfig) -> None:
    index = open_elastic(config)
    try:
        index.add(entry("good", ["0:1"]))
        index.add(entry("bad", ["0:1"], similarity="not a number"))  # float field in the mapping
        with pytest.raises(IndexFailure) as raised:
            index.flush()
        message = str(raised.value)
        assert "refused 1 of 2 documents" in message
        assert "/bad" in message
        assert "parsing" in message  # document_parsing_exception / number_format_exception
        # The good document is stored; the refused one is not pretended to be.
        assert index.candidates({"simhash": ["0:1"]}) == {"good"}
        assert set(index.get(["good", "bad"])) == {"good"}
        index.flush()  # the refused write is not retried forever
    finally:
        index.close()


def test_closed_index_write_is_raised(config: NearDupConfig, es: Elasticsearch) -> None:
    index = open_elastic(config)
    try:
        es.indices.close(index=config.elastic.fingerprint_index)
        index.add(entry("x", ["0:1"]))
        with pytest.raises(IndexFailure, match="closed"):
            index.flush()
    finally:
        es.indices.open(index=config.elastic.fingerprint_index)
        index.close()


def test_pages_index_gets_documents_with_cluster_id(
    config: NearDupConfig, es: Elasticsearch
) -> None:
    assert config.elastic.pages_index is not None
    index = open_elastic(config)
    try:
        index.add_page(
            {
                "url": "http://e.org/a",
                "title": "Alpha",
                "text": "the first page",
                "cluster_id": "a",
                "is_canonical": True,
            }
        )
        index.add_page(
            {
                "url": "http://e.org/b",
                "title": "Alpha",
                "text": "the first page!",
                "cluster_id": "a",
                "is_canonical": False,
                "duplicate_of": "http://e.org/a",
                "similarity": 0.97,
                "method": "simhash",
            }
        )
        index.add_page(
            {
                "url": "http://e.org/c",
                "title": "Other",
                "text": "another page",
                "cluster_id": "c",
                "is_canonical": True,
            }
        )
        index.flush()
    finally:
        index.close()
    name = config.elastic.pages_index
    props = es.indices.get_mapping(index=name)[name]["mappings"]["properties"]
    assert props["cluster_id"]["type"] == "keyword"
    assert props["text"]["type"] == "text"
    assert props["is_canonical"]["type"] == "boolean"
    doc = es.get(index=name, id="http://e.org/b")["_source"]
    assert doc["cluster_id"] == "a" and doc["duplicate_of"] == "http://e.org/a"
    assert "crawled_at" in doc
    # What the cluster id is for: one hit per near-duplicate group.
    found = es.search(
        index=name, query={"match": {"text": "page"}}, collapse={"field": "cluster_id"}
    )
    assert sorted(h["fields"]["cluster_id"][0] for h in found["hits"]["hits"]) == ["a", "c"]


def test_add_page_without_pages_index_is_a_no_op(config: NearDupConfig, es: Elasticsearch) -> None:
    index = open_elastic(config, pages_index=None)
    try:
        index.add_page({"url": "http://e.org/a", "cluster_id": "a"})
        index.flush()
    finally:
        index.close()
    assert not es.indices.exists(index=config.elastic.pages_index or "")
    # The shared fixture deletes both names in one call, which is refused when one is missing.
    es.indices.delete(index=config.elastic.fingerprint_index)


def test_unreachable_server_fails_fast_and_clearly() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    start = time.monotonic()
    with pytest.raises(IndexFailure, match="not reachable"):
        open_index(url, NearDupConfig(backend=url))
    assert time.monotonic() - start < 5


def test_long_doc_ids(config: NearDupConfig) -> None:
    long_id = "http://example.org/" + "x" * 600
    wide_id = "é" * 300  # 300 characters, 600 bytes
    assert es_id(long_id) != long_id and len(es_id(long_id)) == 64
    assert es_id("short") == "short"
    index = open_elastic(config)
    try:
        index.add(entry(long_id, ["3:1"]))
        index.add(entry(wide_id, ["3:1"]))
        assert index.candidates({"simhash": ["3:1"]}) == {long_id, wide_id}
        index.flush()
        assert index.candidates({"simhash": ["3:1"]}) == {long_id, wide_id}
        assert set(index.get([long_id, wide_id])) == {long_id, wide_id}
        index.add(entry(long_id, ["3:2"]))  # replaced through the same hashed _id
        index.flush()
        assert index.candidates({"simhash": ["3:1"]}) == {wide_id}
        assert index.count() == 2
    finally:
        index.close()


def test_two_instances_share_writes_after_flush(config: NearDupConfig) -> None:
    first = open_elastic(config)
    second = open_elastic(config)
    try:
        first.ensure_params(PARAMS)
        second.ensure_params(PARAMS)
        first.add(entry("from-first", ["0:ab"]))
        first.flush()
        assert second.candidates({"simhash": ["0:ab"]}) == {"from-first"}
        assert (
            second.get(["from-first"])["from-first"].signatures
            == entry("from-first", []).signatures
        )
        second.add(entry("from-second", ["0:ab"]))
        second.flush()
        assert first.candidates({"simhash": ["0:ab"]}) == {"from-first", "from-second"}
        assert first.count() == second.count() == 2
    finally:
        first.close()
        second.close()


def test_credentials_never_logged(config: NearDupConfig, caplog: pytest.LogCaptureFixture) -> None:
    """Security is off on the test server, so any credentials are accepted and must stay quiet."""
    caplog.set_level(logging.DEBUG)
    secret = "s3cret-Pa55"
    url = config.backend.replace("://", f"://neardup:{secret}@", 1)
    index = ElasticIndex.from_config(url, config.replace(es_basic_auth=("neardup", secret)))
    index.close()
    keyed = open_elastic(config, es_api_key="QUJDOkRFRg==")
    keyed.close()
    assert secret not in caplog.text
    assert "QUJDOkRFRg==" not in caplog.text
    assert "auth: basic" in caplog.text and "auth: api key" in caplog.text


def test_unencodable_value_is_refused_at_add(config: NearDupConfig) -> None:
    """Refused alone, at once: it must not poison the batch it would have been sent with."""
    index = open_elastic(config)
    try:
        index.add(entry("fine", ["0:1"]))
        with pytest.raises(IndexFailure, match="encode"):
            index.add(entry("odd", ["0:1"], extra=object()))
        with pytest.raises(IndexFailure, match="encode"):
            index.add_page({"url": "http://e.org/odd", "title": object()})
        index.flush()
        assert index.candidates({"simhash": ["0:1"]}) == {"fine"}
    finally:
        index.close()
