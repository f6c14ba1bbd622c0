"""neardup against the peer libraries: same pages, same process, same run, one table.

Usage: python benchmarks/peers.py [--pages N] [--rounds R] [--peers NAME ...] [--cache DIR]
                                  [--corpora NAME ...] [--no-write] [--whole]

Corpora (all real HTML):
- postgresql: the 15.18 and 15.20 manuals from ../shared/data; gold = same page name.
- guide-en: the English Debian installation guide (9 architectures) from ../shared/data;
  gold = same section across the architectures (title_key; `corpora.guide_groups`).
- apache2-doc: the Apache HTTP Server manual of two Debian releases of `apache2-doc` (all
  languages), fetched with `apt-get download` into --cache (outside the repository) and unpacked
  with `dpkg-deb -x`; gold = same path in both releases. Only regular files (the package's
  language-fallback symlinks are skipped).
- cross-site: real article pages of a few hundred sites (../shared/data/web-pages-multisite),
  each usable page's main content also placed into two other sites' pages (their chrome kept,
  the article's headline, its title with the host's site name), four articles per host page;
  gold = an article and its copies (`cross_site_copies.make_set`, default seed; its docstring
  says exactly what it makes).
- large-pages: the documents of cross-site whose HTML is 100-400 KB (large article pages, where
  reading the HTML is most of the work); gold as in cross-site.

Peers, each with the companions a user would pick for it:
- datasketch: BeautifulSoup(lxml) text, word 5-gram set, MinHash(num_perm=128) + MinHashLSH
  (threshold 0.8); candidates verified by the sketches' estimated Jaccard >= 0.8.
- simhash (1e0ng): BeautifulSoup(lxml) text, Simhash(text) (its default features), SimhashIndex
  (k=3).
- rensa: BeautifulSoup(lxml) text, word 5-gram set, RMinHash(128) + RMinHashLSH (threshold 0.8,
  16 bands); candidates verified by estimated Jaccard >= 0.8.
- trafilatura: trafilatura.extract (main content), trafilatura.deduplication.Simhash; it has no
  index, so its 64-bit values go into the 1e0ng SimhashIndex (k=3, the same Manku blocks).
- neardup: Deduplicator + MemoryIndex through the Python API, methods simhash and minhash
  separately, and the default configuration as a third row (the C++ walk fed by libxml2's parse
  events); a fourth row runs the default with the C++ walk over lxml's tree instead
  (`extract.LIBXML2_EVENTS` False, same text), a fifth with the pure-Python walk of the tree
  instead of the C++ one (`extract.NATIVE_WALK`, same text).

neardup gets each page's URL as a crawl would (the manuals on their project's site, a copy on
its host's site): its site decides whether containment may match two pages. The peers read the
HTML alone.

With --whole, the stacks run as a user runs them instead, each a whole process (interpreter
start-up and imports included) over the corpus as one JSONL file (the HTML decoded beforehand,
the same for both), one output line per page naming its cluster: `neardup dedup INPUT -o OUT`
(memory index, default methods) and the fastest stack assembled from libraries,
benchmarks/fast_stack.py (selectolax's lexbor parser for the body text, rensa's RMinHash over
word 5-shingles with RMinHashLSH, threshold 0.8). Wall time and CPU time (user + system,
os.wait4) are the process's own; the fastest of R rounds counts. That
table is a section of its own in PEERS.md, rewritten by --whole alone.

Every peer indexes every page with text (duplicates too); a page joins the cluster of its first
found near-duplicate (neardup: of its verdict). Scores are pairwise precision/recall/F1 of those
clusters against the gold. Throughput is wall time over all pages of all corpora after a short
untimed warm-up; the peers take turns on each corpus, and with --rounds R each runs each corpus
R times and its fastest run counts. Peak memory is the growth of the resident set while one peer
runs one corpus (VmHWM after - VmRSS before, the high-water mark reset through
/proc/self/clear_refs; it counts C and Rust allocations too), the largest over the corpora and
rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import gc
import itertools
import logging
import re
import shutil
import subprocess
import sys
import textwrap
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import installation_guide_pages, postgresql_pages
from benchmarks.cross_site_copies import DEFAULT_COPIES, make_set
from benchmarks.peers_whole import kept_section, run_whole, whole_section, with_section
from benchmarks.provenance import git_state, machine

CACHE = Path.home() / ".cache" / "neardup" / "bench"
DEBIAN_PACKAGE = "apache2-doc"
DEBIAN_DOC_ROOT = Path("usr/share/doc/apache2-doc/manual")
WARMUP_PAGES = 20
RESULTS = Path(__file__).resolve().parent / "PEERS.md"
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class BenchPage:
    """A page to check; `group` names its gold cluster (pages of one group are duplicates)."""

    doc_id: str
    html: bytes
    group: str
    copy_host: str = ""  # cross-site copies: the page whose chrome the copy wears
    url: str | None = None  # where a crawl would have fetched it (its site: text/site.py)


@dataclass(frozen=True)
class Corpus:
    name: str
    pages: tuple[BenchPage, ...]
    note: str


# --- corpora -----------------------------------------------------------------------------------


def postgresql_corpus() -> Corpus:
    pg = tuple(BenchPage(p.doc_id, p.html, p.group,
                         url=f"https://www.postgresql.org/docs/{p.doc_id}")
               for p in postgresql_pages())
    return Corpus("postgresql", pg, "PostgreSQL 15.18 + 15.20 manuals; gold: same page name")


def guide_corpus() -> Corpus:
    guide = tuple(
        BenchPage(p.doc_id, p.html, p.group,
                  url=f"https://www.debian.org/releases/stable/{p.doc_id}")
        for p in installation_guide_pages() if p.info["lang"] == "en"
    )
    return Corpus("guide-en", guide,
                  "installation guide, English, 9 architectures; gold: same section")


def cross_site_corpus() -> Corpus:
    made = make_set()
    pages = tuple(BenchPage(d.doc_id, d.html, d.group, d.host if d.kind == "copy" else "",
                            d.url) for d in made.docs)
    copies = sum(d.kind == "copy" for d in made.docs)
    return Corpus("cross-site", pages,
                  f"real pages of many sites, {made.articles} articles each copied into "
                  f"{DEFAULT_COPIES} other sites' pages ({copies} copies); gold: an article "
                  "and its copies")


LARGE_PAGE_BYTES = (100 * 1024, 400 * 1024)


def large_pages_corpus() -> Corpus:
    low, high = LARGE_PAGE_BYTES
    pages = tuple(p for p in cross_site_corpus().pages if low <= len(p.html) <= high)
    return Corpus("large-pages", pages,
                  "the cross-site documents of 100-400 KB; gold: an article and its copies")


def _run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def debian_versions(package: str) -> list[str]:
    """Versions of `package` the configured Debian archives offer, newest first."""
    result = _run(["apt-cache", "madison", package])
    versions = [line.split("|")[1].strip() for line in result.stdout.splitlines() if "|" in line]
    return list(dict.fromkeys(versions))


def fetch_debian(package: str, cache: Path) -> list[tuple[str, Path]]:
    """(version, unpacked root) of the two newest versions, downloaded once into `cache`."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise RuntimeError("needs apt-get and dpkg-deb (a Debian or Ubuntu machine)")
    cache.mkdir(parents=True, exist_ok=True)
    versions = debian_versions(package)
    if not versions:  # no package lists yet
        _run(["apt-get", "update"])
        versions = debian_versions(package)
    if not versions:
        raise RuntimeError(f"apt-cache knows no {package}; run apt-get update")
    roots = []
    for version in versions[:2]:
        root = cache / f"{package}_{version}"
        if not root.is_dir():
            debs = list(cache.glob(f"{package}_{version.replace(':', '%3a')}_*.deb"))
            if not debs:
                result = _run(["apt-get", "download", f"{package}={version}"], cwd=cache)
                debs = list(cache.glob(f"{package}_{version.replace(':', '%3a')}_*.deb"))
                if not debs:
                    raise RuntimeError(f"apt-get download {package}={version}: {result.stderr}")
            tmp = root.with_name(root.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(tmp)], check=True)
            tmp.rename(root)
        roots.append((version, root))
    if len(roots) == 2 and _run(["dpkg", "--compare-versions", roots[0][0], "gt",
                                 roots[1][0]]).returncode == 0:
        roots.reverse()  # older release first: its pages are the originals
    return roots


def debian_corpus(cache: Path) -> Corpus:
    """Both releases' manual pages, older first; gold = same path in the two releases."""
    releases = fetch_debian(DEBIAN_PACKAGE, cache)
    pages = []
    for version, root in releases:
        base = root / DEBIAN_DOC_ROOT
        for path in sorted(base.rglob("*.html")):
            if path.is_file() and not path.is_symlink():
                rel = path.relative_to(base).as_posix()
                pages.append(BenchPage(f"{version}/{rel}", path.read_bytes(), rel))
    names = " and ".join(v for v, _ in releases)
    return Corpus(DEBIAN_PACKAGE, tuple(pages),
                  f"Debian {DEBIAN_PACKAGE} {names} (all languages); gold: same path")


def limit(corpus: Corpus, pages: int | None) -> Corpus:
    """At most `pages` pages, whole gold groups taken in sorted order (pairs stay pairs)."""
    if pages is None or len(corpus.pages) <= pages:
        return corpus
    sizes: dict[str, int] = defaultdict(int)
    for page in corpus.pages:
        sizes[page.group] += 1
    keep: set[str] = set()
    total = 0
    for group in sorted(sizes):
        if total + sizes[group] > pages:
            break
        keep.add(group)
        total += sizes[group]
    return Corpus(corpus.name, tuple(p for p in corpus.pages if p.group in keep), corpus.note)


# --- peers -------------------------------------------------------------------------------------


def bs4_text(html: bytes) -> str:
    """The usual HTML -> text: BeautifulSoup with lxml, scripts and styles out."""
    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)  # the XHTML pages of apache2-doc
    soup = BeautifulSoup(html, "lxml")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return str(soup.get_text(" "))


def word_shingles(text: str, size: int = 5) -> set[str]:
    words = _WORDS.findall(text.lower())
    if len(words) <= size:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


class Peer:
    """One library stack: a fresh index per corpus, `process` = HTML -> first near-duplicate."""

    name = ""
    stack = ""

    def __init__(self) -> None:
        self.extract_seconds = 0.0

    def reset(self) -> None:
        raise NotImplementedError

    def text(self, html: bytes) -> str:
        return bs4_text(html)

    def final_clusters(self) -> dict[int, int] | None:
        """Each page's cluster as it stands at the end, for a stack whose clusters join after
        a page's own answer (neardup's); None: the answers are final."""
        return None

    def lookup_add(self, key: int, text: str) -> int | None:
        """Earliest-added verified near-duplicate of `text` (or None); then index it as `key`."""
        raise NotImplementedError

    def process(self, key: int, html: bytes, url: str | None = None) -> int | None:
        """(`url`: read by neardup only; the peers compare texts.)"""
        start = time.perf_counter()
        text = self.text(html)
        self.extract_seconds += time.perf_counter() - start
        if not _WORDS.search(text):
            return None  # no text: never a duplicate, not indexed (as neardup's no_text)
        return self.lookup_add(key, text)


class DatasketchPeer(Peer):
    name = "datasketch"
    stack = "bs4 + word 5-grams + MinHash(128) + MinHashLSH(0.8)"

    def reset(self) -> None:
        from datasketch import MinHashLSH

        self.lsh = MinHashLSH(threshold=0.8, num_perm=128)
        self.sketches: dict[int, Any] = {}

    def final_clusters(self) -> dict[int, int] | None:
        """Each page's cluster as it stands at the end, for a stack whose clusters join after
        a page's own answer (neardup's); None: the answers are final."""
        return None

    def lookup_add(self, key: int, text: str) -> int | None:
        from datasketch import MinHash

        sketch = MinHash(num_perm=128)
        sketch.update_batch([s.encode() for s in word_shingles(text)])
        found = [k for k in self.lsh.query(sketch) if sketch.jaccard(self.sketches[k]) >= 0.8]
        self.lsh.insert(key, sketch)
        self.sketches[key] = sketch
        return min(found) if found else None


class SimhashPeer(Peer):
    name = "simhash (1e0ng)"
    stack = "bs4 + Simhash(text) + SimhashIndex(k=3)"

    def reset(self) -> None:
        import numpy as np
        import simhash
        from simhash import SimhashIndex

        # simhash 2.1.2 multiplies a uint8 bit array by a feature's count: with numpy 2 a count
        # above 255 raises OverflowError. Widen the array (same result, no crash).
        simhash.Simhash._bitarray_from_bytes = staticmethod(  # type: ignore[method-assign]
            lambda b: np.unpackbits(np.frombuffer(b, dtype=">B")).astype(np.int64)
        )

        quiet = logging.getLogger("benchmarks.peers.simhash")
        quiet.setLevel(logging.ERROR)  # "Big bucket found" warnings, one per lookup
        self.index = SimhashIndex([], k=3, log=quiet)

    def value(self, text: str) -> Any:
        from simhash import Simhash

        return Simhash(text)

    def final_clusters(self) -> dict[int, int] | None:
        """Each page's cluster as it stands at the end, for a stack whose clusters join after
        a page's own answer (neardup's); None: the answers are final."""
        return None

    def lookup_add(self, key: int, text: str) -> int | None:
        value = self.value(text)
        found = [int(k) for k in self.index.get_near_dups(value)]
        self.index.add(str(key), value)
        return min(found) if found else None


class TrafilaturaPeer(SimhashPeer):
    name = "trafilatura"
    stack = "trafilatura.extract + deduplication.Simhash + SimhashIndex(k=3)"

    def text(self, html: bytes) -> str:
        import trafilatura

        return trafilatura.extract(html) or ""

    def value(self, text: str) -> Any:
        from simhash import Simhash
        from trafilatura.deduplication import Simhash as TrafilaturaSimhash

        return Simhash(TrafilaturaSimhash(text).hash)


class RensaPeer(Peer):
    name = "rensa"
    stack = "bs4 + word 5-grams + RMinHash(128) + RMinHashLSH(0.8, 16 bands)"

    def reset(self) -> None:
        from rensa import RMinHashLSH

        self.lsh = RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)
        self.sketches: dict[int, Any] = {}

    def final_clusters(self) -> dict[int, int] | None:
        """Each page's cluster as it stands at the end, for a stack whose clusters join after
        a page's own answer (neardup's); None: the answers are final."""
        return None

    def lookup_add(self, key: int, text: str) -> int | None:
        from rensa import RMinHash

        sketch = RMinHash(num_perm=128, seed=42)
        sketch.update(list(word_shingles(text)))
        found = [k for k in self.lsh.query(sketch) if sketch.jaccard(self.sketches[k]) >= 0.8]
        self.lsh.insert(key, sketch)
        self.sketches[key] = sketch
        return min(found) if found else None


class NeardupPeer(Peer):
    """neardup's own Python API; extraction time is read by wrapping the fingerprinter."""

    def __init__(self, label: str, methods: tuple[str, ...] | None,
                 native_walk: bool = True, events: bool = True) -> None:
        super().__init__()
        from neardup_pipeline.text import extract

        self.methods = methods
        self.native_walk = native_walk  # False: extract's pure-Python walk (same text)
        # False: the C++ walk reads lxml's tree, not libxml2's events (same text). Read before
        # any peer runs: where the events reader refused this libxml2, no row may switch it on.
        self.events = events and extract.LIBXML2_EVENTS
        self.name = f"neardup {label}"
        config = self.config()
        names = config.method_names
        content = config.text.content
        walk = "C++ walk" if native_walk else "Python walk"
        source = "events" if native_walk and self.events else "tree"
        self.stack = (f"lxml {source} + {walk} ({content}) + canonical words + "
                      f"{'+'.join(names)} + MemoryIndex")

    def config(self) -> Any:
        from neardup_pipeline import NearDupConfig

        methods = {} if self.methods is None else {"methods": self.methods}
        return NearDupConfig().replace(**methods)

    def reset(self) -> None:
        from neardup_pipeline import Deduplicator
        from neardup_pipeline.index import MemoryIndex

        self.dedup = Deduplicator(MemoryIndex(), self.config())
        self.checked: list[str] = []
        fingerprinter = self.dedup.fingerprinter
        extract = fingerprinter.extract

        def timed(doc: Any) -> Any:
            start = time.perf_counter()
            try:
                return extract(doc)
            finally:
                self.extract_seconds += time.perf_counter() - start

        fingerprinter.extract = timed  # type: ignore[method-assign]

    def process(self, key: int, html: bytes, url: str | None = None) -> int | None:
        from neardup_pipeline import Document
        from neardup_pipeline.text import extract

        extract.NATIVE_WALK = self.native_walk
        extract.LIBXML2_EVENTS = self.events
        verdict = self.dedup.process(Document(str(key), html=html, url=url))
        if verdict.status == "ok":
            self.checked.append(str(key))
        return int(verdict.duplicate_of) if verdict.duplicate_of is not None else None

    def final_clusters(self) -> dict[int, int]:
        return {int(doc): int(canonical)
                for doc, canonical in self.dedup.canonicals_of(self.checked).items()}


def all_peers() -> list[Callable[[], Peer]]:
    return [
        lambda: NeardupPeer("simhash", ("simhash",)),
        lambda: NeardupPeer("minhash", ("minhash",)),
        lambda: NeardupPeer("default", None),
        lambda: NeardupPeer("default, lxml tree", None, events=False),
        lambda: NeardupPeer("default, Python walk", None, native_walk=False),
        DatasketchPeer,
        SimhashPeer,
        RensaPeer,
        TrafilaturaPeer,
    ]


# --- measurement -------------------------------------------------------------------------------


def _status_kb(name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def _settle() -> None:
    """Free what the previous run left, so its pages are not counted as this one's growth."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux: VmHWM := VmRSS


@dataclass
class RunResult:
    peer: str
    stack: str
    corpus: str
    pages: int
    seconds: float
    extract_seconds: float
    peak_kb: int
    pairs: set[tuple[int, int]] = field(default_factory=set)


def run_peer(peer: Peer, corpus: Corpus) -> RunResult:
    peer.reset()
    peer.extract_seconds = 0.0
    _settle()
    _reset_peak()
    baseline = _status_kb("VmRSS")
    cluster: dict[int, int] = {}
    start = time.perf_counter()
    for key, page in enumerate(corpus.pages):
        dup = peer.process(key, page.html, page.url)
        cluster[key] = key if dup is None else cluster.get(dup, dup)
    cluster.update(peer.final_clusters() or {})
    seconds = time.perf_counter() - start
    peak = _status_kb("VmHWM") - baseline
    members: dict[int, list[int]] = defaultdict(list)
    for key, root in cluster.items():
        members[root].append(key)
    pairs = {p for ids in members.values() for p in itertools.combinations(sorted(ids), 2)}
    result = RunResult(peer.name, peer.stack, corpus.name, len(corpus.pages), seconds,
                       peer.extract_seconds, peak, pairs)
    peer.reset()  # drop the index before the next measurement
    return result


def gold_pairs(corpus: Corpus) -> set[tuple[int, int]]:
    members: dict[str, list[int]] = defaultdict(list)
    for key, page in enumerate(corpus.pages):
        members[page.group].append(key)
    return {p for ids in members.values() for p in itertools.combinations(ids, 2)}


def prf(predicted: set[tuple[int, int]], gold: set[tuple[int, int]]) -> tuple[float, float, float]:
    good = len(predicted & gold)
    precision = good / len(predicted) if predicted else 1.0
    recall = good / len(gold) if gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


# --- report ------------------------------------------------------------------------------------


def versions() -> str:
    names = ["neardup-pipeline", "numpy", "lxml", "beautifulsoup4", "datasketch", "simhash",
             "rensa", "trafilatura"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (missing)")
    return ", ".join(found)


def tables(results: list[RunResult], corpora: Sequence[Corpus]) -> str:
    golds = {c.name: gold_pairs(c) for c in corpora}
    by_peer: dict[str, list[RunResult]] = defaultdict(list)
    for r in results:
        by_peer[r.peer].append(r)
    head = ["peer", "stack", "docs/s", "us/doc", "text us/doc", "sketch+index us/doc",
            "peak RSS MB"] + [f"F1 {c.name}" for c in corpora]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, runs in by_peer.items():
        pages = sum(r.pages for r in runs)
        seconds = sum(r.seconds for r in runs)
        extract = sum(r.extract_seconds for r in runs)
        f1 = {r.corpus: prf(r.pairs, golds[r.corpus])[2] for r in runs}
        cells = [name, runs[0].stack, f"{pages / seconds:,.0f}", f"{1e6 * seconds / pages:,.0f}",
                 f"{1e6 * extract / pages:,.0f}", f"{1e6 * (seconds - extract) / pages:,.0f}",
                 f"{max(r.peak_kb for r in runs) / 1024:,.1f}"]
        cells += [f"{f1[c.name]:.4f}" if c.name in f1 else "-" for c in corpora]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| corpus | peer | docs/s | peak RSS MB | predicted pairs | precision | recall "
              "| F1 |", "|---|---|---|---|---|---|---|---|"]
    for corpus in corpora:
        for r in (r for r in results if r.corpus == corpus.name):
            p, rc, f = prf(r.pairs, golds[corpus.name])
            lines.append(f"| {corpus.name} | {r.peer} | {r.pages / r.seconds:,.0f} "
                         f"| {r.peak_kb / 1024:,.1f} | {len(r.pairs)} | {p:.4f} | {rc:.4f} "
                         f"| {f:.4f} |")
    lines += copies_table(results, [c for c in corpora if any(p.copy_host for p in c.pages)])
    return "\n".join(lines)


def copies_table(results: list[RunResult], corpora: Sequence[Corpus]) -> list[str]:
    """Copies recall and false pairs of the corpora made of copies (cross-site), per peer.

    Copies recall: share of the (original, copy) pairs inside one predicted cluster. False
    pairs: predicted pairs not in one gold group; "same host page": both wear one page's chrome
    (two articles copied into one host, or a copy beside its host's own page).
    """
    if not corpora:
        return []
    lines = ["", "| corpus | peer | copies recall | false pairs | of them same host page |",
             "|---|---|---|---|---|"]
    for corpus in corpora:
        pages = corpus.pages
        gold = gold_pairs(corpus)
        copies = {(a, b) for a, b in gold if not (pages[a].copy_host and pages[b].copy_host)}
        chrome = [p.copy_host or p.doc_id for p in pages]
        for r in (r for r in results if r.corpus == corpus.name):
            false = r.pairs - gold
            same_host = sum(chrome[a] == chrome[b] for a, b in false)
            recall = len(r.pairs & copies) / len(copies) if copies else 1.0
            lines.append(f"| {corpus.name} | {r.peer} | {recall:.4f} | {len(false)} "
                         f"| {same_host} |")
    return lines


# Each corpus's loader; apache2-doc's needs --cache, so main() loads it.
LOADERS: dict[str, Callable[[], Corpus]] = {
    "postgresql": postgresql_corpus,
    "guide-en": guide_corpus,
    "cross-site": cross_site_corpus,
    "large-pages": large_pages_corpus,
}
CORPORA = ("postgresql", "guide-en", DEBIAN_PACKAGE, "cross-site", "large-pages")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=None,
                        help="at most N pages per corpus (whole gold groups)")
    parser.add_argument("--peers", nargs="+", default=None,
                        help="only these peers (names as in the table, prefix match)")
    parser.add_argument("--cache", type=Path, default=CACHE,
                        help=f"where the Debian package is downloaded (default {CACHE})")
    parser.add_argument("--rounds", type=int, default=1,
                        help="times each peer runs each corpus (in turns); its fastest counts")
    parser.add_argument("--corpora", nargs="+", choices=list(CORPORA), default=list(CORPORA),
                        help="only these corpora (default: all)")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {RESULTS.name}")
    parser.add_argument("--whole", action="store_true",
                        help="whole processes instead: neardup dedup and the selectolax + rensa "
                        f"stack (their own section of {RESULTS.name})")
    args = parser.parse_args()

    corpora: list[Corpus] = []
    for name in args.corpora:
        if name == DEBIAN_PACKAGE:
            try:
                corpora.append(debian_corpus(args.cache))
            except (RuntimeError, subprocess.CalledProcessError) as exc:
                print(f"[peers] {DEBIAN_PACKAGE} skipped: {exc}", file=sys.stderr)
        else:
            corpora.append(LOADERS[name]())
    corpora = [limit(c, args.pages) for c in corpora]
    for c in corpora:
        sizes = sorted(len(p.html) for p in c.pages)
        print(f"[peers] {c.name}: {len(c.pages)} pages, median {sizes[len(sizes) // 2] / 1024:.1f}"
              f" KB, {len(gold_pairs(c))} gold pairs ({c.note})", file=sys.stderr)
    if args.whole:
        return main_whole(args, corpora)

    peers: list[Peer] = []
    skipped: list[str] = []  # a table without one of the peers is not the comparison
    for make in all_peers():
        try:
            peer = make()
        except Exception as exc:  # a peer that is not installed or not constructible
            print(f"[peers] a peer skipped: {exc!r}", file=sys.stderr)
            skipped.append(repr(exc))
            continue
        if args.peers is None or any(peer.name.startswith(p) for p in args.peers):
            peers.append(peer)

    warm = Corpus("warm-up", corpora[0].pages[:WARMUP_PAGES], "")
    ready: list[Peer] = []
    for peer in peers:
        try:
            run_peer(peer, warm)
            ready.append(peer)
        except Exception as exc:
            print(f"[peers] {peer.name} failed at warm-up, skipped: {exc!r}", file=sys.stderr)
            skipped.append(f"{peer.name}: {exc!r}")
    # Peers take turns on each corpus, round after round, and each keeps its fastest round: the
    # machine drifts by tens of percent over minutes, and a peer run far from another in time
    # would measure the machine as much as the peer.
    fastest: dict[tuple[str, str], RunResult] = {}
    peak_kb: dict[tuple[str, str], int] = defaultdict(int)  # the largest over the rounds
    for round_number, corpus in itertools.product(range(args.rounds), corpora):
        for peer in ready:
            result = run_peer(peer, corpus)
            key = (peer.name, corpus.name)
            if key not in fastest or result.seconds < fastest[key].seconds:
                fastest[key] = result
            peak_kb[key] = max(peak_kb[key], result.peak_kb)
            print(f"[peers] round {round_number + 1}: {peer.name} on {corpus.name}: "
                  f"{result.pages / result.seconds:,.0f} docs/s, {result.seconds:.1f}s",
                  file=sys.stderr, flush=True)
    results = [dataclasses.replace(fastest[key], peak_kb=peak_kb[key])
               for key in ((peer.name, corpus.name) for peer in ready for corpus in corpora)]

    command = "python benchmarks/peers.py" + "".join([
        f" --pages {args.pages}" if args.pages else "",
        f" --rounds {args.rounds}" if args.rounds > 1 else "",
        f" --peers {' '.join(args.peers)}" if args.peers else "",
        f" --corpora {' '.join(args.corpora)}" if tuple(args.corpora) != CORPORA else "",
    ])
    measured = (f"Measured at {git_state()} on {machine()}. One process, peers in turns on each "
                "corpus; times are noisy on a shared machine, compare within this table. "
                f"Versions: {versions()}.")
    report = "\n".join([
        "# neardup and its peers",
        "",
        "```sh",
        f'{command}     # pip install ".[bench]"; rewrites this file',
        "```",
        "",
        textwrap.fill(measured, width=100, break_long_words=False, break_on_hyphens=False),
        "",
        "Corpora: " + "; ".join(f"{c.name} {len(c.pages)} pages ({c.note})" for c in corpora)
        + ".",
        "",
        "docs/s and us/doc: wall time per page, HTML to verdict, over all corpora; text = "
        "HTML -> text part, sketch+index = the rest. Peak RSS: growth of the resident set "
        "while one peer runs one corpus (VmHWM reset through /proc/self/clear_refs; C and "
        "Rust allocations count), largest over the corpora. F1: pairwise, clusters (a page "
        "joins the cluster of its first found near-duplicate) against the gold.",
        "",
        tables(results, corpora),
        "",
    ])
    print(report, end="")
    if skipped and args.peers is None and not args.no_write:
        print(f"[peers] {len(skipped)} peer(s) missing, {RESULTS.name} not written: "
              "pip install '.[bench]' (or name the peers wanted with --peers)", file=sys.stderr)
        return 1
    if not args.no_write:
        kept = kept_section(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else ""
        RESULTS.write_text(report + ("\n" + kept if kept else ""), encoding="utf-8")
        print(f"\n[peers] written to {RESULTS}", file=sys.stderr)
    return 0


def main_whole(args: argparse.Namespace, corpora: list[Corpus]) -> int:
    """--whole: the whole-process table, its own section of PEERS.md."""
    results = run_whole(corpora, args.rounds)
    command = "python benchmarks/peers.py --whole" + "".join([
        f" --pages {args.pages}" if args.pages else "",
        f" --rounds {args.rounds}" if args.rounds > 1 else "",
        f" --corpora {' '.join(args.corpora)}" if tuple(args.corpora) != CORPORA else "",
    ])
    section = whole_section(results, corpora, command, prf, gold_pairs)
    print(section, end="")
    if not args.no_write:
        markdown = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
        RESULTS.write_text(with_section(markdown, section), encoding="utf-8")
        print(f"\n[peers] written to {RESULTS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
