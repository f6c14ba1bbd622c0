"""`neardup anchors fit`: fit an anchor-word model on a corpus; and the model for `dedup`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from neardup_pipeline.config import CONTENTS, NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.methods.anchors.model import fit_corpus

_TEXT_SUFFIXES = (".html", ".htm", ".xhtml", ".txt", ".text")


def add_fit_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, about: str,
    fit_help: str, output_help: str,
) -> argparse.ArgumentParser:
    """`neardup NAME fit CORPUS -o OUTPUT`: the parser of a model fitted on a corpus."""
    group = sub.add_parser(name, help=about)
    actions = group.add_subparsers(dest=f"{name}_command", required=True)
    fit_cmd = actions.add_parser("fit", help=fit_help)
    fit_cmd.add_argument("corpus", type=Path, help="JSONL {id, html|text} or a folder of HTML/text")
    fit_cmd.add_argument("-o", "--output", type=Path, required=True, help=output_help)
    return fit_cmd


def add_anchors_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fit_cmd = add_fit_command(sub, "anchors", "anchor-word models (Ilyinsky et al.)",
                              "fit a model on a corpus (JSONL or a folder)", "model file (JSON)")
    defaults = NearDupConfig()
    fit_cmd.add_argument("--words", type=int, default=defaults.anchors_words, help="N anchors")
    fit_cmd.add_argument("--min-df", type=int, default=defaults.anchors_min_df)
    fit_cmd.add_argument("--max-df", type=float, default=defaults.anchors_max_df,
                         help="share of documents")
    fit_cmd.add_argument("--floor-precision", type=float,
                         default=defaults.anchors_floor_precision)
    fit_cmd.add_argument("--edit", type=float, default=defaults.anchors_edit)
    fit_cmd.add_argument("--edit-floor", type=float, default=defaults.anchors_edit_floor)
    fit_cmd.add_argument("--min-bits", type=int, default=defaults.anchors_min_bits)
    fit_cmd.add_argument("--language", help="ISO 639-1 code for every document (default: detect)")
    fit_cmd.add_argument("--content", choices=CONTENTS, default=defaults.content,
                         help="text to fit on (use the one dedup and the crawl will read)")
    fit_cmd.set_defaults(func=cmd_anchors_fit)


def corpus_documents(path: Path) -> Iterator[Document]:
    """Documents of a JSONL file, or of every HTML/text file under a folder (sorted paths)."""
    from neardup_pipeline.cli.main import load_document, parse_document
    from neardup_pipeline.errors import InputError

    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.suffix.lower() in _TEXT_SUFFIXES):
            yield load_document(str(file))
        return
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    yield parse_document(line)
                except InputError as exc:
                    print(f"neardup: {path}:{number}: {exc} (skipped)", file=sys.stderr)


def corpus_texts(path: Path, config: NearDupConfig) -> Iterator[str]:
    extractor = Fingerprinter(config.replace(methods=("simhash",)))
    for doc in corpus_documents(path):
        yield extractor.text_of(doc)[0]


def cmd_anchors_fit(args: argparse.Namespace) -> int:
    config = NearDupConfig(
        methods=("simhash",), language=args.language, anchors_words=args.words,
        anchors_min_df=args.min_df, anchors_max_df=args.max_df,
        anchors_floor_precision=args.floor_precision, anchors_edit=args.edit,
        anchors_edit_floor=args.edit_floor, anchors_min_bits=args.min_bits, content=args.content,
    )
    started = time.perf_counter()
    model = fit_corpus(corpus_texts(args.corpus, config), config)
    model.save(args.output)
    summary = {"model": str(args.output), "digest": model.digest, **model.stats,
               "total_seconds": round(time.perf_counter() - started, 3)}
    print(json.dumps(summary, ensure_ascii=False))
    return 0


def dedup_fingerprinter(config: NearDupConfig, corpus: Path) -> Fingerprinter | None:
    """`dedup --method anchors` without a model: fit one on the input itself (a first pass)."""
    if "anchors" not in config.method_names or config.anchors_model:
        return None
    if str(corpus) == "-":
        raise ConfigError("--method anchors on stdin needs --anchors-model (fit one first)")
    model = fit_corpus(corpus_texts(corpus, config), config)
    print(f"neardup: anchors model {model.digest} fitted on the input: {len(model.words)} words, "
          f"coverage {model.stats.get('coverage')}", file=sys.stderr)
    return Fingerprinter(config, model)
