"""`neardup` command line: dedup a JSONL corpus, compare two documents, run the crawler."""

from __future__ import annotations

import argparse
import importlib
import os
import select
import signal
import sys
from collections.abc import Collection, Sequence
from typing import Any

from neardup_pipeline import __version__
from neardup_pipeline.cli.commands import COMMANDS
from neardup_pipeline.errors import NearDupError


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a reader that went away (`neardup stats | head -1`) ends it quietly."""
    # numpy's OpenBLAS starts a spinning thread per core when it loads, for matrix products
    # neardup never makes (its arrays are element-wise work): one thread spares that CPU in
    # every process a command starts. A value the user set wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # output that fits the buffer meets a closed pipe only here
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        return _closed_stdout_exit()


def _run(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(named_command(argv)).parse_args(argv)
    try:
        return int(args.func(args))
    except (NearDupError, OSError) as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_closed():
            raise
        print(f"neardup: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # A command that can say more (how far it got, how to resume) says it and returns 130
        # itself; this is the one line for the others, never a traceback.
        print(f"neardup: interrupted (Ctrl-C); {args.command} stopped before it completed",
              file=sys.stderr)
        return 128 + signal.SIGINT


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone: poll reports an error on it. A broken
    pipe elsewhere (a child process, a socket) stays an error."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return False
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _closed_stdout_exit() -> int:
    """Exit as a Unix tool killed by SIGPIPE looks to its shell (128 + 13), without a word:
    stdout now writes to /dev/null, so the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


def build_parser(loaded: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command: those in `loaded` (default: all) with their options and
    their code imported, the others listed by name and help line only."""
    parser = argparse.ArgumentParser(prog="neardup", description=__doc__)
    parser.add_argument("--version", action=_ShowVersion)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (home, about) in COMMANDS.items():
        if loaded is None or name in loaded:
            importlib.import_module(home).register(sub)
        else:
            sub.add_parser(name, help=about)
    return parser


def named_command(argv: Sequence[str]) -> set[str]:
    """The command an argument list names: its first argument not an option (`neardup` itself
    takes only --help and --version)."""
    return {next((arg for arg in argv if not arg.startswith("-")), "")} & set(COMMANDS)


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
