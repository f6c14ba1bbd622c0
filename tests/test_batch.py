"""`neardup batch` on real Spark in local mode, against `neardup dedup` on the same real pages:
the same partition and canonicals, whatever the input order and format; a killed job resumed;
an Elasticsearch index read in slices and marked as hygiene marks it. One Spark session for the
module (its JVM takes seconds to start)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neardup_pipeline.batch.job import BatchJob, run
from neardup_pipeline.batch.session import spark_session
from neardup_pipeline.cli.main import main
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError
from tests.batch_corpus import canonicals, corpus_rows, partition, read_lines, shuffled, write_jsonl

pytestmark = pytest.mark.integration
PARTITIONS = "2"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", int(PARTITIONS))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The corpus as JSONL, and `neardup dedup`'s output of it."""
    folder = tmp_path_factory.mktemp("corpus")
    rows = corpus_rows()
    source = write_jsonl(folder / "pages.jsonl", rows)
    out = folder / "dedup.jsonl"
    assert main(["dedup", str(source), "-o", str(out)]) == 0
    dedup = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {"rows": rows, "source": source, "dedup": dedup}


def batch(*args: str) -> int:
    return main(["batch", *args, "--partitions", PARTITIONS])


def test_any_order_and_format_gives_the_same_clusters(spark: Any, corpus: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """The rows shuffled, half of them in Parquet, the output in Parquet: the same partition
    and the same canonical of every cluster."""
    rows = shuffled(corpus["rows"])
    half = len(rows) // 2
    jsonl = write_jsonl(tmp_path / "half.jsonl", rows[:half])
    parquet = str(tmp_path / "half.parquet")
    spark.createDataFrame([(r["id"], r.get("url"), r.get("html"), r.get("text"))
                           for r in rows[half:]],
                          "id string, url string, html string, text string").write.parquet(parquet)
    out = tmp_path / "out"
    assert batch(str(jsonl), parquet, "-o", str(out), "--output-format", "parquet") == 0
    records = [row.asDict() for row in spark.read.parquet(str(out)).collect()]
    assert partition(records) == partition(corpus["dedup"])
    assert canonicals(records) == canonicals(corpus["dedup"])
    assert [r["id"] for r in records] == [r["id"] for r in rows]  # the input's order


def _warc_record(url: str, html: bytes, charset: str = "utf-8") -> bytes:
    http = (f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset={charset}\r\n"
            f"Content-Length: {len(html)}\r\n\r\n").encode() + html
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:{abs(hash(url))}>\r\n"
            "Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def test_warc_pages_and_unreadable_lines(spark: Any, corpus: dict[str, Any],
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    """A gzipped WARC's response records are pages (id = target URI, the HTTP charset read);
    an unreadable JSONL line is named with its line and the exit status says so."""
    pages = [r for r in corpus["rows"] if r.get("html")][:6]
    warc = tmp_path / "crawl.warc.gz"
    with warc.open("wb") as file:
        for n, row in enumerate(pages):
            for copy in ("a", "b"):  # each page twice, at two URLs
                url = f"https://{copy}.example/{n}"
                file.write(gzip.compress(_warc_record(url, row["html"].encode("utf-8"))))
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "x", "text": ""}, "not json",
                                               {"html": "<p>no id</p>"}])
    out = tmp_path / "out"
    assert batch(str(warc), str(bad), "-o", str(out)) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2: not JSON" in err and f"{bad}:3: missing 'id'" in err
    records = {r["id"]: r for r in read_lines(out)}
    assert set(records) == {f"https://{c}.example/{n}" for n in range(6) for c in "ab"} | {"x"}
    for n in range(6):
        assert records[f"https://b.example/{n}"]["cluster"] == f"https://a.example/{n}"
    assert records["x"]["status"] == "no_text"


def test_a_killed_job_resumes_to_dedups_output(spark: Any, corpus: dict[str, Any],
                                               tmp_path: Path) -> None:
    """Killed (with its JVM) once its edges are kept, the job run again goes on from there, and
    its output is `neardup dedup`'s, line for line; another job's work folder is refused."""
    out, work = tmp_path / "out", tmp_path / "work"
    command = [sys.executable, "-m", "neardup_pipeline", "batch", str(corpus["source"]), "-o",
               str(out), "--work", str(work), "--partitions", PARTITIONS]
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (work / "edges" / "_SUCCESS").exists():
            assert job.poll() is None and time.monotonic() < deadline, "no edges stage"
            time.sleep(0.2)
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # the job and its JVM: a machine lost
        job.wait()
    assert not (out / "_SUCCESS").exists()
    config = NearDupConfig()
    summary = run(spark, BatchJob((str(corpus["source"]),), str(out), "jsonl", str(work),
                                  config, partitions=int(PARTITIONS)))
    assert {"fingerprints", "pairs", "edges"} <= set(summary.reused)
    assert len(partition(corpus["dedup"])) < len(corpus["dedup"]) - 60  # copies were found
    assert read_lines(out) == corpus["dedup"]
    with pytest.raises(ConfigError, match="another job's stages"):
        run(spark, BatchJob((str(corpus["source"]),), str(out), "parquet", str(work), config))
    with pytest.raises(ConfigError, match="exists: a batch job writes a folder of its own"):
        run(spark, BatchJob((str(corpus["source"]),), str(tmp_path), "jsonl",
                            str(tmp_path / "new-work"), config))


def test_an_index_is_read_in_slices_and_marked(spark: Any, corpus: dict[str, Any],
                                               es_url: str, es: Any) -> None:
    """The marks hygiene writes, from an index read by the executors; a document without its
    HTML field tagged `bad_field`; a second run reuses every stage and marks the same."""
    index = f"test-batch-{os.getpid()}-{time.monotonic_ns()}"
    rows = corpus["rows"][:80]
    try:
        for row in rows:
            body = {"html": row.get("html") or row.get("text"), "url": row.get("url")}
            es.index(index=index, id=row["id"], document=body)
        es.index(index=index, id="broken", document={"title": "no html field"})
        es.indices.refresh(index=index)
        target = f"{es_url.rstrip('/')}/{index}"
        work = Path(str(corpus["source"])).parent / f"{index}.stages"
        args = [target, "-o", target, "--output-format", "es", "--work", str(work)]
        assert batch(*args) == 1  # the broken document is reported
        marks = {hit["_id"]: hit["_source"] for hit in es.search(
            index=index, size=1000, source_includes=["neardup_*"])["hits"]["hits"]}
        assert marks["broken"]["neardup_status"] == "bad_field"
        expected = {r["id"]: r for r in json_dedup(rows)}
        for doc_id, record in expected.items():
            mark = marks[doc_id]
            assert mark["neardup_cluster"] == record["cluster"]
            assert mark["neardup_canonical"] == record["canonical"]
            assert mark["neardup_of"] == (None if record["canonical"] else record["cluster"])
        assert batch(*args) == 1
    finally:
        es.options(ignore_status=404).indices.delete(index=index)


def json_dedup(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`neardup dedup`'s records of `rows` (as the index holds them: text read as HTML)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        source = write_jsonl(Path(folder) / "in.jsonl", [
            {"id": r["id"], "url": r.get("url"), "html": r.get("html") or r.get("text")}
            for r in rows])
        out = Path(folder) / "out.jsonl"
        assert main(["dedup", str(source), "-o", str(out)]) == 0
        return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
