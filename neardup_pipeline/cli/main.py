"""`neardup` command line: dedup a JSONL corpus, compare two documents, run the crawler."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from neardup_pipeline import __version__
from neardup_pipeline.cli import (
    anchors,
    compare,
    crawl,
    dedup,
    es,
    eval,
    hygiene,
    report,
    reuse,
    search,
    stats,
)
from neardup_pipeline.errors import NearDupError

# In the order `neardup --help` lists them.
COMMANDS = (dedup, compare, crawl, anchors, eval, search, stats, report, reuse, hygiene, es)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (NearDupError, OSError) as exc:
        print(f"neardup: error: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="neardup", description=__doc__)
    parser.add_argument("--version", action=_ShowVersion)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def version_text() -> str:
    """The version, and which HTML walk extracts text on this install."""
    from neardup_pipeline.text.extract import walk_in_use

    return f"neardup {__version__}\nHTML walk: {walk_in_use()}"


class _ShowVersion(argparse.Action):
    """`--version`, computed only when asked: finding the walk loads the compiled extension."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default,
                         help=help or "show the version and the HTML walk in use, and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(version_text())
        parser.exit()
