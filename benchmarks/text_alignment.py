"""Text alignment measured as PAN measures it: plagdet, precision, recall and granularity per
obfuscation kind, on (suspect, source) pairs made from real texts.

    python benchmarks/text_alignment.py [--per-kind 200] [--seed 31] [--long] [--through-index]

Pairs: benchmarks/reuse_generator.py's `make_pan_pairs` (seeded; PAN's kinds none, random,
translation stand-in, summary, and negative pairs; sources are sections of about 1,200 words
of the PostgreSQL manuals, the Debian installation guide and 19th-century books, hosts are
unrelated web pages and book text). Each pair is aligned on its own (`align_texts`), as PAN's
text alignment task poses it, or with `--through-index` looked up among all the pairs' sources
as `neardup reuse` does (its candidate step included); the measures are
benchmarks/pan_measures.py's. Thresholds are
chosen on the `tune` half and reported on both.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.pan_measures import PanScores, Span, pan_scores
from benchmarks.reuse_generator import (
    PAN_KINDS,
    PanPair,
    host_texts,
    make_pan_pairs,
    source_sections,
)
from neardup_pipeline.reuse import ReuseFinder, ReuseSettings
from neardup_pipeline.reuse.finder import align_texts
from neardup_pipeline.reuse.index import MemoryPassageIndex

# The best PAN 2013 text alignment figures per kind (Sanchez-Perez, Sidorov & Gelbukh, PAN
# 2014 notebook, Table 3), what the issue asks to reach.
PAN_2013_BEST = {"none": 0.926, "random": 0.823, "translation": 0.852, "summary": 0.610}


def cases_and_detections(pairs: list[PanPair], sources: dict[str, str],
                         settings: ReuseSettings, finder: ReuseFinder | None,
                         ) -> tuple[list[Span], list[Span]]:
    """PAN's cases and the detections: of `align_texts` on each pair, or, with a `finder`,
    the passages its lookup finds from the pair's source (none when the index does not make
    that source a candidate)."""
    cases: list[Span] = []
    detections: list[Span] = []
    for pair in pairs:
        cases.extend(Span(pair.pair_id, c.start, c.end, c.source_start, c.source_end)
                     for c in pair.cases)
        if finder is None:
            found = align_texts(pair.suspect, sources[pair.source], settings)
        else:
            found = [p for r in finder.find(pair.suspect) if r.source_id == pair.source
                     for p in r.passages]
        detections.extend(Span(pair.pair_id, p.start, p.end, p.source_start, p.source_end)
                          for p in found)
    return cases, detections


def table(rows: list[tuple[str, str, PanScores, int]]) -> None:
    print("| half | kind | pairs | plagdet | precision | recall | granularity | detections "
          "| PAN 2013 best |")
    print("|---|---|---|---|---|---|---|---|---|")
    for half, kind, s, pairs in rows:
        print(f"| {half} | {kind} | {pairs} | {s.plagdet:.3f} | {s.precision:.3f} | "
              f"{s.recall:.3f} | {s.granularity:.3f} | {s.detections} | "
              f"{PAN_2013_BEST.get(kind, '')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-kind", type=int, default=200)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--long", action="store_true",
                        help="passages and summarised text of 1,000-3,000 words (PAN's long "
                        "cases), sources cut into sections of 4,000 words")
    parser.add_argument("--through-index", action="store_true",
                        help="look each suspect up among every pair's source (neardup reuse's "
                        "candidate step) instead of aligning the given pair")
    args = parser.parse_args()
    settings = ReuseSettings(language="en")
    print(f"settings: {settings}")
    sections = source_sections(section_words=4000 if args.long else 1200)
    sources = {s.doc_id: s.text for s in sections}
    lengths = {"passage_words": (1000, 3000), "summary_words": (1000, 3000)} if args.long else {}
    pairs = make_pan_pairs(sections, host_texts(), args.per_kind, seed=args.seed, **lengths)
    finder = None
    if args.through_index:
        finder = ReuseFinder(MemoryPassageIndex(), settings)
        for source_id in sorted({p.source for p in pairs}):
            finder.add_source(source_id, sources[source_id])
    rows = []
    started = time.process_time()
    for half in ("tune", "check"):
        mine = [p for p in pairs if p.half == half]
        cases, detections = cases_and_detections(mine, sources, settings, finder)
        for kind in PAN_KINDS:
            of_kind = {p.pair_id for p in mine if p.kind == kind}
            scores = pan_scores([c for c in cases if c.pair in of_kind],
                                [d for d in detections if d.pair in of_kind])
            rows.append((half, kind, scores, len(of_kind)))
        rows.append((half, "all", pan_scores(cases, detections), len(mine)))
    spent = time.process_time() - started
    how = "looked up through the index" if finder else "each pair aligned on its own"
    print(f"\n### {len(pairs):,} pairs, {args.per_kind} per kind (seed {args.seed}), {how}\n")
    table(rows)
    negatives = [r for r in rows if r[1] == "negative"]
    print(f"\ndetections on negative pairs: {sum(r[2].detections for r in negatives)}; "
          f"{spent:.1f} s CPU to align the {len(pairs):,} pairs")


if __name__ == "__main__":
    main()
