"""`neardup idf fit`: a frozen DF table for simhash idf weighting (NEARDUP_SIMHASH_IDF_MODEL)."""

from __future__ import annotations

import argparse
import json
import time

from neardup_pipeline.cli.inputs import corpus_texts
from neardup_pipeline.cli.options import add_fit_command
from neardup_pipeline.config import CONTENTS, NearDupConfig
from neardup_pipeline.methods.idf import fit_texts


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fit_cmd = add_fit_command(sub, "idf", "frozen document frequencies (simhash idf weighting)",
                              "count word DF over a corpus (JSONL or a folder)", "DF table (JSON)")
    fit_cmd.add_argument("--min-df", type=int, default=2,
                         help="store words in at least this many documents (others count as 1)")
    fit_cmd.add_argument("--language", help="ISO 639-1 code for every document (default: detect)")
    fit_cmd.add_argument("--hash", choices=("rabin", "xxh64"), default="rabin")
    fit_cmd.add_argument("--content", choices=CONTENTS, default=NearDupConfig.content)
    fit_cmd.set_defaults(func=cmd_idf_fit)


def cmd_idf_fit(args: argparse.Namespace) -> int:
    config = NearDupConfig(methods=("simhash",), language=args.language, hash=args.hash,
                           content=args.content)
    started = time.perf_counter()
    table = fit_texts(corpus_texts(args.corpus, config), config, max(1, args.min_df))
    table.save(args.output)
    summary = {"table": str(args.output), "digest": table.digest, "documents": table.documents,
               **table.stats, "seconds": round(time.perf_counter() - started, 3)}
    print(json.dumps(summary, ensure_ascii=False))
    return 0
