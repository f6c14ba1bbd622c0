"""Where the time goes: 1,000 PostgreSQL pages through neardup's default configuration, by stage.

Usage: python benchmarks/profile_pipeline.py [--pages 1000] [--top 25] [--no-cprofile]
                                            [--methods simhash ...]
                                            [--backend memory]

Pages: the first 500 page names of ../shared/data's PostgreSQL manual in both releases (15.18
first, then 15.20, so half the lookups find a near-duplicate and verification runs). Each page
goes through Deduplicator.process with NearDupConfig() defaults against a fresh SQLite index (the
embedded default backend), as in the Scrapy pipeline; `--backend memory`: a MemoryIndex, as in
benchmarks/peers.py.

Pass 1 (stages): the stages' entry points are wrapped with timers that record exclusive time
(a stage's time minus the wrapped stages it calls), so the stages add up to the total:
extract (HTML -> text, main content when configured), normalize (NFKC/casefold/tokens; language
detection and the word table, tokens read to their stems or dropped as stop words, shown apart),
shingles/hash (word and shingle hashes), signatures (each method's signature and lookup keys),
verify (similarity of candidates), index (candidates, get, add, DF, encode/decode), other (the
rest: the binary sniff, the declared canonical, the content hash, bookkeeping).
Pass 2 (cProfile): the same pages again, fresh index; the functions with the most own time.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import dataclasses
import functools
import io
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.provenance import measured_at
from neardup_pipeline.methods.contract import (
    ComparesAcrossSites,
    CompletesFromCorpus,
    CorpusStats,
    FindsTemplateTwins,
    HasMetricFloor,
    JudgesInOnePass,
    LearnsCorpusWords,
    MatchesBeyondTheMetric,
    Method,
    MethodCapabilities,
    UsesTitleSubject,
    WarmsUp,
)
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher

if TYPE_CHECKING:
    from benchmarks.corpora import Page

STAGES = ("extract", "normalize", "  language detection", "  tokens, stop words, stems",
          "shingles/hash", "signatures", "verify", "index", "other")


class StageClock:
    """Exclusive wall time per stage: nested timed calls are charged to their own stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[float] = []  # time spent in nested timed calls, per open call

    def call(self, stage: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """func(*args, **kwargs), its time less its nested timed calls' charged to `stage`."""
        self._stack.append(0.0)
        start = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            nested = self._stack.pop()
            self.seconds[stage] += elapsed - nested
            self.calls[stage] += 1
            if self._stack:
                self._stack[-1] += elapsed

    def wrap(self, stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            return self.call(stage, func, *args, **kwargs)

        return timed


class _Wrapper:
    """What every part of a timed method holds: the method and the clock."""

    def __init__(self, method: Method, clock: StageClock) -> None:
        self._method: Any = method
        self._clock = clock


class TimedMethod(_Wrapper):
    """A method whose signature and keys are charged to "signatures", its verdicts to "verify",
    its encode/decode to "index". Build one with `timed_method`, which adds the capabilities."""

    @property
    def name(self) -> str:
        return self._method.name

    def params(self) -> dict[str, object]:
        return self._method.params()

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> Any:
        return self._clock.call("signatures", self._method.signature, words, hasher)

    def keys(self, signature: Any) -> list[str]:
        return self._clock.call("signatures", self._method.keys, signature)

    def encode(self, signature: Any) -> Any:
        return self._clock.call("index", self._method.encode, signature)

    def decode(self, stored: Any) -> Any:
        return self._clock.call("index", self._method.decode, stored)

    def similarity(self, a: Any, b: Any) -> float:
        return self._clock.call("verify", self._method.similarity, a, b)

    def is_duplicate(self, a: Any, b: Any) -> bool:
        return self._clock.call("verify", self._method.is_duplicate, a, b)

    def explain(self, a: Any, b: Any) -> dict[str, object]:
        return self._method.explain(a, b)


# One part per capability of methods/contract.py, with the members of its Protocol; the members
# not timed here run inside the caller's stage.


class _TimedJudge(_Wrapper):
    def judge(self, a: Any, b: Any) -> tuple[float, bool]:
        return self._clock.call("verify", self._method.judge, a, b)


class _MetricFloor(_Wrapper):
    def metric_floor(self) -> float | None:
        return self._method.metric_floor()


class _TimedComplete(_Wrapper):
    def complete(self, draft: Any, stats: CorpusStats | None, doc_id: str | None = None) -> Any:
        return self._clock.call("signatures", self._method.complete, draft, stats, doc_id)


class _WarmsUp(_Wrapper):
    @property
    def warmup(self) -> int:
        return self._method.warmup

    def warming_up(self, signature: Any) -> bool:
        return self._method.warming_up(signature)


class _CorpusWords(_Wrapper):
    def corpus_words(self, signature: Any) -> U64Array | None:
        return self._method.corpus_words(signature)


class _Subject(_Wrapper):
    def with_subject(self, signature: Any, words: Sequence[str], hasher: ShingleHasher) -> Any:
        return self._method.with_subject(signature, words, hasher)


class _BeyondMetric(_Wrapper):
    def beyond_metric(self, signature: Any) -> bool:
        return self._method.beyond_metric(signature)


class _AcrossSites(_Wrapper):
    def with_site(
        self, signature: Any, site: str, region: Sequence[str], hasher: ShingleHasher,
    ) -> Any:
        return self._clock.call("signatures", self._method.with_site, signature, site, region,
                                hasher)


class _Twins(_Wrapper):
    def twins(self, a: Any, b: Any) -> bool:
        return self._method.twins(a, b)


CAPABILITY_PARTS: tuple[tuple[type, type[_Wrapper]], ...] = (
    (JudgesInOnePass, _TimedJudge),
    (HasMetricFloor, _MetricFloor),
    (MatchesBeyondTheMetric, _BeyondMetric),
    (CompletesFromCorpus, _TimedComplete),
    (WarmsUp, _WarmsUp),
    (LearnsCorpusWords, _CorpusWords),
    (UsesTitleSubject, _Subject),
    (ComparesAcrossSites, _AcrossSites),
    (FindsTemplateTwins, _Twins),
)


@functools.cache
def _timed_class(parts: tuple[type[_Wrapper], ...]) -> type[TimedMethod]:
    """TimedMethod with the members of these capabilities (one class per capability set)."""
    name = "TimedMethod" + "".join(part.__name__.lstrip("_") for part in parts)
    return type(name, (TimedMethod, *parts), {})


def offered_capabilities(method: Method) -> set[str]:
    """The names of the optional capabilities the Fingerprinter finds in `method`."""
    capabilities = MethodCapabilities.of(method)
    return {f.name for f in dataclasses.fields(capabilities)
            if f.name != "method" and getattr(capabilities, f.name) is not None}


def timed_method(method: Method, clock: StageClock) -> TimedMethod:
    """`method` with its calls timed, offering the same capabilities as `method`: the
    Fingerprinter reads them from the Protocols a method fulfils, so the wrapper's class has
    exactly the members of the capabilities `method` has (and the run fails if one is lost)."""
    parts = tuple(part for capability, part in CAPABILITY_PARTS if isinstance(method, capability))
    timed = _timed_class(parts)(method, clock)
    missing = offered_capabilities(method) - offered_capabilities(timed)
    if missing:
        raise SystemExit(f"profile_pipeline.py: TimedMethod lacks {sorted(missing)} of "
                         f"{method.name}: add a part to CAPABILITY_PARTS")
    return timed


def pages_for(count: int) -> list[Page]:
    """The first count/2 page names, both releases (releases in order)."""
    from benchmarks.corpora import postgresql_pages  # ../shared's reader: only where pages are read

    pages = postgresql_pages()
    names = sorted({p.group for p in pages})[: count // 2]
    keep = set(names)
    return [p for p in pages if p.group in keep]


def deduplicator(tmp: Path, name: str, methods: list[str] | None, backend: str) -> Any:
    from neardup_pipeline import Deduplicator, NearDupConfig, open_index
    from neardup_pipeline.index import MemoryIndex

    chosen: dict[str, Any] = {}
    if methods:
        chosen["methods"] = tuple(methods)
    config = NearDupConfig().replace(**chosen)
    index = (MemoryIndex() if backend == "memory"
             else open_index(f"sqlite:{tmp / name}.sqlite", config))
    return Deduplicator(index, config), config


@contextlib.contextmanager
def instrumented(dedup: Any, clock: StageClock) -> Iterator[None]:
    """Time the stage entry points of one Deduplicator: its own parts are wrapped on the
    instances, the language detector (in both modules that name it) and the word rules on their
    modules until the block ends."""
    import neardup_pipeline.fingerprint as fingerprint
    import neardup_pipeline.text.normalize as normalize

    fp = dedup.fingerprinter
    fp.extract = clock.wrap("extract", fp.extract)
    fp.normalizer.words = clock.wrap("normalize", fp.normalizer.words)
    fp.normalizer.words_with_passage = clock.wrap("normalize", fp.normalizer.words_with_passage)
    fp.hasher.word_hashes = clock.wrap("shingles/hash", fp.hasher.word_hashes)
    fp.hasher.shingle_hashes = clock.wrap("shingles/hash", fp.hasher.shingle_hashes)
    fp.methods = {name: timed_method(m, clock) for name, m in fp.methods.items()}
    index = dedup.index
    for name in ("candidates", "get", "add", "add_document_frequencies",
                 "document_frequencies", "document_count", "flush"):
        setattr(index, name, clock.wrap("index", getattr(index, name)))
    rules = normalize._WordRules
    with contextlib.ExitStack() as patches:
        detect = clock.wrap("  language detection", normalize.detect_language)
        for module in (normalize, fingerprint):  # fingerprint.py holds its own name for it
            patches.enter_context(mock.patch.object(module, "detect_language", detect))
        for name in ("apply", "known_stems_of"):  # the dict's path and the compiled table's
            patches.enter_context(mock.patch.object(
                rules, name, clock.wrap("  tokens, stop words, stems", getattr(rules, name))))
        yield


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--top", type=int, default=25, help="functions listed from cProfile")
    parser.add_argument("--no-cprofile", action="store_true")
    parser.add_argument("--methods", nargs="+", default=None,
                        help="instead of the default methods (e.g. simhash: whole-page text)")
    parser.add_argument("--backend", choices=("sqlite", "memory"), default="sqlite",
                        help="the index: SQLite (the embedded default) or a MemoryIndex")
    args = parser.parse_args()

    from neardup_pipeline import Document

    pages = pages_for(args.pages)
    docs = [Document(p.doc_id, html=p.html, url=p.doc_id) for p in pages]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        # warm-up: language model, stemmers, trafilatura imports
        warm, _ = deduplicator(tmp, "warm", args.methods, args.backend)
        for doc in docs[:10]:
            warm.process(doc)
        warm.index.close()

        dedup, config = deduplicator(tmp, "stages", args.methods, args.backend)
        clock = StageClock()
        duplicates = 0
        with instrumented(dedup, clock):
            start = time.perf_counter()
            for doc in docs:
                duplicates += clock.call("other", dedup.process, doc).is_duplicate
            total = time.perf_counter() - start
        dedup.index.close()

        methods = config.method_names
        index_name = "SQLite" if args.backend == "sqlite" else "memory"
        what = f"methods={args.methods}" if args.methods else "defaults"
        content = config.text.content
        size = sum(len(p.html) for p in pages) / len(pages) / 1024
        print(f"{measured_at()}\n")
        print(f"{len(pages)} PostgreSQL pages (mean {size:.1f} KB), NearDupConfig({what}): "
              f"methods {','.join(methods)}, content {content}, hash {config.sketch.hash}, "
              f"language {config.text.language or 'detected'}, {index_name} index; "
              f"{duplicates} near-duplicates; "
              f"{total:.1f}s, {len(pages) / total:,.0f} docs/s, "
              f"{1e6 * total / len(pages):,.0f} us/doc\n")
        print("| stage | seconds | share | us/doc | calls |")
        print("|---|---|---|---|---|")
        normalize_total = sum(clock.seconds[s] for s in STAGES if s.startswith("  "))
        for stage in STAGES:
            seconds = clock.seconds.get(stage, 0.0)
            if stage == "normalize":
                seconds += normalize_total  # the row shows the whole stage, sub-rows below
            label = stage.replace("  ", "- ") if stage.startswith("  ") else stage
            print(f"| {label} | {seconds:.2f} | {100 * seconds / total:.1f}% "
                  f"| {1e6 * seconds / len(pages):,.0f} | {clock.calls.get(stage, 0)} |")

        if args.no_cprofile:
            return 0
        dedup, _ = deduplicator(tmp, "cprofile", args.methods, args.backend)
        profiler = cProfile.Profile()
        profiler.enable()
        for doc in docs:
            dedup.process(doc)
        profiler.disable()
        dedup.index.close()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime")
        stats.print_stats(args.top)
        body = out.getvalue()
        print(f"\ncProfile (same pages, fresh index), top {args.top} by own time:\n")
        print(body[body.find("ncalls") - 2:].rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
