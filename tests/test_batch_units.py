"""The batch stage's pure parts, without Spark: bounded buckets, the JVM found, inputs told
apart, records and marks as dedup and hygiene write them, WARC files read."""

from __future__ import annotations

import gzip
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup_pipeline.batch.candidates import bucket_pairs
from neardup_pipeline.batch.elastic import mark_of, split_index_url
from neardup_pipeline.batch.fingerprint import named_by
from neardup_pipeline.batch.read import kind_of
from neardup_pipeline.batch.records import line_of, record_of
from neardup_pipeline.batch.session import java_home
from neardup_pipeline.batch.warc import warc_rows
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.verdict.verdict import Verdict


def test_a_small_bucket_gives_every_pair_once() -> None:
    members = [("c", 3), ("a", 7), ("b", 1)]
    assert sorted(bucket_pairs(members, 3)) == [(1, 3), (1, 7), (3, 7)]


@given(st.integers(2, 60), st.integers(2, 8))
def test_an_oversized_bucket_stays_connected_and_bounded(size: int, limit: int) -> None:
    """Cut in blocks, a bucket's pairs still connect all its pages (a chain of copies joins),
    with at most about 2 x limit pairs a page; the blocks follow the doc ids, not the nodes."""
    members = [(f"doc-{n:03d}", 1000 - n) for n in range(size)]
    pairs = set(bucket_pairs(members, limit))
    assert all(a < b for a, b in pairs)
    if size <= limit:
        assert len(pairs) == size * (size - 1) // 2
    parent = {node: node for _, node in members}

    def root(node: int) -> int:
        while parent[node] != node:
            node = parent[node]
        return node

    for a, b in pairs:
        parent[root(a)] = root(b)
    assert len({root(node) for _, node in members}) == 1
    assert len(pairs) <= size * 2 * limit
    assert pairs == set(bucket_pairs(list(reversed(members)), limit))


def test_every_pair_within_a_block_is_kept() -> None:
    members = [(f"d{n:02d}", n) for n in range(10)]
    pairs = set(bucket_pairs(members, 4))
    for block in ([0, 1, 2, 3], [4, 5, 6, 7], [8, 9]):
        assert set(combinations(block, 2)) <= pairs


def test_the_jdk_spark_runs_on_is_found(tmp_path: Path) -> None:
    for name in ("temurin-25-jdk-amd64", "java-17-openjdk-amd64", "java-1.17.0-openjdk-amd64"):
        (tmp_path / name / "bin").mkdir(parents=True)
        (tmp_path / name / "bin" / "java").touch()
    assert java_home(tmp_path) == str(tmp_path / "java-17-openjdk-amd64")
    assert java_home(tmp_path / "missing") is None


def test_inputs_are_told_apart_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "table"
    folder.mkdir()
    (folder / "part-0.parquet").touch()
    assert kind_of("http://127.0.0.1:9200/pages") == "es"
    assert kind_of("crawl.warc.gz") == kind_of("CRAWL.WARC") == "warc"
    assert kind_of("pages.parquet") == kind_of(str(folder)) == "parquet"
    assert kind_of("pages.jsonl") == kind_of("feed.json.gz") == "jsonl"


def test_an_index_url_names_its_index() -> None:
    assert split_index_url("https://h:9200/pages/") == ("https://h:9200", "pages")
    with pytest.raises(ConfigError, match="INDEX"):
        split_index_url("http://h:9200")


def test_records_are_dedups_lines() -> None:
    copy = Verdict("b", "ok", duplicate_of="a", similarity=0.9, method="bag", cluster="a",
                   canonical="a")
    assert line_of(record_of(copy, "https://b")) == (
        '{"id": "b", "duplicate_of": "a", "similarity": 0.9, "method": "bag", "cluster": "a", '
        '"canonical": false, "url": "https://b"}')
    empty = record_of(Verdict("c", "no_text"), None)
    assert empty["status"] == "no_text" and empty["cluster"] == "c" and "url" not in empty


def test_marks_are_hygienes() -> None:
    copy = {"id": "b", "es_id": "B", "cluster": "a", "status": None}
    assert mark_of(copy).fields() == {"neardup_cluster": "a", "neardup_canonical": False,
                                      "neardup_of": "a", "neardup_status": "checked"}
    again = mark_of({"id": "b", "es_id": "B2", "cluster": "a", "status": "repeated"})
    assert (again.es_id, again.status, again.canonical) == ("B2", "repeated_id", True)
    assert mark_of({"id": "x", "es_id": "x", "cluster": "x", "status": "unreadable"}
                   ).status == "bad_field"


def test_a_declaration_is_looked_up_as_the_crawl_looks_it_up() -> None:
    assert named_by("https://a/x", "https://a/y") == ("https://a/y", "https://a/y")
    assert named_by("https://a/x", "https://A/x") == (None, None)  # names itself
    assert named_by(None, "https://a/y") == (None, "https://a/y")  # by id only
    assert named_by("https://a/x", None) == (None, None)


def test_a_damaged_warc_keeps_what_came_before(tmp_path: Path) -> None:
    html = b"<html><body><p>" + b"word " * 50 + b"</p></body></html>"
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=latin-1\r\n\r\n" + html
    record = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: https://a/1\r\n"
              b"WARC-Record-ID: <urn:uuid:1>\r\nWARC-Date: 2026-01-01T00:00:00Z\r\n"
              b"Content-Type: application/http; msgtype=response\r\n"
              b"Content-Length: " + str(len(http)).encode() + b"\r\n\r\n" + http + b"\r\n\r\n")
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(gzip.compress(record) + gzip.compress(record)[:40])
    rows = list(warc_rows(0, str(path)))
    assert rows[0]["doc_id"] == "https://a/1" and rows[0]["encoding"] == "latin-1"
    assert rows[0]["html_bytes"] == html
    assert [row["problem"] for row in rows[1:]] == [
        "WARC file cut short: its last gzip member ends early"]
    plain = tmp_path / "cut.warc"
    plain.write_bytes(record + record[:60])
    assert [row["problem"] is None for row in warc_rows(1, str(plain))] == [True, False]
    garbage = tmp_path / "not.warc"
    garbage.write_bytes(b"\x00\x01 not a warc file")
    assert [row["problem"] is not None for row in warc_rows(2, str(garbage))] == [True]


def test_the_command_line_loads_no_spark() -> None:
    """`neardup batch --help` (and every other command) starts without importing PySpark."""
    found = subprocess.run([sys.executable, "-X", "importtime", "-m", "neardup_pipeline",
                            "batch", "--help"], capture_output=True, text=True, check=True)
    assert "--engine" in found.stdout and "pyspark" not in found.stderr
