"""`neardup eval DOCS.jsonl GOLD.jsonl`: each method's pairwise quality against gold groups."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.inputs import parse_document
from neardup_pipeline.config import CONTENTS, METHOD_CHOICES, NearDupConfig
from neardup_pipeline.errors import InputError
from neardup_pipeline.report.evaluate import (
    MethodReport,
    evaluate,
    plot_precision_recall,
    read_gold,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = sub.add_parser("eval", help=about("eval"))
    command.add_argument("docs", type=Path, help="JSONL documents, as for dedup")
    command.add_argument(
        "gold", type=Path, help='JSONL {"id", "group", "kind"} (group null: unscored)'
    )
    command.add_argument("--method", action="append", choices=METHOD_CHOICES,
                         help="method to evaluate (repeatable; default: auto and every method)")
    command.add_argument("--content", choices=CONTENTS, default=None,
                         help="text to fingerprint (default: the configuration's)")
    command.add_argument("--plot", type=Path, help="write the precision-recall plot (PNG) here")
    command.add_argument("--json", action="store_true", help="machine-readable output")
    command.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    gold = read_gold(args.gold)
    documents = []
    for number, line in enumerate(args.docs.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                documents.append(parse_document(line))
            except InputError as exc:
                raise InputError(f"{args.docs}:{number}: {exc}") from None
    missing = [d.doc_id for d in documents if d.doc_id not in gold]
    if missing:
        print(f"neardup: {len(missing)} documents have no gold line and are not scored "
              f"(first: {missing[0]})", file=sys.stderr)
    base = NearDupConfig()
    if args.content is not None:
        base = base.replace(content=args.content)
    reports = evaluate(documents, gold, args.method or list(METHOD_CHOICES), base)
    if args.plot:
        plot_precision_recall(reports, args.plot)
    if args.json:
        print(json.dumps([as_json(r) for r in reports], indent=2))
    else:
        print_reports(reports)
    return 0


def as_json(report: MethodReport) -> dict[str, Any]:
    return {"method": report.method, **report.scores.as_dict(),
            "recall_by_kind": report.by_kind, "sweep": report.sweep}


def print_reports(reports: list[MethodReport]) -> None:
    print("| method | precision | recall | F1 | true pairs | false pairs | missed pairs |")
    print("|---|---|---|---|---|---|---|")
    for r in reports:
        s = r.scores
        print(f"| {r.method} | {s.precision:.4f} | {s.recall:.4f} | {s.f1:.4f} | {s.true_pairs} "
              f"| {s.false_pairs} | {s.missed_pairs} |")
    kinds = sorted({kind for r in reports for kind in r.by_kind})
    if kinds:
        print("\nrecall per edit kind\n")
        print("| method | " + " | ".join(kinds) + " |")
        print("|---|" + "---|" * len(kinds))
        for r in reports:
            cells = [f"{r.by_kind[k]:.3f}" if k in r.by_kind else "" for k in kinds]
            print(f"| {r.method} | " + " | ".join(cells) + " |")
    for r in reports:
        if r.sweep:
            print(f"\n{r.method} sweep ({r.sweep[0]['parameter']}): "
                  + ", ".join(f"{row['value']}: P {row['precision']:.3f} R {row['recall']:.3f}"
                              for row in r.sweep))
