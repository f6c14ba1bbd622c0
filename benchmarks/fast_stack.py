"""The fastest near-duplicate stack a user could assemble from libraries: selectolax's lexbor
parser for the body text, rensa's RMinHash over word 5-shingles with its RMinHashLSH
(threshold 0.8). benchmarks/peers.py --whole runs it as a whole process beside `neardup dedup`.

Usage: python benchmarks/fast_stack.py INPUT.jsonl -o OUTPUT.jsonl

INPUT lines are `neardup dedup`'s ({"id", "html"}); OUTPUT has one line per input line,
{"id", "duplicate_of", "cluster"}: a page joins the cluster of the first earlier page whose
estimated Jaccard is at least 0.8 among its LSH candidates (a page without words is its own).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from rensa import RMinHash, RMinHashLSH
from selectolax.lexbor import LexborHTMLParser

THRESHOLD = 0.8
PERMUTATIONS = 128
BANDS = 16
SHINGLE_WORDS = 5
_WORDS = re.compile(r"\w+")


def body_text(html: str) -> str:
    """The body's text, scripts and styles out (what a user would strip with any parser)."""
    tree = LexborHTMLParser(html)
    tree.strip_tags(["script", "style", "noscript", "template"])
    body = tree.body
    return body.text(separator=" ") if body is not None else ""


def shingles(text: str) -> list[str]:
    words = _WORDS.findall(text.lower())
    if len(words) <= SHINGLE_WORDS:
        return [" ".join(words)] if words else []
    return list({" ".join(words[i : i + SHINGLE_WORDS])
                 for i in range(len(words) - SHINGLE_WORDS + 1)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=PERMUTATIONS, num_bands=BANDS)
    sketches: dict[int, RMinHash] = {}
    clusters: dict[int, int] = {}
    ids: list[str] = []
    with args.input.open(encoding="utf-8") as lines, args.output.open("w") as out:
        for key, line in enumerate(lines):
            record = json.loads(line)
            ids.append(str(record["id"]))
            clusters[key] = key
            found: list[int] = []
            grams = shingles(body_text(record.get("html") or ""))
            if grams:
                sketch = RMinHash(num_perm=PERMUTATIONS, seed=42)
                sketch.update(grams)
                found = [k for k in lsh.query(sketch) if sketch.jaccard(sketches[k]) >= THRESHOLD]
                lsh.insert(key, sketch)
                sketches[key] = sketch
            first = min(found) if found else None
            if first is not None:
                clusters[key] = clusters[first]
            out.write(json.dumps({"id": ids[key],
                                  "duplicate_of": ids[first] if first is not None else None,
                                  "cluster": ids[clusters[key]]}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
