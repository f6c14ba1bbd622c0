"""Instructions a page of the check path (HTML to recorded verdict), counted by valgrind.

Usage: python benchmarks/instructions.py [--tree DIR ...] [--pages N] [--passes P]
                                         [--corpus postgresql|cross-site]

Wall time on a shared machine moves by a third between two runs of the same code; the count of
instructions a page executes does not (a few parts in a thousand), so it tells what a change of
the check path costs where docs/s cannot. It is not a time: a cache miss or a divide costs more
than an add. `peers.py` gives the docs/s.

Each tree (a checkout of neardup with its extensions built, default: this one) runs the same
pages through `Deduplicator` + `MemoryIndex` with the default configuration, under valgrind's
cachegrind with the cache simulation off, twice: once for one pass over the pages, once for
1 + P passes. The difference over P x pages is the instructions of a warm pass a page (the
interpreter's start, the imports and the first pass's cache filling cancel out). The pages are
those of `peers.py`: the first N/2 of each PostgreSQL release (so half of them have a near-
duplicate to verify), or the first N cross-site documents; each with its URL, as a crawl gives it.

Needs `valgrind` (Debian's package). A tree from before the package layout works too: it is
read through `neardup_pipeline`'s top-level names only.
"""

from __future__ import annotations

import argparse
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def pages_of(corpus: str, count: int) -> list[tuple[str, bytes, str | None]]:
    """(id, HTML, URL) of the pages to check, in the order they are checked."""
    # Here, not at the top: the measured child imports the tree it is given, not this one.
    sys.path.insert(0, str(ROOT))
    from benchmarks.peers import cross_site_corpus, postgresql_corpus

    if corpus == "postgresql":
        pages = postgresql_corpus().pages
        releases = sorted({p.doc_id.split("/")[0] for p in pages})
        chosen = [p for release in releases
                  for p in [q for q in pages if q.doc_id.startswith(release + "/")][
                      : count // len(releases)]]
    else:
        chosen = list(cross_site_corpus().pages[:count])
    return [(p.doc_id, p.html, p.url) for p in chosen]


def check_pages(tree: Path, pages_file: Path, passes: int) -> None:
    """The measured child: `passes` passes over the pages, each on a fresh memory index."""
    sys.path.insert(0, str(tree))
    from neardup_pipeline import Deduplicator, Document, NearDupConfig
    from neardup_pipeline.index import MemoryIndex

    pages = pickle.loads(pages_file.read_bytes())
    for _ in range(passes):
        dedup = Deduplicator(MemoryIndex(), NearDupConfig())
        for doc_id, html, url in pages:
            dedup.process(Document(doc_id, html=html, url=url))


def instructions(tree: Path, pages_file: Path, passes: int) -> int:
    """Instructions the child executes in all (valgrind's I refs)."""
    run = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, __file__, "--child", str(tree), str(pages_file), str(passes)],
        capture_output=True, text=True, check=True)
    found = _REFS.search(run.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{run.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        check_pages(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, nargs="+", default=[ROOT],
                        help="checkouts to measure, extensions built (default: this one)")
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--passes", type=int, default=2, help="warm passes measured")
    parser.add_argument("--corpus", choices=("postgresql", "cross-site"), default="postgresql")
    args = parser.parse_args()
    pages = pages_of(args.corpus, args.pages)
    with tempfile.TemporaryDirectory() as tmp:
        pages_file = Path(tmp) / "pages.pickle"
        pages_file.write_bytes(pickle.dumps(pages))
        print(f"{args.corpus}: {len(pages)} pages, {args.passes} warm passes measured")
        print("| tree | instructions a page |")
        print("|---|---|")
        for tree in args.tree:
            once = instructions(tree.resolve(), pages_file, 1)
            more = instructions(tree.resolve(), pages_file, 1 + args.passes)
            per_page = (more - once) / args.passes / len(pages)
            print(f"| {tree} | {per_page / 1e6:.2f} M |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
