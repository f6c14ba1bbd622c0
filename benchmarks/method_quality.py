"""Precision and recall of each method against exact Jaccard >= 0.8, and its docs/s.

Corpora from ../shared/data: the PostgreSQL 15.18/15.20 manuals and the installation guide
(English, Russian, Catalan; 9 architectures each). A pair counts as a true near-duplicate when the
exact Jaccard resemblance of its 10-word shingle sets (canonical words: NFKC, casefold, stop words
out, Snowball stems) is >= 0.8. Truth pairs are taken within the corpus's groups (same page name,
same section) plus every pair a method predicts, each verified exactly; predicted pairs are all
pairs that share a cluster. Usage: python benchmarks/method_quality.py [--methods simhash minhash]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import Page, installation_guide_pages, postgresql_pages
from benchmarks.provenance import measured_at
from neardup_pipeline import Deduplicator, Document, Fingerprint, Fingerprinter, NearDupConfig
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.methods.anchors.fit import fit
from neardup_pipeline.methods.anchors.model import FitSettings
from neardup_pipeline.methods.minhash import jaccard

GOLD_THRESHOLD = 0.8
STREAM = "--stream" in sys.argv  # rarewords: DF so far (stream) instead of a DF pass (batch)


def corpora() -> dict[str, Sequence[Page]]:
    guide = installation_guide_pages()
    return {
        "postgresql": postgresql_pages(),
        **{f"guide-{lang}": [p for p in guide if p.info["lang"] == lang]
           for lang in ("en", "ru", "ca")},
    }


def cluster_pairs(clusters: dict[str, str]) -> set[tuple[str, str]]:
    members: dict[str, list[str]] = defaultdict(list)
    for doc_id, cluster in clusters.items():
        members[cluster].append(doc_id)
    return {p for ids in members.values() for p in itertools.combinations(sorted(ids), 2)}


def exact_jaccard(fingerprints: dict[str, Fingerprint], a: str, b: str) -> float:
    """Exact Jaccard of two pages' 10-word shingle sets (0 when either has no text)."""
    fa, fb = fingerprints[a], fingerprints[b]
    if fa.status != "ok" or fb.status != "ok":
        return 0.0
    return jaccard(fa.signatures["minhash"].shingles, fb.signatures["minhash"].shingles)


def fit_anchors(name: str, pages: Sequence[Page], config: NearDupConfig) -> Fingerprinter | None:
    """Anchors: a model fitted on the corpus's own pages (text only; groups only measure)."""
    if "anchors" not in config.methods:
        return None
    start = time.perf_counter()
    extractor = Fingerprinter(config.replace(methods=("simhash",)))
    texts = [extractor.text_of(Document(p.doc_id, html=p.html))[0] for p in pages]
    words = [extractor.normalizer.words(text).words for text in texts]
    prepared = time.perf_counter()
    settings = FitSettings(min_bits=config.anchors.min_bits)  # the fit command's defaults
    model = fit(words, settings, extractor.normalizer.params())
    print(f"<!-- anchors model for {name}: {len(model.words)} words, coverage "
          f"{model.stats['coverage']}, fit {time.perf_counter() - prepared:.2f}s on {len(pages)} "
          f"pages (+{prepared - start:.1f}s extraction and normalisation) -->",
          file=sys.stderr, flush=True)
    return Fingerprinter(config, model)


def run(methods: list[str], config_extra: dict[str, object]) -> None:
    exact = Fingerprinter(NearDupConfig(methods=("minhash",)).replace(minhash_exact=True))
    print(f"{measured_at()}\n")
    print("| corpus | method | docs/s | predicted pairs | precision | recall | F1 |")
    print("|---|---|---|---|---|---|---|")
    for name, pages in corpora().items():
        shingles = {
            p.doc_id: exact.fingerprint(Document(p.doc_id, html=p.html)) for p in pages
        }

        exact_j = functools.partial(exact_jaccard, shingles)

        groups: dict[str, list[str]] = defaultdict(list)
        for page in pages:
            groups[page.group].append(page.doc_id)
        group_pairs = {p for ids in groups.values() for p in itertools.combinations(sorted(ids), 2)}
        truth = {pair for pair in group_pairs if exact_j(*pair) >= GOLD_THRESHOLD}
        for method in methods:
            config = NearDupConfig(methods=(method,)).replace(**config_extra)  # type: ignore[arg-type]
            dedup = Deduplicator(MemoryIndex(), config, fit_anchors(name, pages, config))
            start = time.perf_counter()
            if method == "rarewords" and not STREAM:  # batch: DF of the whole corpus first
                for p in pages:
                    dedup.learn(Document(p.doc_id, html=p.html))
            clusters = {
                p.doc_id: dedup.process(Document(p.doc_id, html=p.html)).cluster or p.doc_id
                for p in pages
            }
            rate = len(pages) / (time.perf_counter() - start)
            predicted = cluster_pairs(clusters)
            good = {pair for pair in predicted if exact_j(*pair) >= GOLD_THRESHOLD}
            all_truth = truth | good
            precision = len(good) / len(predicted) if predicted else 1.0
            recall = len(good) / len(all_truth) if all_truth else 1.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            print(f"| {name} | {method} | {rate:,.0f} | {len(predicted)} | {precision:.4f} "
                  f"| {recall:.4f} | {f1:.4f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--methods", nargs="+", default=["simhash", "minhash"])
    parser.add_argument("--stream", action="store_true", help="rarewords: no DF pass")
    args = parser.parse_args()
    run(args.methods, {})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
