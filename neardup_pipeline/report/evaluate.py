"""`neardup eval`: pairwise precision, recall and F1 of each method against gold groups, recall per
edit kind, a threshold sweep, and a precision-recall plot.

Pairs are scored as in the near-duplicate literature: a predicted pair is two documents in the
same predicted cluster, a gold pair two documents in the same gold group; documents whose group
is null are not scored (neither their predicted nor gold pairs count).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ReportError
from neardup_pipeline.extras import install_command
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.methods.anchors.fit import fit_corpus
from neardup_pipeline.methods.anchors.model import AnchorModel, FitSettings
from neardup_pipeline.verdict.deduplicator import Deduplicator

Pair = tuple[str, str]

# The parameter each method's sweep varies, and the values tried (the default among them).
SWEEPS: dict[str, tuple[str, tuple[float, ...]]] = {
    "simhash": ("simhash_k", (0, 1, 2, 3, 4, 5, 6, 8, 10)),
    "minhash": ("minhash_threshold", (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)),
    "rarewords": ("rarewords_threshold", (0.5, 0.6, 0.7, 0.8, 0.9)),
    "anchors": ("anchors_tolerance", (0, 1, 2, 3)),
    "bag": ("bag_threshold", (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)),
    # auto: the bag's word-order check decides between reworded copies and template twins
    "auto": ("bag_order_threshold", (0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)),
}
# Signatures that need nothing but the document (so a sweep can reuse them with new keys).
SELF_CONTAINED = frozenset({"simhash", "minhash", "bag", "auto"})


@dataclass(frozen=True)
class GoldEntry:
    """One line of a gold file: the document's group (None: not scored) and edit kind."""

    group: str | None
    kind: str | None = None


@dataclass(frozen=True)
class Scores:
    """Pairwise quality of one clustering against the gold groups."""

    precision: float
    recall: float
    f1: float
    true_pairs: int
    false_pairs: int
    missed_pairs: int

    def as_dict(self) -> dict[str, float | int]:
        return dataclasses.asdict(self)


def read_gold(path: Path) -> dict[str, GoldEntry]:
    """GOLD.jsonl -> {id: GoldEntry}; a malformed line is an error naming its number."""
    gold: dict[str, GoldEntry] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            doc_id = str(obj["id"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a gold line ({exc})") from None
        group, kind = obj.get("group"), obj.get("kind")
        gold[doc_id] = GoldEntry(None if group is None else str(group),
                                 None if kind is None else str(kind))
    return gold


def pairs_of(labels: Mapping[str, str | None]) -> set[Pair]:
    """All unordered pairs of ids sharing a label (None labels form no pairs)."""
    members: dict[str, list[str]] = defaultdict(list)
    for doc_id, label in labels.items():
        if label is not None:
            members[label].append(doc_id)
    return {pair for ids in members.values() for pair in itertools.combinations(sorted(ids), 2)}


def score(predicted: Mapping[str, str], gold: Mapping[str, GoldEntry]) -> Scores:
    """Pairwise precision/recall/F1 of predicted clusters over the scored documents."""
    scored = {doc_id for doc_id, entry in gold.items() if entry.group is not None}
    got = pairs_of({d: c for d, c in predicted.items() if d in scored})
    truth = pairs_of({d: gold[d].group for d in scored})
    true_pairs = len(got & truth)
    precision = true_pairs / len(got) if got else 1.0
    recall = true_pairs / len(truth) if truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Scores(precision, recall, f1, true_pairs, len(got - truth), len(truth - got))


def recall_by_kind(
    predicted: Mapping[str, str], gold: Mapping[str, GoldEntry], original: str = "original"
) -> dict[str, float]:
    """Per edit kind: share of its documents put in the same cluster as their group's original.

    Without documents of kind `original` in a group, every gold pair counts for both its kinds.
    """
    by_group: dict[str, list[str]] = defaultdict(list)
    for doc_id, entry in gold.items():
        if entry.group is not None:
            by_group[entry.group].append(doc_id)
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for members in by_group.values():
        originals = [d for d in members if gold[d].kind == original]
        if originals:
            pairs = [(o, d) for o in originals for d in members if gold[d].kind != original]
        else:
            pairs = list(itertools.combinations(members, 2))
        for a, b in pairs:
            together = a in predicted and predicted.get(a) == predicted.get(b)
            for kind in {gold[b].kind, gold[a].kind if not originals else None} - {None}:
                assert kind is not None
                totals[kind][0] += 1
                totals[kind][1] += together
    return {kind: found / total for kind, (total, found) in sorted(totals.items())}


def cluster(
    documents: Sequence[Document],
    config: NearDupConfig,
    fingerprints: Sequence[Fingerprint] | None = None,
    fingerprinter: Fingerprinter | None = None,
) -> dict[str, str]:
    """Documents in input order through a fresh in-memory index -> {id: cluster}, the clusters
    as they stand once every document is in."""
    dedup = Deduplicator(MemoryIndex(), config, fingerprinter)
    checked: list[str] = []
    for n, doc in enumerate(documents):
        if fingerprints is None:
            verdict = dedup.process(doc)
        else:
            fp = rekey(fingerprints[n], dedup.fingerprinter)
            verdict = dedup.process_fingerprint(fp, doc.url)
        if verdict.status == "ok":
            checked.append(doc.doc_id)
    final = dedup.canonicals_of(checked)
    return {doc.doc_id: final.get(doc.doc_id, doc.doc_id) for doc in documents}


def _anchors_model(documents: Sequence[Document], config: NearDupConfig) -> AnchorModel | None:
    """Anchors need a fitted model: the configured one, else one fitted on these documents."""
    if config.anchors.model:
        return None  # the method loads it from the configuration
    reader = Fingerprinter(config.replace(methods=("simhash",)))
    return fit_corpus((reader.text_of(doc)[0] for doc in documents), config.text,
                      FitSettings(min_bits=config.anchors.min_bits))


def rekey(fp: Fingerprint, fingerprinter: Fingerprinter) -> Fingerprint:
    """The same signatures with the lookup keys of another parameter set (sweeps reuse work)."""
    keys = {name: fingerprinter.methods[name].keys(sig) for name, sig in fp.signatures.items()
            if name in fingerprinter.methods}
    return dataclasses.replace(fp, keys=keys)


@dataclass(frozen=True)
class MethodReport:
    """Everything `neardup eval` reports for one method."""

    method: str
    scores: Scores
    by_kind: dict[str, float]
    sweep: list[dict[str, Any]]


def evaluate(
    documents: Sequence[Document],
    gold: Mapping[str, GoldEntry],
    methods: Iterable[str],
    base: NearDupConfig | None = None,
) -> list[MethodReport]:
    """Each method alone at its configured threshold, plus its threshold sweep."""
    base = base or NearDupConfig()
    reports = []
    for method in methods:
        config = base.replace(methods=(method,))
        model = _anchors_model(documents, config) if method == "anchors" else None
        fingerprinter = Fingerprinter(config, model)
        fingerprints = (
            [fingerprinter.fingerprint(doc) for doc in documents]
            if method in SELF_CONTAINED else None
        )
        predicted = cluster(documents, config, fingerprints, fingerprinter)
        sweep = []
        parameter, values = SWEEPS.get(method, ("", ()))
        for value in values:
            swept = config.replace(**{parameter: value})
            clusters = cluster(documents, swept, fingerprints, Fingerprinter(swept, model))
            scores = score(clusters, gold)
            sweep.append({"parameter": parameter, "value": value, **scores.as_dict()})
        reports.append(
            MethodReport(method, score(predicted, gold), recall_by_kind(predicted, gold), sweep)
        )
    return reports


def plot_precision_recall(reports: Sequence[MethodReport], path: Path) -> None:
    """One precision-recall curve per method (its sweep), its default marked, as a PNG."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ReportError(f"--plot draws with matplotlib: {install_command('plots')}") from exc

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.8), dpi=120)
    for report in reports:
        if report.sweep:
            points = sorted(report.sweep, key=lambda row: row["recall"])
            axes.plot([p["recall"] for p in points], [p["precision"] for p in points],
                      marker=".", label=report.method)
        axes.scatter([report.scores.recall], [report.scores.precision], marker="o", s=40,
                     edgecolors="black", zorder=3)
        axes.annotate(f"{report.method} default", (report.scores.recall, report.scores.precision),
                      textcoords="offset points", xytext=(5, -10), fontsize=8)
    axes.set_xlabel("recall (pairs)")
    axes.set_ylabel("precision (pairs)")
    axes.set_xlim(0, 1.02)
    axes.set_ylim(0, 1.02)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower left")
    axes.set_title("neardup: pairwise precision-recall by threshold")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
