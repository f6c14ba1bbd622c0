"""The evaluation harness: pairwise scores, per-kind recall, sweeps and the plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup_pipeline import Document
from neardup_pipeline.report.evaluate import (
    GoldEntry,
    evaluate,
    pairs_of,
    plot_precision_recall,
    read_gold,
    recall_by_kind,
    score,
)
from tests.documents import ARTICLE


def gold_of(rows: dict[str, tuple[str | None, str | None]]) -> dict[str, GoldEntry]:
    return {doc_id: GoldEntry(group, kind) for doc_id, (group, kind) in rows.items()}


def test_pairs_ignore_unlabelled_documents() -> None:
    assert pairs_of({"a": "g", "b": "g", "c": "g", "d": None, "e": "h"}) == {
        ("a", "b"), ("a", "c"), ("b", "c")
    }


def test_pairwise_scores() -> None:
    gold = gold_of({"a": ("1", None), "b": ("1", None), "c": ("1", None), "d": ("2", None),
                    "x": (None, None)})
    predicted = {"a": "a", "b": "a", "c": "c", "d": "a", "x": "a"}
    scores = score(predicted, gold)
    # predicted pairs among scored docs: ab, ad, bd; gold pairs: ab, ac, bc
    assert (scores.true_pairs, scores.false_pairs, scores.missed_pairs) == (1, 2, 2)
    assert scores.precision == pytest.approx(1 / 3) and scores.recall == pytest.approx(1 / 3)
    assert scores.f1 == pytest.approx(1 / 3)


def test_perfect_and_empty_clusterings() -> None:
    gold = gold_of({"a": ("1", None), "b": ("1", None), "c": ("2", None)})
    assert score({"a": "a", "b": "a", "c": "c"}, gold).f1 == 1.0
    nothing = score({"a": "a", "b": "b", "c": "c"}, gold)
    assert nothing.precision == 1.0 and nothing.recall == 0.0 and nothing.f1 == 0.0


def test_recall_by_kind_counts_variants_against_their_original() -> None:
    gold = gold_of({
        "o1": ("1", "original"), "o1#r": ("1", "reorder"), "o1#w": ("1", "words5"),
        "o2": ("2", "original"), "o2#r": ("2", "reorder"), "o2#w": ("2", "words5"),
    })
    predicted = {"o1": "o1", "o1#r": "o1", "o1#w": "x", "o2": "o2", "o2#r": "o2", "o2#w": "o2"}
    assert recall_by_kind(predicted, gold) == {"reorder": 1.0, "words5": 0.5}


def test_read_gold_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "a", "group": "g", "kind": "x"}\n{"id": "b", "group": null}\n')
    assert read_gold(path) == {"a": GoldEntry("g", "x"), "b": GoldEntry(None, None)}
    path.write_text('{"id": "a", "group": "g"}\n{"group": "g"}\n')
    with pytest.raises(ValueError, match=r"gold\.jsonl:2"):
        read_gold(path)


def test_evaluate_sweeps_and_plots(tmp_path: Path) -> None:
    other = " ".join(f"unrelated{i} vocabulary{i % 50} here{i % 7}" for i in range(300))
    documents = [
        Document("a", text=ARTICLE), Document("a2", text="Posted on Monday. " + ARTICLE),
        Document("b", text=other), Document("b2", text=other + " closing remark"),
    ]
    gold = gold_of({"a": ("A", "original"), "a2": ("A", "dateline"),
                    "b": ("B", "original"), "b2": ("B", "tail")})
    reports = evaluate(documents, gold, ["simhash", "minhash"])
    simhash = reports[0]
    assert simhash.scores.f1 == 1.0 and simhash.by_kind == {"dateline": 1.0, "tail": 1.0}
    assert [row["value"] for row in simhash.sweep][:4] == [0, 1, 2, 3]
    assert all(0 <= row["precision"] <= 1 for row in reports[1].sweep)
    png = tmp_path / "pr.png"
    plot_precision_recall(reports, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    json.dumps([r.scores.as_dict() for r in reports])  # serialisable for --json output
