"""Options shared by several commands, and the configuration they describe."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neardup_pipeline.config import CONTENTS, METHOD_CHOICES, NearDupConfig

DEFAULT_PAGES_INDEX = "neardup-pages"


def add_method_options(parser: argparse.ArgumentParser) -> None:
    """How documents are fingerprinted and judged (dedup and compare)."""
    parser.add_argument(
        "--method", action="append", choices=METHOD_CHOICES,
        help="detection method (repeatable; default auto = simhash + bag)",
    )
    parser.add_argument(
        "--content", choices=CONTENTS, default=NearDupConfig.content,
        help="text to fingerprint: the page without its site chrome (default), the whole page,"
        " or its main content (trafilatura)",
    )
    parser.add_argument("--language", help="ISO 639-1 code for every document (default: detect)")
    parser.add_argument("--hash", choices=("rabin", "xxh64"), default="rabin")
    parser.add_argument("--k", type=int, default=3, help="simhash: max Hamming distance")
    add_weighting_options(parser)
    parser.add_argument(
        "--threshold", type=float, default=0.8, help="minhash: resemblance (or containment) floor"
    )
    parser.add_argument(
        "--exact", action="store_true", help="minhash: verify by exact Jaccard of shingle sets"
    )
    parser.add_argument("--anchors-model", help="anchors: fitted model (dedup: else fit on input)")
    parser.add_argument("--anchors-min-bits", type=int, default=3,
                        help="anchors: fewer set bits are never a duplicate")
    parser.add_argument(
        "--mode", choices=("resemblance", "containment"), default="resemblance",
        help="containment: flag a document mostly contained in an earlier one (minhash)",
    )


def add_weighting_options(parser: argparse.ArgumentParser) -> None:
    """Simhash feature weights (dedup, compare and eval)."""
    parser.add_argument(
        "--simhash-weighting", choices=("tf", "idf"), default="tf",
        help="simhash feature weights: tf (default) or tf x idf from a frozen DF table",
    )
    parser.add_argument("--simhash-idf-model",
                        help="simhash idf: DF table from `neardup idf fit` (eval: else the input)")


def config_from_args(args: argparse.Namespace, **extra: Any) -> NearDupConfig:
    """The configuration that `add_method_options` describes, plus a command's own settings."""
    methods = tuple(args.method or (("minhash",) if args.mode == "containment" else ("auto",)))
    return NearDupConfig(
        methods=methods,
        language=args.language,
        hash=args.hash,
        simhash_k=args.k,
        simhash_weighting=args.simhash_weighting,
        simhash_idf_model=args.simhash_idf_model,
        minhash_threshold=args.threshold,
        containment_threshold=args.threshold,
        minhash_exact=args.exact,
        mode=args.mode,
        content=args.content,
        anchors_model=args.anchors_model,
        anchors_min_bits=args.anchors_min_bits,
        **extra,
    )


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


def add_es_options(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """Where the pages index is (search, stats, report)."""
    parser.add_argument("--es", required=required, metavar="URL",
                        help="Elasticsearch URL (credentials: NEARDUP_ES_API_KEY, or "
                        "NEARDUP_ES_USERNAME and NEARDUP_ES_PASSWORD)")
    parser.add_argument("--pages-index", default=DEFAULT_PAGES_INDEX,
                        help=f"pages index name (default {DEFAULT_PAGES_INDEX})")


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than `minimum`."""

    def parse(value: str) -> int:
        number = int(value)
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {number}")
        return number

    return parse
