"""`neardup anchors fit`: fit an anchor-word model on a corpus; and the model for `dedup`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.inputs import corpus_texts
from neardup_pipeline.cli.options import (
    add_fit_command,
    add_word_options,
    with_given,
    word_settings,
)
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.methods.anchors.fit import fit_corpus
from neardup_pipeline.methods.anchors.model import AnchorModel, FitSettings
from neardup_pipeline.text.settings import CONTENTS, TextSettings

__all__ = ["cmd_anchors_fit", "corpus_texts", "dedup_fingerprinter", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fit_cmd = add_fit_command(sub, "anchors", about("anchors"),
                              "fit a model on a corpus (JSONL or a folder)", "model file (JSON)")
    fit_cmd.add_argument("--words", type=int, default=FitSettings.words,
                         help=f"N anchors (default: {FitSettings.words})")
    fit_cmd.add_argument("--min-df", type=int, default=FitSettings.min_df,
                         help=f"least document frequency of a candidate (default: "
                         f"{FitSettings.min_df})")
    fit_cmd.add_argument("--max-df", type=float, default=FitSettings.max_df,
                         help=f"largest document frequency, a share of documents (default: "
                         f"{FitSettings.max_df})")
    fit_cmd.add_argument("--floor-precision", type=float, default=FitSettings.floor_precision,
                         help="stage 1 takes only words at least this precise (default: "
                         f"{FitSettings.floor_precision})")
    fit_cmd.add_argument("--edit", type=float, default=FitSettings.edit,
                         help="a small edit changes a count by max(edit x tf, edit floor) "
                         f"(default: {FitSettings.edit})")
    fit_cmd.add_argument("--edit-floor", type=float, default=FitSettings.edit_floor,
                         help=f"(default: {FitSettings.edit_floor})")
    fit_cmd.add_argument("--min-bits", type=int, default=FitSettings.min_bits,
                         help="a document is covered with this many set bits (default: "
                         f"{FitSettings.min_bits})")
    add_word_options(fit_cmd)
    fit_cmd.add_argument("--content", choices=CONTENTS, default=TextSettings.content,
                         help="text to fit on (use the one dedup and the crawl will read; "
                         f"default: {TextSettings.content})")
    fit_cmd.set_defaults(func=cmd_anchors_fit)


def cmd_anchors_fit(args: argparse.Namespace) -> int:
    config = with_given(NearDupConfig(methods=("simhash",)),
                        {"content": args.content, **word_settings(args)})
    settings = FitSettings(
        words=args.words, min_df=args.min_df, max_df=args.max_df,
        floor_precision=args.floor_precision, edit=args.edit, edit_floor=args.edit_floor,
        min_bits=args.min_bits,
    )
    started = time.perf_counter()
    model = fit_corpus(corpus_texts(args.corpus, config), config.text, settings)
    model.save(args.output)
    if (note := empty_model_note(model, settings.min_df)) is not None:
        print(note, file=sys.stderr)
    summary = {"model": str(args.output), "digest": model.digest, **model.stats,
               "total_seconds": round(time.perf_counter() - started, 3)}
    print(json.dumps(summary, ensure_ascii=False))
    return 0


def dedup_fingerprinter(config: NearDupConfig, corpus: Path) -> Fingerprinter | None:
    """`dedup --method anchors` without a model: fit one on the input itself (a first pass)."""
    if "anchors" not in config.method_names or config.anchors.model:
        return None
    if str(corpus) == "-":
        raise ConfigError("--method anchors on stdin needs --anchors-model (fit one first)")
    settings = FitSettings(min_bits=config.anchors.min_bits)
    model = fit_corpus(corpus_texts(corpus, config), config.text, settings)
    print(f"neardup: anchors model {model.digest} fitted on the input: {len(model.words)} words, "
          f"coverage {model.stats.get('coverage')}", file=sys.stderr)
    if (note := empty_model_note(model, settings.min_df)) is not None:
        print(note, file=sys.stderr)
    return Fingerprinter(config, model)


def empty_model_note(model: AnchorModel, min_df: int) -> str | None:
    """Why an anchors model finds nothing: no word qualified as an anchor, as happens with too
    few pages (None when it has anchors)."""
    if model.words:
        return None
    documents = model.stats.get("documents", 0)
    return (f"neardup: anchors found no anchor words in {documents} documents: too few pages to "
            f"fit a model (a word needs a document frequency of at least {min_df} "
            "and the fit needs many pages); fit one on a larger corpus with `neardup anchors "
            "fit` and pass it as --anchors-model")
