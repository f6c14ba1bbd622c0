"""`neardup` command line: dedup a JSONL corpus, compare two documents, run the crawler."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlparse

from tqdm import tqdm

from neardup_pipeline import __version__
from neardup_pipeline.cli.anchors import add_anchors_command, dedup_fingerprinter
from neardup_pipeline.cli.eval import add_eval_command
from neardup_pipeline.cli.hygiene import add_hygiene_commands
from neardup_pipeline.cli.idf import add_idf_command, add_weighting_options
from neardup_pipeline.config import (
    CONTENTS,
    HTML_PARSERS,
    KNOWN_METHODS,
    METHOD_CHOICES,
    NearDupConfig,
)
from neardup_pipeline.errors import (
    ConfigError,
    FingerprintCrash,
    IndexFailure,
    InputError,
    SourceError,
)
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.index import open_index
from neardup_pipeline.methods.rarewords import shared_rare_words
from neardup_pipeline.parallel.offload import FingerprintWorkers, can_offload
from neardup_pipeline.verdict.deduplicator import Deduplicator, Verdict


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (ConfigError, IndexFailure, InputError, SourceError, OSError) as exc:
        print(f"neardup: error: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="neardup", description=__doc__)
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    dedup = sub.add_parser("dedup", help="flag near-duplicates in a JSONL corpus, in input order")
    dedup.add_argument(
        "input", type=Path, help="JSONL: one {id, html|text, url?} per line ('-': stdin)"
    )
    dedup.add_argument("-o", "--output", type=Path, help="JSONL verdicts (default: stdout)")
    _add_method_options(dedup)
    dedup.add_argument(
        "--backend", default="memory", help="memory (default), sqlite:PATH or http(s)://host:9200"
    )
    dedup.add_argument(
        "--fingerprint-index", default="neardup-fingerprints", help="Elasticsearch index name"
    )
    dedup.add_argument(
        "--df-pass", action="store_true",
        help="rarewords batch mode: count document frequencies over the whole input first",
    )
    dedup.add_argument(
        "--batch", type=_at_least(1), default=100, metavar="N",
        help="look up N documents in one request (Elasticsearch msearch); same verdicts "
        "(default: 100; 1: one at a time)",
    )
    dedup.add_argument(
        "--processes", type=_at_least(0), default=0, metavar="N",
        help="fingerprint in N child processes while this one does the lookups, in input order "
        "(simhash, minhash, bag, auto); same verdicts (default: 0, all in this process)",
    )
    dedup.add_argument(
        "--warmup", type=int, default=100,
        help="rarewords stream mode: no rarewords verdict until DF holds this many documents",
    )
    dedup.set_defaults(func=cmd_dedup)

    compare = sub.add_parser("compare", help="similarity of two documents under each method")
    compare.add_argument("a", help="file path or file:// URL (HTML or text)")
    compare.add_argument("b", help="file path or file:// URL (HTML or text)")
    _add_method_options(compare)
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    compare.set_defaults(func=cmd_compare)

    from neardup_pipeline.scrapy import crawl

    crawl_cmd = sub.add_parser("crawl", help="run the bundled crawler (no URL: the demo site)")
    crawl.add_arguments(crawl_cmd)
    crawl_cmd.set_defaults(func=crawl.run)
    add_anchors_command(sub)
    add_eval_command(sub)
    add_idf_command(sub)
    add_hygiene_commands(sub)
    return parser


def _add_method_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--method", action="append", choices=METHOD_CHOICES,
        help="detection method (repeatable; default auto = simhash + bag)",
    )
    parser.add_argument(
        "--content", choices=CONTENTS, default=NearDupConfig.content,
        help="text to fingerprint: the page without its site chrome (default), the whole page,"
        " or its main content (trafilatura)",
    )
    parser.add_argument(
        "--html-parser", choices=HTML_PARSERS, default=NearDupConfig.html_parser,
        help="tree parser of the page: lxml (libxml2, default) or lexbor (an HTML5 parser, the"
        " [lexbor] extra; an index remembers which one filled it)",
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


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than `minimum`."""

    def parse(value: str) -> int:
        number = int(value)
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {number}")
        return number

    return parse


def config_from_args(args: argparse.Namespace, **extra: Any) -> NearDupConfig:
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
        html_parser=args.html_parser,
        anchors_model=args.anchors_model,
        anchors_min_bits=args.anchors_min_bits,
        **extra,
    )


def cmd_dedup(args: argparse.Namespace) -> int:
    config = config_from_args(
        args, backend=args.backend, fingerprint_index=args.fingerprint_index,
        rarewords_warmup=0 if args.df_pass else args.warmup,  # batch: DF complete from the start
    )
    if args.df_pass and str(args.input) == "-":
        raise ConfigError("--df-pass reads the input twice: give a file, not stdin")
    if args.processes and not can_offload(config):
        raise ConfigError("--processes needs methods that fingerprint without the index "
                          "(simhash, minhash, bag, auto)")
    index = open_index(config.backend, config)
    bad_lines = 0
    workers = FingerprintWorkers(config, args.processes) if args.processes else None
    try:
        dedup = Deduplicator(index, config, dedup_fingerprinter(config, args.input))
        if args.df_pass:  # rarewords batch mode: DF of every readable document first
            learn_frequencies(dedup, args.input)
        with _open_output(args.output) as out, _open_input(args.input) as lines:
            progress = tqdm(lines, unit=" docs", disable=not sys.stderr.isatty(), file=sys.stderr)

            def emit(batch: list[Document], fingerprints: list[Fingerprint] | None) -> None:
                verdicts = dedup.process_batch(batch, fingerprints)
                for doc, verdict in zip(batch, verdicts, strict=True):
                    record = verdict_record(verdict)
                    if doc.url:
                        record["url"] = doc.url  # for `neardup report` and people reading it
                    out.write(json.dumps(record, ensure_ascii=False))
                    out.write("\n")

            def batches() -> Iterator[list[Document]]:
                nonlocal bad_lines
                batch: list[Document] = []
                for number, line in enumerate(progress, start=1):
                    if not line.strip():
                        continue
                    try:
                        batch.append(parse_document(line))
                    except InputError as exc:
                        bad_lines += 1
                        print(f"neardup: {args.input}:{number}: {exc}", file=sys.stderr)
                        continue
                    if len(batch) >= args.batch:
                        yield batch
                        batch = []
                if batch:
                    yield batch

            if workers is None:
                for batch in batches():
                    emit(batch, None)
            else:  # the children fingerprint batch n + 1 while this process decides batch n
                pending: tuple[list[Document], Callable[[], list[Fingerprint]]] | None = None
                for batch in batches():
                    started = (batch, workers.submit_many(batch))
                    if pending is not None:
                        emit(pending[0], _fingerprints_of(pending[1]))
                    pending = started
                if pending is not None:
                    emit(pending[0], _fingerprints_of(pending[1]))
        index.flush()
    finally:
        if workers is not None:
            workers.close()
        index.close()
    if bad_lines:
        print(f"neardup: {bad_lines} input line(s) skipped as unreadable", file=sys.stderr)
        return 1
    return 0


def _fingerprints_of(results: Callable[[], list[Fingerprint]]) -> list[Fingerprint] | None:
    """The children's fingerprints of a batch; None (fingerprint here) if a child died on it."""
    try:
        return results()
    except FingerprintCrash as exc:
        print(f"neardup: {exc}; fingerprinting that batch in this process", file=sys.stderr)
        return None


def learn_frequencies(dedup: Deduplicator, path: Path) -> None:
    """First pass of batch mode; unreadable lines are reported by the second pass."""
    with _open_input(path) as lines:
        for line in lines:
            if line.strip():
                try:
                    dedup.learn(parse_document(line))
                except InputError:
                    continue


def verdict_record(verdict: Verdict) -> dict[str, Any]:
    """The output line of DESIGN.md; `status` is added only when the document was not checked."""
    record: dict[str, Any] = {
        "id": verdict.doc_id,
        "duplicate_of": verdict.duplicate_of,
        "similarity": verdict.similarity,
        "method": verdict.method,
        "cluster": verdict.cluster or verdict.doc_id,
    }
    if verdict.status != "ok":
        record["status"] = verdict.status
    return record


def parse_document(line: str) -> Document:
    """One JSONL line -> Document; a clear InputError for anything else."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise InputError("not a JSON object")
    doc_id = obj.get("id")
    if doc_id is None or isinstance(doc_id, (dict, list)) or str(doc_id) == "":
        raise InputError("missing 'id'")
    html, text = obj.get("html"), obj.get("text")
    if not isinstance(html, (str, type(None))) or not isinstance(text, (str, type(None))):
        raise InputError("'html' and 'text' must be strings")
    if html is None and text is None:
        raise InputError(f"document {doc_id!r} has neither 'html' nor 'text'")
    url = obj.get("url")
    return Document(str(doc_id), html=html, text=text, url=str(url) if url else None)


class _open_input:
    """Context manager over the lines of a file or stdin."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def __enter__(self) -> Iterator[str]:
        if str(self.path) == "-":
            return iter(sys.stdin)
        self._file = self.path.open(encoding="utf-8", errors="replace")
        return iter(self._file)

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()


class _open_output:
    """Context manager over the output file or stdout."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        if self.path is None:
            return sys.stdout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        return self._file

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()


def load_document(ref: str) -> Document:
    """A file path or file:// URL -> Document (HTML when it looks like markup)."""
    parsed = urlparse(ref)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
    elif parsed.scheme in ("", "c", "d") or len(parsed.scheme) == 1:
        path = Path(ref)
    else:
        raise InputError(f"{ref}: only local files and file:// URLs can be compared")
    data = path.read_bytes()
    head = data[:2048].lstrip().lower()
    is_html = path.suffix.lower() in (".html", ".htm", ".xhtml") or head.startswith(
        (b"<!doctype", b"<html", b"<?xml")
    )
    url = path.resolve().as_uri()  # a relative path has no file:// form of its own
    if is_html:
        return Document(str(path), html=data, url=url)
    return Document(str(path), text=data.decode("utf-8", errors="replace"), url=url)


def cmd_compare(args: argparse.Namespace) -> int:
    if not args.method:
        args.method = list(KNOWN_METHODS)  # compare shows every method unless told otherwise
        if not args.anchors_model:
            args.method.remove("anchors")  # anchors needs a fitted model
    args.exact = True  # exact Jaccard and containment cost nothing for a single pair
    config = config_from_args(args)
    fingerprinter = Fingerprinter(config)
    doc_a, doc_b = load_document(args.a), load_document(args.b)
    fa, fb = fingerprinter.fingerprint(doc_a), fingerprinter.fingerprint(doc_b)
    result: dict[str, Any] = {
        "a": {"id": fa.doc_id, "words": fa.word_count, "language": fa.language},
        "b": {"id": fb.doc_id, "words": fb.word_count, "language": fb.language},
        "methods": {},
    }
    duplicate = False
    for name, method in fingerprinter.methods.items():
        if fa.status != "ok" or fb.status != "ok":
            result["methods"][name] = {"verdict": "no_text"}
            continue
        sa, sb = fa.signatures[name], fb.signatures[name]
        is_dup = method.is_duplicate(sa, sb)
        duplicate = duplicate or is_dup
        result["methods"][name] = {
            "similarity": round(method.similarity(sa, sb), 6),
            "duplicate": is_dup,
            "a": method.encode(sa),
            "b": method.encode(sb),
            **method.explain(sa, sb),
        }
    result["duplicate"] = duplicate
    result["shared_shingles"] = shared_shingles(fingerprinter, doc_a, doc_b, config)
    if "similarity" in result["methods"].get("rarewords", {}):
        words_a = fingerprinter.normalizer.words(fingerprinter.text_of(doc_a)[0]).words
        result["shared_rare_words"] = shared_rare_words(
            words_a, fa.signatures["rarewords"], fb.signatures["rarewords"], fingerprinter.hasher
        )
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(f"A: {fa.doc_id} ({fa.word_count} words, {fa.language})")
        print(f"B: {fb.doc_id} ({fb.word_count} words, {fb.language})")
        for name, info in result["methods"].items():
            shown = {k: v for k, v in info.items() if name == "simhash" or k not in ("a", "b")}
            details = ", ".join(f"{k}={v}" for k, v in shown.items())
            print(f"{name}: {details}")
        shared = result["shared_shingles"]
        print(f"shared {config.minhash_shingle}-word shingles: {shared['count']} "
              f"of {shared['a']} (A) and {shared['b']} (B)")
        for example in shared["examples"]:
            print(f"  \u00b7 {example}")
        if "shared_rare_words" in result:
            print("shared rare words:", ", ".join(result["shared_rare_words"]) or "none")
        print("verdict:", "near-duplicate" if duplicate else "distinct")
    return 0 if duplicate else 1


def shared_shingles(
    fingerprinter: Fingerprinter, doc_a: Document, doc_b: Document, config: NearDupConfig,
    examples: int = 3,
) -> dict[str, Any]:
    """The canonical-word shingles both documents contain: the why behind a resemblance."""
    size = config.minhash_shingle
    sets = []
    for doc in (doc_a, doc_b):
        words = fingerprinter.normalizer.words(fingerprinter.text_of(doc)[0]).words
        sets.append({" ".join(words[i : i + size]) for i in range(max(len(words) - size + 1, 0))})
    common = sorted(sets[0] & sets[1])
    step = max(len(common) // examples, 1)
    return {
        "count": len(common), "a": len(sets[0]), "b": len(sets[1]),
        "examples": common[::step][:examples],
    }
