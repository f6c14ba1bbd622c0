"""Text reuse (`neardup reuse`) on real texts: which sources a suspect copied, and which passages.

    python benchmarks/text_reuse.py [--sources 10000] [--per-kind 250] [--sweep]

Part 1, the labelled pairs of ../shared/data/textreuse-ats-legal: the 8 books and the New York
1850 code section indexed; each book and both California 1851 sections looked up (a book's own
entry left out). Gold: ca1851-match reuses ny1850-match; remember00palm and
remembermeorholy00palm are two editions of one book; no other pair is labelled.

Part 2, suspects made by benchmarks/reuse_generator.py (seeded): `--per-kind` each of verbatim,
deletions, revision and negative, looked up among `--sources` real sections, per half (tune,
check). Pairs: a found source is right when it is the one a passage came from or holds that
passage's original text too (both releases of a manual page, one guide section for nine
architectures). Passages: characters, as PAN's plagiarism detection measures them (Potthast et
al., COLING 2010): precision = found characters inside a passage from that source, recall =
passage characters found with its source. Timing: one process, one core, the memory index
(indexing the sources, then the suspects) and the SQLite index (`neardup reuse index`, then
`--index`), whose output must be the same.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.reuse_generator import (
    ATS_DIR,
    KINDS,
    Inserted,
    Section,
    Suspect,
    host_texts,
    make_suspects,
    source_sections,
)
from neardup_pipeline.reuse import Passage, ReuseFinder, ReuseSettings, SourceReuse
from neardup_pipeline.reuse.index import MemoryPassageIndex
from neardup_pipeline.reuse.store import SqlitePassageIndex

_WORDS = re.compile(r"\w+")


def labelled_pairs(settings: ReuseSettings) -> None:
    texts = {f"ats/{p.stem}": p.read_text(encoding="utf-8", errors="replace")
             for p in sorted((ATS_DIR / "ats").glob("*.txt"))}
    legal = {f"legal/{p.stem}": p.read_text(encoding="utf-8", errors="replace")
             for p in sorted((ATS_DIR / "legal").glob("*.txt"))}
    finder = ReuseFinder(MemoryPassageIndex(), settings)
    for doc_id, text in [*texts.items(), ("legal/ny1850-match", legal["legal/ny1850-match"])]:
        finder.add_source(doc_id, text)
    gold = {("legal/ca1851-match", "legal/ny1850-match"),
            ("ats/remember00palm", "ats/remembermeorholy00palm"),
            ("ats/remembermeorholy00palm", "ats/remember00palm")}
    suspects = {**texts, "legal/ca1851-match": legal["legal/ca1851-match"],
                "legal/ca1851-nomatch": legal["legal/ca1851-nomatch"]}
    print("\n### textreuse-ats-legal\n")
    print("| suspect | source | gold | containment | passages | words in passages |")
    print("|---|---|---|---|---|---|")
    found = set()
    for doc_id, text in suspects.items():
        for r in finder.find(text):
            if r.source_id == doc_id:
                continue
            found.add((doc_id, r.source_id))
            words = sum(len(text[p.start : p.end].split()) for p in r.passages)
            print(f"| {doc_id} | {r.source_id} | {'yes' if (doc_id, r.source_id) in gold else 'no'}"
                  f" | {r.containment:.3f} | {len(r.passages)} | {words:,} |")
    print(f"\ngold pairs found: {len(gold & found)} of {len(gold)}; pairs found beyond the "
          f"gold: {len(found - gold)} (of {len(suspects) * (len(texts) + 1) - len(texts)} "
          "suspect-source pairs)")


class Truth:
    """Which found sources are right for a suspect's passage: its own source, or one that holds
    the same text where the passage was found (another release of the page, the same guide
    section for another architecture, a sentence two pages share)."""

    def __init__(self, sources: list[Section]) -> None:
        self.text = {s.doc_id: s.text for s in sources}

    def holds(self, suspect: Suspect, found: SourceReuse, inserted: Inserted) -> list[Passage]:
        """The found passages that are inserted's text, from its source or from a source
        holding that text."""
        right = []
        original = _shingles(self.text[inserted.source][inserted.source_start:
                                                        inserted.source_end])
        for p in found.passages:
            inside = max(0, min(p.end, inserted.end) - max(p.start, inserted.start))
            if 2 * inside < p.end - p.start:
                continue
            if found.source_id == inserted.source:
                right.append(p)
                continue
            there = _shingles(self.text[found.source_id][p.source_start:p.source_end])
            if there and 2 * len(there & original) >= len(there):
                right.append(p)
        return right


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    return {tuple(words[n : n + 3]) for n in range(len(words) - 2)}


def score(suspects: list[Suspect], results: dict[str, list[SourceReuse]], truth: Truth,
          ) -> dict[tuple[str, str], dict[str, float]]:
    """Per (half, kind): pair precision, recall and false pairs; passage character precision
    and recall."""
    tallies: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in suspects:
        t = tallies[(s.half, s.kind)]
        t["suspects"] += 1
        found = results[s.doc_id]
        right = {(r.source_id, i): truth.holds(s, r, i) for r in found for i in s.inserted}
        for i in s.inserted:
            t["gold_pairs"] += 1
            own = [r for r in found if r.source_id == i.source and right[(r.source_id, i)]]
            t["gold_found"] += bool(own)
            t["gold_found_any"] += any(right[(r.source_id, i)] for r in found)
            t["gold_chars"] += i.end - i.start
            covered: set[int] = set()
            for r in found:
                for p in right[(r.source_id, i)]:
                    covered.update(range(max(p.start, i.start), min(p.end, i.end)))
            t["gold_chars_found"] += len(covered)
        for r in found:
            t["found_pairs"] += 1
            good = [p for i in s.inserted for p in right[(r.source_id, i)]]
            t["found_right"] += bool(good)
            t["found_shared"] += bool(good) and all(r.source_id != i.source
                                                    for i in s.inserted)
            # not right, yet every passage lies in copied text: another source shares some
            # of its words (the commands a guide's translations share, a page header)
            t["found_partial"] += not good and all(
                any(2 * max(0, min(p.end, i.end) - max(p.start, i.start)) >= p.end - p.start
                    for i in s.inserted) for p in r.passages)
            for p in r.passages:
                t["found_chars"] += p.end - p.start
            for i in s.inserted:
                for p in right[(r.source_id, i)]:
                    t["found_chars_right"] += max(0, min(p.end, i.end) - max(p.start, i.start))
    return tallies


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


def print_scores(tallies: dict[tuple[str, str], dict[str, float]], halves: tuple[str, ...],
                 ) -> None:
    print("| half | kind | suspects | pair precision | pair recall | false pairs (% of "
          "suspects) | of which in copied text | pairs through a source holding the same text "
          "| passage precision | passage recall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for half in halves:
        for kind in KINDS:
            t = tallies[(half, kind)]
            false = t["found_pairs"] - t["found_right"]
            print(f"| {half} | {kind} | {int(t['suspects'])} | "
                  f"{_ratio(t['found_right'], t['found_pairs'])} | "
                  f"{_ratio(t['gold_found'], t['gold_pairs'])} | {int(false)} "
                  f"({100 * false / t['suspects']:.1f}%) | {int(t['found_partial'])} | "
                  f"{int(t['found_shared'])} | "
                  f"{_ratio(t['found_chars_right'], t['found_chars'])} | "
                  f"{_ratio(t['gold_chars_found'], t['gold_chars'])} |")


def run(finder: ReuseFinder, suspects: list[Suspect]) -> dict[str, list[SourceReuse]]:
    return {s.doc_id: finder.find(s.text) for s in suspects}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=10_000)
    parser.add_argument("--per-kind", type=int, default=250)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--sweep", action="store_true",
                        help="also score other min_words and max_gap on the tune half")
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    settings = ReuseSettings()
    print(f"settings: {settings}")
    labelled_pairs(settings)

    sections = source_sections()
    rng = random.Random(args.seed)
    sources = sorted(rng.sample(sections, min(args.sources, len(sections))),
                     key=lambda s: s.doc_id)
    suspects = make_suspects(sources, host_texts(), args.per_kind, seed=args.seed)
    words = sum(len(s.text.split()) for s in sources)
    print(f"\n### generated: {len(suspects):,} suspects against {len(sources):,} sources "
          f"({words:,} words)\n")
    truth = Truth(sources)

    started = time.process_time()
    finder = ReuseFinder(MemoryPassageIndex(), settings)
    for s in sources:
        finder.add_source(s.doc_id, s.text)
    indexed = time.process_time()
    results = run(finder, suspects)
    looked_up = time.process_time()
    print_scores(score(suspects, results, truth), ("tune", "check"))
    print(f"\nmemory index: {indexed - started:.1f} s CPU to index the sources, "
          f"{looked_up - indexed:.1f} s for the suspects; {looked_up - started:.1f} s in all")

    if not args.skip_sqlite:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "sources.db"
            started = time.process_time()
            with SqlitePassageIndex(path) as store:
                builder = ReuseFinder(store, settings)
                for s in sources:
                    builder.add_source(s.doc_id, s.text)
            indexed = time.process_time()
            with SqlitePassageIndex(path, create=False) as store:
                stored = run(ReuseFinder(store, settings), suspects)
            looked_up = time.process_time()
            size = path.stat().st_size / 2**20
        print(f"SQLite index ({size:.0f} MiB): {indexed - started:.1f} s CPU to build, "
              f"{looked_up - indexed:.1f} s for the suspects; same output as memory: "
              f"{stored == results}")

    if args.sweep:
        print("\n### tune half: other thresholds\n")
        tune = [s for s in suspects if s.half == "tune"]
        for min_words in (6, 7, 8):
            for max_gap in (10, 20, 30):
                changed = replace(settings, min_words=min_words, max_gap=max_gap)
                finder.settings = changed
                print(f"\nmin_words={min_words} max_gap={max_gap}\n")
                print_scores(score(tune, run(finder, tune), truth), ("tune",))
        finder.settings = settings


if __name__ == "__main__":
    main()
