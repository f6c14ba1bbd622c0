"""`neardup stats` / `report` / `search` sources and their clear errors (the browser test and
test_pages.py cover rendering and Elasticsearch results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup_pipeline.cli.main import main
from neardup_pipeline.report.stats import PageRecord, summarize
from tests.documents import OTHER, STEMMED_FLAGS, A, edit


def corpus(tmp_path: Path) -> Path:
    docs = [{"id": "a", "url": "http://e.org/a", "text": A},
            {"id": "b", "url": "https://e.org/b", "text": edit(A, 5)},
            {"id": "c", "text": edit(A, 5, "yankee")},
            {"id": "x", "text": OTHER}]
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    return path


EXPECTED = {"documents": 4, "checked": 4, "clusters": 2, "duplicates": 2,
            "duplicates_by_method": {"simhash": 2}, "cluster_sizes": {"1": 1, "3": 1}}


def stats_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["stats", *args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    return {k: data[k] for k in EXPECTED}


def test_stats_agree_on_jsonl_and_sqlite(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    docs, out, db = corpus(tmp_path), tmp_path / "out.jsonl", tmp_path / "fp.sqlite"
    assert main(["dedup", str(docs), "-o", str(out), "--method", "simhash",
                 "--backend", f"sqlite:{db}", "--language", "en", *STEMMED_FLAGS]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["url"] == "http://e.org/a" and "url" not in lines[2]
    assert stats_json(capsys, str(out)) == EXPECTED
    assert stats_json(capsys, f"sqlite:{db}") == EXPECTED
    assert main(["stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "clusters             2" in text and "by simhash" in text


def test_stats_and_report_leave_the_sqlite_index_as_they_found_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs, db = corpus(tmp_path), tmp_path / "fp.sqlite"
    assert main(["dedup", str(docs), "--method", "simhash", "--backend", f"sqlite:{db}",
                 "--language", "en", *STEMMED_FLAGS]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert stats_json(capsys, f"sqlite:{db}") == EXPECTED
    assert main(["report", f"sqlite:{db}", "-o", str(tmp_path / "r.html")]) == 0
    after = sorted(p.name for p in tmp_path.iterdir() if p.name != "r.html")
    assert after == before  # read-only: no -wal or -shm files left beside the index


def test_report_without_texts_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out.jsonl"
    assert main(["dedup", str(docs), "-o", str(out), "--method", "simhash",
                 "--language", "en", *STEMMED_FLAGS]) == 0
    report = tmp_path / "r.html"
    assert main(["report", str(out), "-o", str(report)]) == 0
    assert "4 documents, 2 clusters, 2 duplicates" in capsys.readouterr().out
    page = report.read_text(encoding="utf-8")
    assert page.count("Text not available") == 2 and "data:image/png;base64," in page
    best = tmp_path / "best.html"
    assert main(["report", str(out), "--docs", str(docs), "--canonical", "best",
                 "-o", str(best)]) == 0
    # best rule on the corpus: https://e.org/b is the canonical copy of a's cluster
    assert '<tr class=canon><td>canonical</td><td><a href="https://e.org/b"' in best.read_text()


@pytest.mark.parametrize("args, message", [
    (["stats"], "give a source"),
    (["stats", "memory"], "memory backend keeps nothing"),
    (["stats", "http://127.0.0.1:9"], "--es URL"),
    (["stats", "sqlite:/nonexistent/x.sqlite"], "no SQLite index"),
    (["report", "-o", "/tmp/never.html"], "give a source"),
    (["report", "out.jsonl", "--es", "http://127.0.0.1:9", "-o", "/tmp/never.html"],
     "give either a source"),
])
def test_clear_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_foreign_jsonl_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"not": "a verdict"}\n')
    assert main(["stats", str(path)]) == 2
    assert "x.jsonl:1: not a neardup verdict line" in capsys.readouterr().err


def test_search_needs_an_existing_pages_index(
    es_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = "neardup-pages-absent"
    assert main(["search", "anything", "--es", es_url, "--pages-index", missing]) == 2
    assert "no pages index 'neardup-pages-absent'" in capsys.readouterr().err


def test_summary_counts() -> None:
    records = [PageRecord("a", "a"), PageRecord("b", "a", "a", 0.9, "bag"),
               PageRecord("c", "c", status="no_text")]
    s = summarize(records)
    assert (s.documents, s.checked, s.clusters, s.duplicates) == (3, 2, 1, 1)
    assert s.by_method == {"bag": 1} and s.not_checked == {"no_text": 1}
    assert s.largest == [("a", 2)]
