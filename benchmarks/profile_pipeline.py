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
extract (HTML -> text, main content when configured), normalize (NFKC/casefold/tokens, with
language detection and stop words + stemming shown separately), shingles/hash (word and shingle
hashes), signatures (each method's signature and lookup keys), verify (similarity of candidates),
index (candidates, get, add, DF, encode/decode), other (the rest: content hash, bookkeeping).
Pass 2 (cProfile): the same pages again, fresh index; the functions with the most own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import Page, postgresql_pages

STAGES = ("extract", "normalize", "  language detection", "  stop words + stemming",
          "shingles/hash", "signatures", "verify", "index", "other")


class StageClock:
    """Exclusive wall time per stage: nested timed calls are charged to their own stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[float] = []  # time spent in nested timed calls, per open call

    def wrap(self, stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
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

        return timed


class TimedMethod:
    """A method object whose signature/keys/verify/encode calls are charged to their stages."""

    STAGE: ClassVar[dict[str, str]] = {
        "signature": "signatures", "keys": "signatures", "complete": "signatures",
        "similarity": "verify", "is_duplicate": "verify", "judge": "verify",
        "containment": "verify",
        "encode": "index", "decode": "index",
    }

    def __init__(self, method: Any, clock: StageClock) -> None:
        self._method = method
        self._clock = clock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._method, name)
        stage = self.STAGE.get(name)
        return self._clock.wrap(stage, value) if stage and callable(value) else value


def pages_for(count: int) -> list[Page]:
    """The first count/2 page names, both releases (releases in order)."""
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
    config = NearDupConfig(**chosen)
    index = (MemoryIndex() if backend == "memory"
             else open_index(f"sqlite:{tmp / name}.sqlite", config))
    return Deduplicator(index, config), config


def instrument(dedup: Any, clock: StageClock) -> None:
    """Wrap the stage entry points of one Deduplicator (instances only, nothing global stays)."""
    import neardup_pipeline.text.normalize as normalize

    fp = dedup.fingerprinter
    fp.text_of = clock.wrap("extract", fp.text_of)
    fp.normalizer.words = clock.wrap("normalize", fp.normalizer.words)
    normalize.detect_language = clock.wrap("  language detection", normalize.detect_language)
    for name in ("apply", "known_stems_of"):  # the dict's path and the compiled table's
        if hasattr(normalize._WordRules, name):
            setattr(normalize._WordRules, name,
                    clock.wrap("  stop words + stemming", getattr(normalize._WordRules, name)))
    for name in ("word_hashes", "shingle_hashes"):
        if hasattr(fp.hasher, name):
            setattr(fp.hasher, name, clock.wrap("shingles/hash", getattr(fp.hasher, name)))
    fp.methods = {name: TimedMethod(m, clock) for name, m in fp.methods.items()}
    index = dedup.index
    for name in ("candidates", "get", "add", "add_document_frequencies",
                 "document_frequencies", "document_count", "flush"):
        if hasattr(index, name):
            setattr(index, name, clock.wrap("index", getattr(index, name)))


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
        instrument(dedup, clock)
        process = clock.wrap("other", dedup.process)
        duplicates = 0
        start = time.perf_counter()
        for doc in docs:
            duplicates += process(doc).is_duplicate
        total = time.perf_counter() - start
        dedup.index.close()

        methods = getattr(config, "method_names", config.methods)
        index_name = "SQLite" if args.backend == "sqlite" else "memory"
        what = f"methods={args.methods}" if args.methods else "defaults"
        content = getattr(config, "text_content", config.content)
        size = sum(len(p.html) for p in pages) / len(pages) / 1024
        print(f"{len(pages)} PostgreSQL pages (mean {size:.1f} KB), NearDupConfig({what}): "
              f"methods {','.join(methods)}, content {content}, hash {config.hash}, language "
              f"{config.language or 'detected'}, {index_name} index; {duplicates} near-duplicates; "
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
