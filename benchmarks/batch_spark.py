"""`neardup batch` on Spark at scale: N documents made from the real pages of ../shared/data,
one job on local[2], and per stage its seconds, docs/s, shuffle bytes, and the job's peak
memory (the driver-and-executor JVM's heap, and the resident memory of the whole process tree:
JVM and Python workers).

The documents, as benchmarks/capacity.py makes them: the pages of the PostgreSQL manual (two
releases), the Debian installation guide (9 architectures, 3 languages) and the multisite pages
in turn, each with half its words replaced by words of other pages (a page of its own in a real
page's markup), and one time in three a copy of a recent one with 1 % of its words replaced:
real markup, real languages, a third of the pages near-duplicates.

Usage (the machine's other work matters: run it niced, alone):
    nice -n 10 python benchmarks/batch_spark.py --docs 100000 --folder /tmp/batch-bench
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import installation_guide_pages, multisite_pages, postgresql_pages
from neardup_pipeline.batch.job import BatchJob, run
from neardup_pipeline.batch.session import spark_session
from neardup_pipeline.config import NearDupConfig

TEXT = re.compile(r">([^<]+)<")
WORD = re.compile(r"\b\w{4,}\b")
COPIES, RECENT = 1 / 3, 10_000
STAGES = ("fingerprint", "candidates", "verify", "components", "canonical", "records", "write")


def originals() -> list[tuple[str, str]]:
    pages = [(p.doc_id, p.html.decode("utf-8", "replace"))
             for p in (*postgresql_pages(), *installation_guide_pages())]
    pages += [(p.doc_id, p.html.decode("utf-8", "replace") if isinstance(p.html, bytes)
               else p.html) for p in multisite_pages()]
    return pages


def variant(html: str, share: float, vocabulary: list[str], rng: random.Random) -> str:
    """`html` with `share` of the words of its text replaced (markup untouched)."""
    def words(match: re.Match[str]) -> str:
        return WORD.sub(lambda w: rng.choice(vocabulary) if rng.random() < share
                        else w.group(0), match.group(1))
    return TEXT.sub(lambda m: ">" + words(m) + "<", html)


def make_corpus(path: Path, docs: int, seed: int = 48) -> None:
    """`docs` pages: each a real page with half its words replaced (a page of its own, in a
    real page's markup and language), or, one time in three, a copy of one of the last 10,000
    pages written with 1 % of its words replaced (a near-duplicate)."""
    rng = random.Random(seed)
    pages = originals()
    vocabulary = sorted({w for _, html in pages[:300] for w in WORD.findall(html)})
    recent: list[tuple[str, str]] = []
    with path.open("w", encoding="utf-8") as out:
        for number in range(docs):
            if recent and rng.random() < COPIES:
                source, html = rng.choice(recent)
                body = variant(html, 0.01, vocabulary, rng)
            else:
                source, html = pages[number % len(pages)]
                body = variant(html, 0.5, vocabulary, rng)
            name = f"{number}/{source}"
            out.write(json.dumps({"id": name, "url": f"https://bench.example/{name}",
                                  "html": body}) + "\n")
            recent.append((source, body))
            if len(recent) > RECENT:
                recent.pop(rng.randrange(len(recent)))


class PeakMemory(threading.Thread):
    """The largest resident memory of this process's tree (the JVM and the Python workers)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.running = 0, True

    @staticmethod
    def tree_rss(root: int) -> int:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                children.setdefault(int(stat[1]), []).append(int(entry))
        total, todo = 0, [root]
        while todo:
            pid = todo.pop()
            todo += children.get(pid, [])
            with contextlib.suppress(OSError):
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * 4096
        return total

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, self.tree_rss(os.getpid()))
            time.sleep(0.5)


def rest(spark: Any, path: str) -> Any:
    base = spark.sparkContext.uiWebUrl
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{base}/api/v1/applications/{app}/{path}") as response:
        return json.load(response)


def shuffle_bytes(spark: Any) -> int:
    return sum(int(s.get("shuffleWriteBytes", 0)) for s in rest(spark, "stages"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/neardup-batch-bench"))
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--memory", default="2g", help="the local JVM's heap (driver memory)")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    corpus = args.folder / f"docs-{args.docs}.jsonl"
    if not corpus.exists():
        started = time.perf_counter()
        make_corpus(corpus, args.docs)
        print(f"made {corpus} ({corpus.stat().st_size / 1e6:,.0f} MB) in "
              f"{time.perf_counter() - started:,.0f} s", file=sys.stderr)
    out, work = args.folder / "out", args.folder / "out.stages"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {args.memory} pyspark-shell")
    spark = spark_session(args.master, args.partitions)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    memory = PeakMemory()
    memory.start()
    job = BatchJob((str(corpus),), str(out), "jsonl", str(work), NearDupConfig(),
                   partitions=args.partitions)
    started = time.perf_counter()
    summary = run(spark, job)
    total = time.perf_counter() - started
    memory.running = False
    executors = rest(spark, "allexecutors")
    heap = max(int((e.get("peakMemoryMetrics") or {}).get("JVMHeapMemory", 0))
               for e in executors)
    stages = rest(spark, "stages")
    print(f"\n{args.docs:,} documents, {args.master}, {args.partitions} partitions: "
          f"{summary.checked:,} checked, {summary.duplicates:,} duplicates in "
          f"{summary.clusters:,} clusters, {summary.pairs:,} pairs verified, "
          f"{summary.edges:,} matched, {summary.oversized} oversized buckets")
    print("\n| stage | seconds | docs/s |\n|---|---|---|")
    for name in STAGES:
        seconds = summary.seconds.get(name, 0.0)
        rate = args.docs / seconds if seconds else 0
        print(f"| {name} | {seconds:,.1f} | {rate:,.0f} |")
    print(f"| whole job | {total:,.1f} | {args.docs / total:,.0f} |")
    print(f"\nshuffle written: {shuffle_bytes(spark) / 1e6:,.1f} MB over {len(stages)} stages; "
          f"peak JVM heap {heap / 1e6:,.0f} MB; peak resident memory of JVM + Python workers "
          f"{memory.peak / 1e6:,.0f} MB")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
