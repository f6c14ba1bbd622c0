"""`neardup reuse`: which sources each suspect text copied, and which passages.

    neardup reuse SOURCES.jsonl SUSPECTS.jsonl -o OUT.jsonl        sources indexed in memory
    neardup reuse index SOURCES.jsonl -o SOURCES.db                an SQLite index of sources
    neardup reuse --index SOURCES.db SUSPECTS.jsonl -o OUT.jsonl   suspects against that index
"""

from __future__ import annotations

import argparse
import errno
import json
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.inputs import corpus_documents, open_output, parse_document
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError, InputError, NearDupError
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.reuse import ReuseFinder, ReuseSettings, SourceReuse
from neardup_pipeline.reuse.index import MemoryPassageIndex, PassageIndex
from neardup_pipeline.reuse.store import SqlitePassageIndex
from neardup_pipeline.text.settings import CONTENTS, TextSettings
from neardup_pipeline.text.sniff import binary_kind

USAGE = """
  neardup reuse SOURCES.jsonl SUSPECTS.jsonl -o OUT.jsonl [options]
  neardup reuse index SOURCES.jsonl -o SOURCES.db [options]
  neardup reuse --index SOURCES.db SUSPECTS.jsonl -o OUT.jsonl [options]"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    defaults = ReuseSettings()
    reuse = sub.add_parser(
        "reuse", help=about("reuse"),
        usage=USAGE, description="Which sources each suspect text copied, and which passages, "
        "as character offsets in both texts (docs/reuse.md). `index` builds an SQLite index of "
        "the sources (or adds to one) for later runs with --index.")
    reuse.add_argument("inputs", nargs="+", metavar="FILE",
                       help="JSONL {id, text|html} per line, or a folder of text/HTML files "
                       "(suspects: '-' reads stdin)")
    reuse.add_argument("--index", type=Path, metavar="SOURCES.db",
                       help="look suspects up in this index (built by `neardup reuse index`)")
    reuse.add_argument("-o", "--output", type=Path,
                       help="OUT.jsonl (default: stdout); for `index`, the SQLite file to build")
    reuse.add_argument("--content", choices=CONTENTS, default=TextSettings.content,
                       help="text of an HTML document, which offsets count in (default: "
                       f"{TextSettings.content})")
    reuse.add_argument("--language", help="ISO 639-1 code for every text (default: detect)")
    reuse.add_argument("--min-words", type=int, default=defaults.min_words,
                       help="content words a passage must match (default: "
                       f"{defaults.min_words})")
    reuse.add_argument("--max-gap", type=int, default=defaults.max_gap,
                       help="content words of the suspect between two pieces of one passage "
                       f"(default: {defaults.max_gap})")
    reuse.add_argument("--max-source-gap", type=int, default=defaults.max_source_gap,
                       help="content words of the source between two pieces of one passage "
                       f"(default: {defaults.max_source_gap}; a summary leaves sentences out)")
    reuse.set_defaults(func=cmd_reuse)


def cmd_reuse(args: argparse.Namespace) -> int:
    settings = ReuseSettings(language=args.language, min_words=args.min_words,
                             max_gap=args.max_gap, max_source_gap=args.max_source_gap)
    reader = DocumentReader(args.content)
    inputs = [Path(p) for p in args.inputs]
    if args.inputs[0] == "index" and len(inputs) == 2 and args.index is None:
        if args.output is None:
            raise ConfigError("neardup reuse index: give the SQLite file to build with -o")
        with SqlitePassageIndex(args.output) as store:
            finder = ReuseFinder(store, settings)
            added = index_sources(finder, reader, inputs[1])
            total = store.count()
        print(f"{args.output}: {added:,} sources indexed ({total:,} in all)", file=sys.stderr)
        return 1 if reader.bad_lines or reader.unreadable else 0
    if args.index is not None:
        if len(inputs) != 1:
            raise ConfigError("with --index, give only the suspects: "
                              "neardup reuse --index SOURCES.db SUSPECTS.jsonl")
        with SqlitePassageIndex(args.index, create=False) as store:
            stopped = find_all(ReuseFinder(store, settings), reader, inputs[0], args.output)
        if stopped is not None:
            return stopped
    else:
        if len(inputs) != 2:
            raise ConfigError(f"give the sources and the suspects:{USAGE}")
        index: PassageIndex = MemoryPassageIndex()
        finder = ReuseFinder(index, settings)
        index_sources(finder, reader, inputs[0])
        stopped = find_all(finder, reader, inputs[1], args.output)
        if stopped is not None:
            return stopped
    if reader.bad_lines:
        print(f"neardup: {reader.bad_lines} input line(s) skipped as unreadable",
              file=sys.stderr)
    if reader.unreadable:
        print(f"neardup: {reader.unreadable} document(s) not text, written with status "
              "not_text", file=sys.stderr)
    return 1 if reader.bad_lines or reader.unreadable else 0


@dataclass(frozen=True)
class Text:
    """One input document as reuse reads it: its id, its text, and what went wrong, if
    anything, that did not stop it from being read (`status`)."""

    doc_id: str
    text: str
    status: str | None = None


class DocumentReader:
    """Documents of a JSONL file (or stdin) or a folder, each reduced to the text whose
    characters the offsets count: a text as given, an HTML page's extracted text.

    A line that is not valid UTF-8 is read with U+FFFD for its bad bytes and tagged
    `not_utf8`; a line that cannot be read as a document is reported on stderr and counted, and
    so is a document whose body is not text (tagged `not_text`)."""

    def __init__(self, content: str) -> None:
        config = NearDupConfig(methods=("simhash",)).replace(content=content)
        self._extractor = Fingerprinter(config)
        self.bad_lines = 0
        self.unreadable = 0  # documents read, whose body is not text (an image, an archive)

    def read(self, path: Path) -> Iterator[Text]:
        if path.is_dir():
            for doc in corpus_documents(path):
                yield self._text(doc, None)
            return
        with _open_bytes(path) as lines:
            for number, raw in enumerate(lines, start=1):
                if not raw.strip():
                    continue
                status = None
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    line, status = raw.decode("utf-8", errors="replace"), "not_utf8"
                try:
                    doc = parse_document(line)
                except InputError as exc:
                    self.bad_lines += 1
                    print(f"neardup: {path}:{number}: {exc}", file=sys.stderr)
                    continue
                yield self._text(doc, status)

    def _text(self, doc: Document, status: str | None) -> Text:
        if isinstance(doc.text, str) and doc.text.strip():
            # Given as text, read as text: the binary sniff is for bodies whose kind is
            # unknown, and a few control characters in a short text would trip it.
            limit = self._extractor.text.max_html_bytes
            truncated = len(doc.text) > limit
            return Text(doc.doc_id, doc.text[:limit],
                        status or ("truncated" if truncated else None))
        extracted = self._extractor.extract(doc)
        if extracted.parser == "binary":
            self.unreadable += 1
            print(f"neardup: {doc.doc_id!r} is not text ({binary_kind(doc.html or b'')}): "
                  "read as empty, status not_text", file=sys.stderr)
            return Text(doc.doc_id, "", "not_text")
        if extracted.truncated and status is None:
            status = "truncated"
        return Text(doc.doc_id, extracted.text, status)


class _open_bytes:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None

    def __enter__(self) -> Iterator[bytes]:
        if str(self.path) == "-":
            return iter(sys.stdin.buffer)
        self._file = self.path.open("rb")
        return iter(self._file)

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()


def index_sources(finder: ReuseFinder, reader: DocumentReader, path: Path) -> int:
    """Index every source of `path`; the number added (a repeated id keeps its first text)."""
    added = 0
    for doc in reader.read(path):
        if finder.add_source(doc.doc_id, doc.text):
            added += 1
        else:
            print(f"neardup: {path}: source {doc.doc_id!r} is already indexed: its first text "
                  "is kept", file=sys.stderr)
    return added


def find_all(finder: ReuseFinder, reader: DocumentReader, path: Path,
             output: Path | None) -> int | None:
    """One output line per readable suspect, in input order. None when every suspect was
    looked up; else the exit status of a run the index or Ctrl-C stopped partway, whose one
    line is printed: the suspects not looked up are written `"status": "unchecked"`, and the
    same command run again completes (the index is only read)."""
    done = 0
    looking_up: str | None = None  # the suspect being looked up (stdin cannot read it again)
    try:
        with open_output(output) as out:
            try:
                for doc in reader.read(path):
                    looking_up = doc.doc_id
                    found = finder.find(doc.text)
                    out.write(json.dumps(reuse_record(doc, found), ensure_ascii=False) + "\n")
                    done, looking_up = done + 1, None
            except (NearDupError, KeyboardInterrupt) as exc:
                interrupted = isinstance(exc, KeyboardInterrupt)
                rest = _ids_after(path, done, stdin=not interrupted)
                if str(path) == "-" and looking_up is not None:
                    rest.insert(0, looking_up)
                for doc_id in rest:
                    out.write(json.dumps({"id": doc_id, "sources": [], "status": "unchecked"},
                                         ensure_ascii=False) + "\n")
                what = "interrupted (Ctrl-C)" if interrupted else f"error: {exc}"
                print(f"neardup: {what}; {done:,} of {done + len(rest):,} suspects checked, the "
                      f"other {len(rest):,} written with status unchecked; run the same command "
                      "again to complete", file=sys.stderr)
                return 128 + signal.SIGINT if interrupted else 2
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(f"neardup: error: the disk holding {output or 'stdout'} is full ({exc.strerror}); "
              f"{done:,} suspects written before it filled; free space there, then run the "
              "same command again", file=sys.stderr)
        return 2
    return None


def _ids_after(path: Path, skip: int, *, stdin: bool) -> list[str]:
    """Ids of the readable documents of `path` after the first `skip` (stdin: those not read
    yet, when `stdin`), unreadable lines left out as the run leaves them out."""
    if path.is_dir():
        return [doc.doc_id for doc in corpus_documents(path)][skip:]
    if str(path) == "-" and not stdin:
        return []
    ids: list[str] = []
    with _open_bytes(path) as lines:
        for raw in lines:
            if raw.strip():
                try:
                    ids.append(parse_document(raw.decode("utf-8", errors="replace")).doc_id)
                except InputError:
                    continue
    return ids if str(path) == "-" else ids[skip:]


def reuse_record(doc: Text, found: list[SourceReuse]) -> dict[str, Any]:
    """{"id", "sources": [{"id", "containment", "passages": [[start, end, source_start,
    source_end], ...]}]}, with "status" when the text had no words or was read with a fault."""
    record: dict[str, Any] = {
        "id": doc.doc_id,
        "sources": [
            {"id": r.source_id, "containment": r.containment,
             "passages": [[p.start, p.end, p.source_start, p.source_end] for p in r.passages]}
            for r in found
        ],
    }
    status = doc.status or (None if any(c.isalnum() for c in doc.text) else "no_text")
    if status is not None:
        record["status"] = status
    return record


def reuse_output(path: Path) -> bool:
    """Whether `path` is a `neardup reuse` output (its first line has "sources"), which
    `neardup report` shows as passages side by side."""
    if not path.is_file():
        return False
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.strip():
                try:
                    first = json.loads(line)
                except ValueError:
                    return False
                return isinstance(first, dict) and isinstance(first.get("sources"), list)
    return False


def reuse_report(args: argparse.Namespace) -> int:
    """`neardup report OUT.jsonl --docs SUSPECTS --sources SOURCES -o REPORT.html`."""
    from neardup_pipeline.errors import SourceError
    from neardup_pipeline.report.reuse import render_reuse_report, reuse_line

    path = Path(args.source)
    lines = []
    with path.open(encoding="utf-8", errors="replace") as rows:
        for number, row in enumerate(rows, start=1):
            if row.strip():
                try:
                    lines.append(reuse_line(json.loads(row)))
                except (ValueError, KeyError, TypeError) as exc:
                    raise SourceError(f"{path}:{number}: not a neardup reuse line ({exc})"
                                      ) from None
    reader = DocumentReader(TextSettings.content)
    wanted = {line.doc_id for line in lines if line.sources}
    suspects = {} if args.docs is None else {
        doc.doc_id: doc.text for doc in reader.read(args.docs) if doc.doc_id in wanted}
    source_ids = {source[0] for line in lines for source in line.sources}
    sources = {} if args.sources is None else dict(_source_texts(args.sources, source_ids, reader))
    page = render_reuse_report(lines, suspects, sources, origin=str(path),
                               max_suspects=args.max_pairs)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(page, encoding="utf-8")
    print(f"{args.output}: {len(lines):,} suspects, {len(wanted):,} reusing a source")
    return 0


def _source_texts(path: Path, ids: set[str], reader: DocumentReader) -> Iterator[tuple[str, str]]:
    """(id, text) of the wanted sources: from a reuse index, or read from the sources' file."""
    if path.is_file():
        with path.open("rb") as head:
            is_sqlite = head.read(16) == b"SQLite format 3\x00"
        if is_sqlite:
            with SqlitePassageIndex(path, create=False) as store:
                yield from store.texts(ids)
            return
    for doc in reader.read(path):
        if doc.doc_id in ids:
            yield doc.doc_id, doc.text
