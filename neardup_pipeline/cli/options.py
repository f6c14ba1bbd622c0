"""Options shared by several commands, and the configuration they describe."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neardup_pipeline.config import METHOD_CHOICES, NearDupConfig
from neardup_pipeline.methods.anchors.method import AnchorsSettings
from neardup_pipeline.methods.minhash import MODES, MinhashSettings
from neardup_pipeline.methods.simhash import SimhashSettings
from neardup_pipeline.sketch.settings import HASH_NAMES, SketchSettings
from neardup_pipeline.text.settings import CONTENTS, TextSettings

DEFAULT_PAGES_INDEX = "neardup-pages"


def add_method_options(parser: argparse.ArgumentParser) -> None:
    """How documents are fingerprinted and judged (dedup and compare); every default is the
    configuration's (an option left out changes nothing)."""
    parser.add_argument(
        "--method", action="append", choices=METHOD_CHOICES,
        help="detection method (repeatable; default auto = simhash + bag)",
    )
    parser.add_argument(
        "--content", choices=CONTENTS,
        help="text to fingerprint: the page without its site chrome, the whole page, or its main"
        f" content (resiliparse; default: {TextSettings.content})",
    )
    parser.add_argument("--language", help="ISO 639-1 code for every document (default: detect)")
    parser.add_argument("--hash", choices=HASH_NAMES,
                        help=f"word and shingle hash (default: {SketchSettings.hash})")
    parser.add_argument("--k", type=int,
                        help=f"simhash: max Hamming distance (default: {SimhashSettings.k})")
    parser.add_argument(
        "--threshold", type=float,
        help="minhash: resemblance (or containment) floor (default: "
        f"{MinhashSettings.threshold})",
    )
    parser.add_argument(
        "--exact", action="store_true", default=None,
        help="minhash: verify by exact Jaccard of shingle sets",
    )
    parser.add_argument("--anchors-model", help="anchors: fitted model (dedup: else fit on input)")
    parser.add_argument("--anchors-min-bits", type=int,
                        help="anchors: fewer set bits are never a duplicate (default: "
                        f"{AnchorsSettings.min_bits})")
    parser.add_argument(
        "--mode", choices=MODES,
        help="containment: flag a document mostly contained in an earlier one (minhash; "
        f"default: {MinhashSettings.mode})",
    )


def config_from_args(args: argparse.Namespace, **extra: Any) -> NearDupConfig:
    """The configuration that `add_method_options` describes, plus a command's own settings
    (flat names; None: the configuration's default)."""
    methods = tuple(args.method or (("minhash",) if args.mode == "containment" else ("auto",)))
    given = {
        "language": args.language,
        "hash": args.hash,
        "simhash_k": args.k,
        "minhash_threshold": args.threshold,
        "containment_threshold": args.threshold,
        "minhash_exact": args.exact,
        "mode": args.mode,
        "content": args.content,
        "anchors_model": args.anchors_model,
        "anchors_min_bits": args.anchors_min_bits,
        **extra,
    }
    return NearDupConfig(methods=methods).replace(
        **{name: value for name, value in given.items() if value is not None})


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
