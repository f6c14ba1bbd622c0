"""How long each `neardup` command takes to start: whole processes, wall and CPU, best of N.

Usage: python benchmarks/startup.py [--runs N] [--neardup PATH]

Each command runs as a user runs it (the `neardup` console script beside this interpreter), on
inputs that cost next to nothing to check, so what is measured is the start-up: the interpreter,
the imports, the parsing of the options, the configuration and the index opened. `dedup` on an
empty input is the start-up before its first page; `dedup`, one page adds what the first page
loads (numpy, the parser, the methods); `compare` reads two such pages from files (each declares
its charset, as real pages do). Wall: time until the process has exited; CPU: its user
+ system time (os.wait4), threads and all. The fastest of N runs of each counts (a shared
machine only ever adds). "Loaded" names the heavy libraries the command imported (one more run
under `python -X importtime`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.processes import timed_process

HEAVY = ("numpy", "lxml", "bs4", "tqdm", "elasticsearch", "scrapy", "twisted", "pyspark",
         "neardup_pipeline.hygiene")
PAGE = ('<html><head><meta charset="utf-8"><title>Start-up</title></head><body><p>A page of a '
        "few words, checked to show what the first page loads.</p></body></html>")


@dataclass(frozen=True)
class Timing:
    label: str
    wall: float
    cpu: float
    loaded: tuple[str, ...]


def timed_run(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole process (compare exits 1 for "not duplicates")."""
    return timed_process(command, accepted=(0, 1))


def loaded_libraries(command: list[str]) -> tuple[str, ...]:
    """The HEAVY modules a run imports, read from `-X importtime` (PYTHONPROFILEIMPORTTIME)."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    names = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
             if line.startswith("import time:")}
    return tuple(name for name in HEAVY if name in names)


def measure(label: str, command: list[str], runs: int) -> Timing:
    timings = [timed_run(command) for _ in range(runs)]
    return Timing(label, min(w for w, _ in timings), min(c for _, c in timings),
                  loaded_libraries(command))


def commands(neardup: list[str], folder: Path) -> list[tuple[str, list[str]]]:
    empty = folder / "empty.jsonl"
    empty.write_text("")
    one = folder / "one.jsonl"
    one.write_text(json.dumps({"id": "a", "html": PAGE}) + "\n")
    page_a, page_b = folder / "a.html", folder / "b.html"
    page_a.write_text(PAGE)
    page_b.write_text(PAGE.replace("few", "handful of"))
    out = str(folder / "out.jsonl")
    sqlite = f"sqlite:{folder / 'index.sqlite'}"
    return [
        ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"]),
        ("neardup --version", [*neardup, "--version"]),
        ("neardup dedup EMPTY -o OUT (memory)", [*neardup, "dedup", str(empty), "-o", out]),
        ("neardup dedup EMPTY -o OUT --backend sqlite:PATH",
         [*neardup, "dedup", str(empty), "-o", out, "--backend", sqlite]),
        ("neardup dedup ONE_PAGE -o OUT (memory)", [*neardup, "dedup", str(one), "-o", out]),
        ("neardup compare A B (two small pages)", [*neardup, "compare", str(page_a), str(page_b)]),
    ]


def table(timings: list[Timing]) -> str:
    lines = ["| command | wall s | CPU s | loaded |", "|---|---|---|---|"]
    lines += [f"| `{t.label}` | {t.wall:.3f} | {t.cpu:.3f} | {', '.join(t.loaded) or '-'} |"
              for t in timings]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    script = Path(sys.executable).with_name("neardup")
    parser.add_argument("--neardup", default=str(script),
                        help=f"the neardup command (default: {script})")
    args = parser.parse_args()
    neardup = [args.neardup] if Path(args.neardup).exists() else \
        [sys.executable, "-m", "neardup_pipeline"]
    with tempfile.TemporaryDirectory(prefix="neardup-startup-") as tmp:
        timings = []
        for label, command in commands(neardup, Path(tmp)):
            timings.append(measure(label, command, args.runs))
            print(f"[startup] {label}: {timings[-1].wall:.3f} s", file=sys.stderr, flush=True)
    print(table(timings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
