"""The `neardup` command run as a real subprocess, and the JSON Lines files it reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.documents import corpus_with_copies


def neardup(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup_pipeline", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        check=False,
    )


def write_jsonl(path: Path, rows: list[object]) -> Path:
    """One row a line; a string row is written as it is (a malformed line)."""
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
        encoding="utf-8",
    )
    return path


def dedup_outputs(tmp_path: Path, *options: list[str]) -> tuple[Path, list[list[object]]]:
    """`corpus_with_copies` (with one unreadable line) through `neardup dedup` once per option
    list; returns the input file and each run's output rows."""
    rows: list[object] = [{"id": d.doc_id, "text": d.text} for d in corpus_with_copies()]
    rows.insert(7, "not json")
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    outputs: list[list[object]] = []
    for n, extra in enumerate(options):
        out = tmp_path / f"out-{n}.jsonl"
        run = neardup("dedup", str(source), "-o", str(out), *extra)
        assert run.returncode == 1 and "skipped as unreadable" in run.stderr, run.stderr
        outputs.append([json.loads(line) for line in out.read_text().splitlines()])
        assert len(outputs[-1]) == len(rows) - 1
    return source, outputs
