"""`neardup dedup CORPUS.jsonl`: one verdict line per document, in input order."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import xxhash

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.inputs import open_input, open_output, parse_document
from neardup_pipeline.cli.options import (
    add_es_connection_options,
    add_es_template_option,
    add_method_options,
    at_least,
    config_from_args,
    es_settings,
)
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.document import Document
from neardup_pipeline.errors import ConfigError, FingerprintCrash, InputError, NearDupError
from neardup_pipeline.index.elastic.settings import ElasticSettings
from neardup_pipeline.methods.settings import RarewordsSettings
from neardup_pipeline.parallel.eligible import can_offload
from neardup_pipeline.verdict.verdict import Verdict, verdict_record

if TYPE_CHECKING:
    from neardup_pipeline.fingerprint import Fingerprint
    from neardup_pipeline.index import FingerprintIndex
    from neardup_pipeline.parallel.offload import FingerprintWorkers
    from neardup_pipeline.verdict.deduplicator import Deduplicator


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dedup = sub.add_parser("dedup", help=about("dedup"))
    dedup.add_argument(
        "input", type=Path,
        help="JSONL: one {id, html|text, url?} per line, `url` the id where `id` is missing (a "
        "crawl feed); a repeated id is checked once, its later lines say \"status\": "
        "\"repeated\" ('-': stdin)",
    )
    dedup.add_argument("-o", "--output", type=Path,
                       help="JSONL verdicts (default or '-': stdout)")
    add_method_options(dedup)
    dedup.add_argument(
        "--backend", default="memory", help="memory (default), sqlite:PATH or http(s)://host:9200"
    )
    dedup.add_argument(
        "--fingerprint-index",
        help=f"Elasticsearch index name (default: {ElasticSettings.fingerprint_index})",
    )
    dedup.add_argument(
        "--df-pass", action="store_true",
        help="rarewords batch mode: count document frequencies over the whole input first",
    )
    dedup.add_argument(
        "--batch", type=at_least(1), default=100, metavar="N",
        help="look up N documents in one request (Elasticsearch msearch); same verdicts "
        "(default: 100; 1: one at a time)",
    )
    dedup.add_argument(
        "--processes", type=at_least(0), default=0, metavar="N",
        help="fingerprint in N child processes while this one does the lookups, in input order "
        "(simhash, minhash, bag, auto); same verdicts (default: 0, all in this process)",
    )
    dedup.add_argument(
        "--warmup", type=int,
        help="rarewords stream mode: no rarewords verdict until DF holds this many documents "
        f"(default: {RarewordsSettings.warmup})",
    )
    add_es_connection_options(dedup)
    add_es_template_option(dedup)
    dedup.set_defaults(func=cmd_dedup)


def cmd_dedup(args: argparse.Namespace) -> int:
    config = config_from_args(
        args, backend=args.backend, fingerprint_index=args.fingerprint_index,
        rarewords_warmup=0 if args.df_pass else args.warmup,  # batch: DF complete from the start
    )
    config = config.replace(elastic=es_settings(args, config.elastic))
    if args.df_pass and str(args.input) == "-":
        raise ConfigError("--df-pass reads the input twice: give a file, not stdin")
    if args.processes and not can_offload(config):
        raise ConfigError("--processes needs methods that fingerprint without the index "
                          "(simhash, minhash, bag, auto)")
    from neardup_pipeline.index import open_index

    index = open_index(config.backend, config)
    bad_lines = 0
    stopped = False  # by an index failure or Ctrl-C, partway: stop_partway has spoken
    workers = start_workers(config, args.processes)
    try:
        dedup = Pipeline(index, config, args.input)
        decided: list[tuple[Document, Verdict | None]] = []  # None: a repeated id
        read: list[Document] = []  # every document read so far, in input order
        try:
            if args.df_pass:  # rarewords batch mode: DF of every readable document first
                learn_frequencies(dedup, args.input)
            bad_lines = decide_input(args, config, dedup, workers, decided, read)
        except (NearDupError, KeyboardInterrupt) as exc:
            if dedup.failed:
                raise  # refused before any verdict (an index of other parameters): as at start
            stopped = True
            return stop_partway(args, dedup, index, decided, read, exc)
        with open_output(args.output) as out:
            write_verdicts(out, decided, dedup.as_clusters_stand)
        try:
            index.flush()
        except NearDupError as exc:  # every verdict is out; the index lacks some records
            stopped = True
            print(f"neardup: error: {exc}; all {len(decided):,} verdicts written, but the index "
                  "did not record them all: run the same command again to complete",
                  file=sys.stderr)
            return 2
        if (note := warmup_note(config, index.document_count(), args.df_pass)) is not None:
            print(note, file=sys.stderr)
    finally:
        if workers is not None:
            workers.close()
        with contextlib.suppress(*(NearDupError,) if stopped else ()):  # said once already
            index.close()
    if bad_lines:
        print(f"neardup: {bad_lines} input line(s) skipped as unreadable", file=sys.stderr)
        return 1
    return 0


class Pipeline:
    """The run's Deduplicator, built when the first document needs it: the pipeline's code
    (numpy, the parser, the methods) loads then, so the options are checked and an empty input
    is done without it. A failure to build it (an index of other parameters) is `failed`: the
    run's first error, before any verdict."""

    def __init__(self, index: FingerprintIndex, config: NearDupConfig, corpus: Path) -> None:
        self.index, self.config, self.corpus = index, config, corpus
        self._dedup: Deduplicator | None = None
        self.failed = False

    def __call__(self) -> Deduplicator:
        if self._dedup is None:
            from neardup_pipeline.cli.anchors import dedup_fingerprinter
            from neardup_pipeline.verdict.deduplicator import Deduplicator

            try:
                self._dedup = Deduplicator(self.index, self.config,
                                           dedup_fingerprinter(self.config, self.corpus))
            except BaseException:
                self.failed = True
                raise
        return self._dedup

    def as_clusters_stand(self, verdicts: list[Verdict]) -> list[Verdict]:
        """Deduplicator.as_clusters_stand; no verdicts (an empty input) need no pipeline."""
        return self().as_clusters_stand(verdicts) if verdicts else verdicts


def start_workers(config: NearDupConfig, processes: int) -> FingerprintWorkers | None:
    """The child processes that fingerprint (None for none: their code is not loaded)."""
    if not processes:
        return None
    from neardup_pipeline.parallel.offload import FingerprintWorkers

    return FingerprintWorkers(config, processes)


def decide_input(args: argparse.Namespace, config: NearDupConfig, dedup: Pipeline,
                 workers: FingerprintWorkers | None,
                 decided: list[tuple[Document, Verdict | None]], read: list[Document]) -> int:
    """Decide every document of the input in batches, appending to `decided` as each batch is
    decided and to `read` as each line is read (what a run stopped partway reports). Returns
    the number of unreadable lines."""
    bad_lines = 0
    with open_input(args.input) as lines:
        progress = progress_bar(lines)
        seen: dict[str, bytes] = {}  # id -> digest of its first line's content

        def emit(batch: list[Line], fingerprints: list[Fingerprint] | None) -> None:
            docs = [doc for doc, repeated in batch if not repeated]
            with _whole_batch():
                verdicts = iter(dedup().process_batch(docs, fingerprints))
                decided.extend((doc, None if repeated else next(verdicts))
                               for doc, repeated in batch)

        def batches() -> Iterator[list[Line]]:
            nonlocal bad_lines
            batch: list[Line] = []
            for number, line in enumerate(progress, start=1):
                if not line.strip():
                    continue
                try:
                    doc = parse_document(line)
                except InputError as exc:
                    bad_lines += 1
                    print(f"neardup: {args.input}:{number}: {exc}", file=sys.stderr)
                    continue
                digest = content_digest(doc)
                first = seen.get(doc.doc_id)
                repeated = first is not None
                if first is None:
                    seen[doc.doc_id] = digest
                elif first != digest:
                    print(f"neardup: {args.input}:{number}: id {doc.doc_id!r} was given before "
                          "with other content; this line is not checked (its verdict is the "
                          "first line's, \"status\": \"repeated\"): give each page its own id",
                          file=sys.stderr)
                batch.append((doc, repeated))
                read.append(doc)
                if len(batch) >= args.batch:
                    yield batch
                    batch = []
            if batch:
                yield batch

        if workers is None and remote(config):
            # This thread fingerprints batch n + 1 while another decides batch n: the
            # decisions wait on the server (lookups, bulk writes), which frees the GIL.
            from neardup_pipeline.fingerprint import Fingerprinter

            fingerprinter = Fingerprinter(config)
            with ThreadPoolExecutor(1, thread_name_prefix="neardup-decide") as decider:
                deciding: Future[None] | None = None
                for batch in batches():
                    fps = [fingerprinter.fingerprint(doc) for doc, repeated in batch
                           if not repeated]
                    if deciding is not None:
                        deciding.result()
                    deciding = decider.submit(emit, batch, fps)
                if deciding is not None:
                    deciding.result()
        elif workers is None:
            for batch in batches():
                emit(batch, None)
        else:  # the children fingerprint batch n + 1 while this process decides batch n
            pending: tuple[list[Line], Callable[[], list[Fingerprint]]] | None = None
            for batch in batches():
                docs = [doc for doc, repeated in batch if not repeated]
                started = (batch, workers.submit_many(docs))
                if pending is not None:
                    emit(pending[0], _fingerprints_of(pending[1]))
                pending = started
            if pending is not None:
                emit(pending[0], _fingerprints_of(pending[1]))
    return bad_lines


def progress_bar(lines: Iterator[str]) -> Iterator[str]:
    """The lines, counted on a terminal's stderr (tqdm, whose import reads package metadata: only
    a run that shows the bar loads it). Through a generator of our own: tqdm closes what it
    iterates when closed (`yield from`), and stdin must stay open for a run stopped partway to
    read the rest."""
    own = (line for line in lines)
    if not sys.stderr.isatty():
        return own
    from tqdm import tqdm

    return iter(tqdm(own, unit=" docs", file=sys.stderr))


@contextlib.contextmanager
def _whole_batch() -> Iterator[None]:
    """Ctrl-C waits for the batch being decided in this (the main) thread: stopped halfway,
    an index write would be half made (an entry without its lookup keys) and committed by the
    flush that follows. The wait is one batch's decisions; elsewhere Ctrl-C acts at once."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield  # signals reach the main thread only (it waits for this batch), or are ignored
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def content_digest(doc: Document) -> bytes:
    """What a repeated id is compared by: its line's HTML or text, as given. Compared within
    this run only, so a fast non-cryptographic 128-bit hash (xxh3) serves."""
    body = doc.html if doc.html is not None else doc.text or ""
    data = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    return xxhash.xxh3_128_digest(data)


def remote(config: NearDupConfig) -> bool:
    """A server-backed index with methods that fingerprint without it: worth a second thread."""
    return config.backend.startswith(("http://", "https://")) and can_offload(config)


# An input line's document, and whether an earlier line had its id.
Line = tuple[Document, bool]


def write_verdicts(out: IO[str], decided: list[tuple[Document, Verdict | None]],
                   restate: Callable[[list[Verdict]], list[Verdict]],
                   unchecked: Sequence[Document] = ()) -> None:
    """One line per input line, in input order, as the clusters stand at the end of the run
    (`restate`: `Deduplicator.as_clusters_stand`). A later line with an id seen before (a page
    crawled twice into one feed) is the same document again, not a copy of it: it was not
    checked, and its line is the first one's verdict with `"status": "repeated"`. `unchecked`:
    the documents after `decided` that a run stopped partway never decided, each written as
    its own cluster with `"status": "unchecked"`."""
    final = iter(restate([v for _, v in decided if v is not None]))
    records: dict[str, dict[str, Any]] = {}
    for doc, verdict in decided:
        if verdict is None:
            record = {**records[doc.doc_id], "status": "repeated"}
        else:
            record = verdict_record(next(final))
            if doc.url:
                record["url"] = doc.url  # for `neardup report` and people reading it
            records[doc.doc_id] = record
        out.write(json.dumps(record, ensure_ascii=False))
        out.write("\n")
    for doc in unchecked:
        record = verdict_record(Verdict(doc.doc_id, status="unchecked"))
        if doc.url:
            record["url"] = doc.url
        out.write(json.dumps(record, ensure_ascii=False))
        out.write("\n")


def stop_partway(args: argparse.Namespace, dedup: Pipeline, index: FingerprintIndex,
                 decided: list[tuple[Document, Verdict | None]], read: list[Document],
                 exc: BaseException) -> int:
    """End a run the index failed or Ctrl-C stopped: a line for every input document (the
    decided ones as the clusters stand, the others `unchecked`), what was recorded flushed if
    the index lets it, and one line saying so. The same command run again completes the job:
    pages recorded under the same id and content are recognised (verdict/recrawl.py)."""
    interrupted = isinstance(exc, KeyboardInterrupt)
    rest = read[len(decided):]
    # The rest of a file is read again (cheap, never blocks); stdin is read on to its end
    # unless Ctrl-C stopped the run (whoever feeds it was likely stopped too).
    rest += rest_of_input(args.input, len(read), stdin=not interrupted)
    verdicts_left = [v for _, v in decided if v is not None]

    def restate(verdicts: list[Verdict]) -> list[Verdict]:
        try:
            return dedup.as_clusters_stand(verdicts)
        except NearDupError:  # the index is away: as each page was decided
            return verdicts

    with open_output(args.output) as out:
        write_verdicts(out, decided, restate if verdicts_left else lambda v: v, rest)
    with contextlib.suppress(NearDupError):
        index.flush()
    what = "interrupted (Ctrl-C)" if interrupted else f"error: {exc}"
    total = len(decided) + len(rest)
    print(f"neardup: {what}; {len(decided):,} of {total:,} documents checked, the "
          f"other {len(rest):,} written with status unchecked; run the same command again "
          "to complete", file=sys.stderr)
    return 128 + signal.SIGINT if interrupted else 2


def rest_of_input(path: Path, skip: int, *, stdin: bool) -> list[Document]:
    """The documents of the input after the first `skip` readable ones (stdin: those not read
    yet, when `stdin`)."""
    if str(path) == "-" and not stdin:
        return []
    rest: list[Document] = []
    seen = 0 if str(path) != "-" else skip  # stdin goes on where the run stopped
    with open_input(path) as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                doc = parse_document(line)
            except InputError:
                continue  # reported by the run that reaches it
            seen += 1
            if seen > skip:
                rest.append(doc)
    return rest


def warmup_note(config: NearDupConfig, documents: int, df_pass: bool) -> str | None:
    """Why rarewords gave no verdict at all: its document frequencies never held the documents
    its warm-up waits for (None when it did, or rarewords did not run)."""
    warmup = config.rarewords.warmup
    if "rarewords" not in config.method_names or df_pass or documents >= warmup:
        return None
    return (f"neardup: rarewords was warming up: document frequencies hold {documents} "
            f"documents, fewer than the {warmup} it waits for before a verdict, so it found "
            "nothing (--df-pass counts the whole file first; --warmup N waits for fewer)")


def _fingerprints_of(results: Callable[[], list[Fingerprint]]) -> list[Fingerprint] | None:
    """The children's fingerprints of a batch; None (fingerprint here) if a child died on it."""
    try:
        return results()
    except FingerprintCrash as exc:
        print(f"neardup: {exc}; fingerprinting that batch in this process", file=sys.stderr)
        return None


def learn_frequencies(dedup: Pipeline, path: Path) -> None:
    """First pass of batch mode; unreadable lines are reported by the second pass."""
    with open_input(path) as lines:
        for line in lines:
            if line.strip():
                try:
                    dedup().learn(parse_document(line))
                except InputError:
                    continue
