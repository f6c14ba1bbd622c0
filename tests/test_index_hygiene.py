"""`neardup hygiene` on a real Elasticsearch content index filled with the real sample pages
(tests/data): the same clusters as `neardup dedup`, incremental runs, the side index, the dry run,
reader processes, slices run apart then one --finish, resumption after SIGKILL, bad fields, and
the search examples of docs/hygiene.md run as they are written."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neardup_pipeline.cli.main import main
from neardup_pipeline.cli.sources import sqlite_records
from tests.corpora import installation_guide_pages, postgresql_pages

pytestmark = pytest.mark.elasticsearch

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "hygiene.md"
SITE = "https://docs.example.org/"


def sample_docs() -> list[dict[str, Any]]:
    """161 real pages: PostgreSQL 15.18 and 15.20 manual pages (copies across releases) and
    installation-guide sections (copies across architectures), interleaved; one copy declares
    itself canonical on the original's site, so it takes its cluster over."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for p in postgresql_pages():
        groups[p.group].append(p)
    pg = [p for group in sorted(groups)[:40] for p in groups[group]]
    archs = ("amd64", "i386", "arm64", "armel")
    files = sorted({p.doc_id.split("/")[-1] for p in installation_guide_pages()})[:20]
    guide = [p for p in installation_guide_pages() if p.doc_id.split("/")[0] in archs
             and "/en/" in p.doc_id and p.doc_id.split("/")[-1] in files]
    docs = [{"_id": p.doc_id, "html": p.html.decode("utf-8", "replace"), "url": SITE + p.doc_id}
            for p in pg + guide]
    docs.sort(key=lambda d: (d["_id"].split("/")[-1], d["_id"]))  # copies close together
    first = docs[0]
    declared = dict(first, _id="declared/" + first["_id"], url=SITE + "declared/" + first["_id"])
    link = f'<link rel="canonical" href="{declared["url"]}">'
    declared["html"] = re.sub(r"(?i)<head>", "<head>" + link, first["html"], count=1)
    docs.insert(5, declared)
    return docs


@pytest.fixture
def names(es: Any) -> Iterator[dict[str, str]]:
    """A unique content index name (and its side index); everything under it deleted after."""
    base = f"hygiene-test-{uuid.uuid4().hex[:8]}"
    yield {"index": base, "side": f"{base}-side"}
    made = es.indices.get(index=f"{base}*", expand_wildcards="all", allow_no_indices=True)
    for name in made:
        es.indices.delete(index=name)


@pytest.fixture
def docs(es: Any, names: dict[str, str]) -> list[dict[str, Any]]:
    """Every sample page loaded into the content index, in order."""
    docs = sample_docs()
    load(es, names["index"], docs)
    return docs


def write_order(es: Any, index: str) -> dict[str, int]:
    """Each document's `_seq_no`: unchanged as long as nothing writes on the document."""
    return {h["_id"]: h["_seq_no"] for h in es.search(
        index=index, size=1000, seq_no_primary_term=True)["hits"]["hits"]}


def load(es: Any, index: str, docs: list[dict[str, Any]]) -> None:
    """One shard, indexed in list order: the order hygiene and dedup both read."""
    from elasticsearch import helpers

    if not es.indices.exists(index=index):
        es.indices.create(index=index, settings={"number_of_shards": 1, "number_of_replicas": 0})
    helpers.bulk(es, ({"_index": index, "_id": d["_id"],
                       "_source": {k: v for k, v in d.items() if k != "_id"}} for d in docs),
                 refresh=True)


def hygiene(es_url: str, index: str, *extra: str) -> list[str]:
    return ["hygiene", "--es", es_url, "--index", index, "--language", "en", *extra]


def marks(es: Any, index: str, key: str = "_id") -> dict[str, dict[str, Any]]:
    """doc id -> its neardup fields, read back from the index."""
    es.indices.refresh(index=index)
    found = es.search(index=index, size=10_000, query={"match_all": {}},
                      source_includes=["neardup_*", "doc_id"])["hits"]["hits"]
    return {(h["_id"] if key == "_id" else h["_source"][key]): h["_source"] for h in found}


def partition(cluster_of: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = defaultdict(set)
    for doc_id, cluster in cluster_of.items():
        groups[cluster].add(doc_id)
    return {frozenset(g) for g in groups.values()}


def assert_consistent(by_id: dict[str, dict[str, Any]]) -> None:
    """Every document marked; one canonical per cluster, named by every other member."""
    clusters: dict[str, list[str]] = defaultdict(list)
    for doc_id, fields in by_id.items():
        assert set(fields) >= {"neardup_cluster", "neardup_canonical", "neardup_of"}, doc_id
        clusters[fields["neardup_cluster"]].append(doc_id)
    for cluster, members in clusters.items():
        canonical = [m for m in members if by_id[m]["neardup_canonical"]]
        assert canonical == [cluster], (cluster, members)
        assert all(by_id[m]["neardup_of"] == (None if m == cluster else cluster)
                   for m in members)


def dedup_clusters(tmp_path: Path, docs: list[dict[str, Any]]) -> dict[str, str]:
    """`neardup dedup` on the same documents in the same order: each one's final cluster (the
    SQLite index holds the clusters after any declared canonical took one over)."""
    corpus, db = tmp_path / "docs.jsonl", tmp_path / "fp.sqlite"
    corpus.write_text("".join(json.dumps({"id": d["_id"], "html": d["html"], "url": d["url"]})
                              + "\n" for d in docs), encoding="utf-8")
    assert main(["dedup", str(corpus), "-o", str(tmp_path / "out.jsonl"), "--language", "en",
                 "--backend", f"sqlite:{db}"]) == 0
    return {r.doc_id: r.cluster for r in sqlite_records(db)}


def test_marks_the_clusters_dedup_finds_and_a_second_run_only_adds(
    es_url: str, es: Any, names: dict[str, str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]],
) -> None:
    assert main(hygiene(es_url, names["index"])) == 0
    summary = capsys.readouterr().out
    assert f"{len(docs)} documents read" in summary and f"{len(docs)} marks written" in summary
    first = marks(es, names["index"])
    expected = dedup_clusters(tmp_path, docs)
    got = {doc_id: m["neardup_cluster"] for doc_id, m in first.items()}
    assert got == expected  # same clusters, same canonical copy (the cluster's id)
    assert len(partition(got)) < len(docs) - 40  # copies across releases and architectures
    assert_consistent(first)
    declared = docs[5]["_id"]
    assert first[declared]["neardup_canonical"] and first[docs[0]["_id"]]["neardup_of"] == declared

    # Incremental: a new copy of a marked page, a new page, an edited page.
    copy = dict(docs[10], _id="new/copy", url=SITE + "new/copy")
    fresh = {"_id": "new/page", "html": "<html><body><p>" + " ".join(
        f"word{n} thing{n * 7 % 13}" for n in range(300)) + "</p></body></html>", "url": None}
    edited = dict(docs[20], html=docs[20]["html"].replace("<body", "<body><p>Changed.</p>", 1))
    load(es, names["index"], [copy, fresh, edited])
    assert main(hygiene(es_url, names["index"])) == 0
    summary = capsys.readouterr().out
    assert "3 checked" in summary and f"{len(docs) - 1} unchanged" in summary
    second = marks(es, names["index"])
    assert second["new/copy"]["neardup_cluster"] == first[docs[10]["_id"]]["neardup_cluster"]
    assert second["new/page"]["neardup_canonical"] and second["new/page"]["neardup_of"] is None
    assert_consistent(second)
    mapping = es.indices.get_mapping(index=names["index"])[names["index"]]["mappings"]
    assert mapping["properties"]["neardup_cluster"] == {"type": "keyword"}  # updated, not added
    assert all(len(m) == 4 for m in second.values())


def test_side_index_dry_run_and_two_processes_agree(
    es_url: str, es: Any, names: dict[str, str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]],
) -> None:
    before = es.count(index=names["index"])["count"]
    seq = write_order(es, names["index"])

    report = tmp_path / "report.html"
    assert main(hygiene(es_url, names["index"], "--dry-run", "--report", str(report))) == 0
    assert f"{len(docs)} marks would be written" in capsys.readouterr().out
    page = report.read_text(encoding="utf-8")
    assert "<h1>neardup report</h1>" in page and "Pairs side by side" in page
    assert "Text not available" not in page  # the pairs' texts were read back
    assert not es.indices.get(index=f"{names['index']}-*", allow_no_indices=True)  # none made
    assert es.count(index=names["index"])["count"] == before
    assert "neardup_cluster" not in es.indices.get_mapping(
        index=names["index"])[names["index"]]["mappings"].get("properties", {})

    fp = f"{names['index']}-two-fp"
    assert main(hygiene(es_url, names["index"], "--into", names["side"], "--processes", "2",
                        "--fingerprint-index", fp, "--window", "50")) == 0
    assert "marks written to side index" in capsys.readouterr().out
    side = marks(es, names["side"], key="doc_id")
    assert {d: m["neardup_cluster"] for d, m in side.items()} == dedup_clusters(tmp_path, docs)
    assert_consistent(side)
    after = write_order(es, names["index"])
    assert after == seq  # --into leaves the content index untouched


def test_slices_run_apart_then_one_finish_mark_dedups_clusters(
    es_url: str, es: Any, names: dict[str, str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]],
) -> None:
    staging = f"{names['index']}-neardup-fingerprints-staged"
    seq = write_order(es, names["index"])
    # Three machines, one slice each, run apart (one with two reader processes).
    for part, extra in (("0/3", ()), ("1/3", ("--processes", "2"))):
        assert main(hygiene(es_url, names["index"], "--slice", part, *extra)) == 0
    assert main(hygiene(es_url, names["index"], "--finish")) == 2  # slice 2/3 has not ended
    out, err = capsys.readouterr()
    assert out.count("nothing marked until one --finish run") == 2
    assert "slice 2/3 has not ended" in err
    assert main(hygiene(es_url, names["index"], "--slice", "2/3")) == 0
    es.indices.refresh(index=staging)
    assert es.count(index=staging)["count"] == len(docs)  # every document, each in one slice
    after = write_order(es, names["index"])
    assert after == seq  # slices write nothing on the documents

    capsys.readouterr()
    assert main(hygiene(es_url, names["index"], "--finish")) == 0
    assert f"{len(docs)} fingerprinted by the slices" in capsys.readouterr().out
    by_id = marks(es, names["index"])
    assert {d: m["neardup_cluster"] for d, m in by_id.items()} == dedup_clusters(tmp_path, docs)
    assert_consistent(by_id)  # one canonical per cluster, named by every other member
    assert not es.indices.exists(index=staging)  # taken up
    checkpoint = f"{names['index']}-neardup-fingerprints-checkpoint"
    es.indices.refresh(index=checkpoint)
    assert es.count(index=checkpoint)["count"] == 1  # the slices' checkpoints went with it


def test_resumes_after_sigkill_with_every_document_marked_once(
    es_url: str, es: Any, names: dict[str, str], tmp_path: Path,
) -> None:
    docs = sample_docs()[:90]
    load(es, names["index"], docs)
    argv = [sys.executable, "-m", "neardup_pipeline",
            *hygiene(es_url, names["index"], "--window", "8", "--batch", "4")]
    checkpoint = f"{names['index']}-neardup-fingerprints-checkpoint"
    key = f"{names['index']} -> {names['index']} (all)"
    killed = []
    # Killed twice: between windows once 16 documents are in, then while a window is being
    # sent (its undo record saved, its writes on the way) once 40 are.
    for at_least, states in ((16, ("running",)), (40, ("writing", "running"))):
        child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            state = checkpoint_read(es, checkpoint, key) or {}
            read = state.get("counts", {}).get("read", 0)
            if read >= at_least and (state["state"] == states[0] or (read >= at_least + 24
                                     and state["state"] in states)):
                os.kill(child.pid, signal.SIGKILL)
                killed.append(state["state"])
                break
            time.sleep(0.01)
        child.communicate(timeout=60)
    assert len(killed) == 2, killed
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "resumed from its checkpoint" in done.stdout
    by_id = marks(es, names["index"])
    assert set(by_id) == {d["_id"] for d in docs}  # none skipped
    assert_consistent(by_id)  # none half-written
    got = {doc_id: m["neardup_cluster"] for doc_id, m in by_id.items()}
    assert got == dedup_clusters(tmp_path, docs)  # as if never killed
    fingerprints = es.count(index=f"{names['index']}-neardup-fingerprints")["count"]
    assert fingerprints == len(docs)


def checkpoint_read(es: Any, index: str, key: str) -> dict[str, Any] | None:
    """The run's checkpoint document (a realtime get), None before the run made it."""
    found = es.options(ignore_status=(404, 503)).get(index=index, id=key)
    return found["_source"] if found.meta.status == 200 and found.get("found") else None


def test_bad_fields_are_tagged_counted_and_kept(
    es_url: str, es: Any, names: dict[str, str], capsys: pytest.CaptureFixture[str],
) -> None:
    good = sample_docs()[:6]
    bad: list[dict[str, Any]] = [
        {"_id": "no-html", "url": SITE + "x", "key": "k1"},
        {"_id": "list-html", "html": ["<p>a</p>"], "key": "k2"},
        {"_id": "number-html", "html": 42, "key": "k3"},
        {"_id": "number-url", "html": good[0]["html"], "url": 7, "key": "k4"},
        {"_id": "no-key", "html": good[1]["html"]},
        {"_id": "empty", "html": "<html><body></body></html>", "key": "k6"},
    ]
    docs = [dict(d, key=f"good-{n}") for n, d in enumerate(good)] + bad
    load(es, names["index"], docs)
    assert main(hygiene(es_url, names["index"], "--id-field", "key")) == 0
    out, err = capsys.readouterr()
    assert "5 bad_field" in out and "1 no_text" in out
    assert "missing html field 'html'" in err and "html field 'html' is a list" in err
    assert "url field 'url' is int" in err and "missing id field 'key'" in err
    by_id = marks(es, names["index"])
    assert len(by_id) == len(docs)  # every document marked, none dropped
    for doc_id in ("no-html", "list-html", "number-html", "number-url", "no-key"):
        assert by_id[doc_id]["neardup_status"] == "bad_field" and by_id[doc_id]["neardup_canonical"]
    assert by_id["empty"]["neardup_status"] == "no_text"
    # named by the id field: the copy that declares itself canonical took over good-0's cluster
    assert by_id[good[0]["_id"]]["neardup_of"] == "good-5"


def doc_examples() -> dict[str, tuple[str, dict[str, Any]]]:
    """The search examples of docs/hygiene.md: `POST pages/_search` blocks, by their title."""
    text = DOCS.read_text(encoding="utf-8")
    found = {}
    for title, method, body in re.findall(
            r"<!-- example: (\w+) -->\s*```\s*\n(POST|GET) pages/_search\n(.*?)```", text, re.S):
        found[title] = (method, json.loads(body))
    return found


def test_docs_search_examples_run_against_the_marked_index(
    es_url: str, es: Any, names: dict[str, str], capsys: pytest.CaptureFixture[str],
    docs: list[dict[str, Any]],
) -> None:
    assert main(hygiene(es_url, names["index"])) == 0
    by_id = marks(es, names["index"])
    clusters = {m["neardup_cluster"] for m in by_id.values()}
    examples = doc_examples()
    assert set(examples) == {"collapse", "canonical", "fresh"}

    _, body = examples["collapse"]
    hits = es.search(index=names["index"], **body)["hits"]["hits"]
    shown = [h["fields"]["neardup_cluster"][0] for h in hits]
    assert 1 < len(shown) == len(set(shown)) <= body["size"]  # one hit per cluster
    inner = hits[0]["inner_hits"]["copies"]["hits"]
    assert inner["hits"][0]["_source"]["neardup_canonical"] is True  # the copy to show

    _, body = examples["canonical"]
    total = es.search(index=names["index"], **body)["hits"]["total"]["value"]
    assert total == len(clusters)

    load(es, names["index"], [{"_id": "late", "html": docs[3]["html"], "url": SITE + "late"}])
    _, body = examples["fresh"]
    assert [h["_id"] for h in es.search(index=names["index"], **body)["hits"]["hits"]] == ["late"]
    assert main(hygiene(es_url, names["index"])) == 0
    assert es.search(index=names["index"], **body)["hits"]["total"]["value"] == 0
    capsys.readouterr()


def test_a_misspelt_field_marks_nothing_and_wiped_marks_come_back(
    es_url: str, es: Any, names: dict[str, str], capsys: pytest.CaptureFixture[str],
    docs: list[dict[str, Any]],
) -> None:
    """`--html-field body` on an index whose pages are in `html`: refused before any mark is
    written, with the flag named. Marks an earlier run wrote as `bad_field` over good ones (a
    version without that refusal) are put right by the next run that can read the field."""
    assert main(hygiene(es_url, names["index"])) == 0
    good = marks(es, names["index"])
    capsys.readouterr()
    assert main(hygiene(es_url, names["index"], "--html-field", "body")) == 2
    err = capsys.readouterr().err
    assert "--html-field 'body'" in err and "nothing was marked" in err
    assert marks(es, names["index"]) == good
    from elasticsearch import helpers

    helpers.bulk(es, ({"_op_type": "update", "_index": names["index"], "_id": doc_id, "doc": {
        "neardup_status": "bad_field", "neardup_canonical": True, "neardup_of": None,
        "neardup_cluster": doc_id}} for doc_id in good), refresh=True)
    assert main(hygiene(es_url, names["index"])) == 0
    assert marks(es, names["index"]) == good


def test_documents_without_marks_are_checked_again_though_their_fingerprints_are_stored(
    es_url: str, es: Any, names: dict[str, str], capsys: pytest.CaptureFixture[str],
    docs: list[dict[str, Any]],
) -> None:
    """Marks are in the content index; a document without them (its marks removed, or its
    fingerprint stored by a write that landed after its run stopped) is not taken as checked
    because its fingerprint is stored with this content: the next run marks it."""
    assert main(hygiene(es_url, names["index"])) == 0
    good = marks(es, names["index"])
    stripped = [d["_id"] for d in docs[3:40:3]]
    for doc_id in stripped:  # written again without them
        source = es.get(index=names["index"], id=doc_id)["_source"]
        es.index(index=names["index"], id=doc_id, refresh=True,
                 document={k: v for k, v in source.items() if not k.startswith("neardup_")})
    assert all(not m for i, m in marks(es, names["index"]).items() if i in stripped)
    capsys.readouterr()
    assert main(hygiene(es_url, names["index"])) == 0
    summary = capsys.readouterr().out
    assert f"{len(docs) - len(stripped)} unchanged" in summary, summary
    assert marks(es, names["index"]) == good
