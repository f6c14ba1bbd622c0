"""Chance candidates of real pages: how many stored pages a lookup meets that are not its
near-duplicates, per stored page, measured on the real base pages of capacity.py.

The pages capacity.py derives under different seeds share no word, so their lookups meet no
page by chance; real pages of one language share their function and domain words, and a band
key of 4 word-set minimums is shared by pages whose word sets resemble only 0.1-0.2 now and
then. This counts, among all pairs of the base pages, those sharing a lookup key and not called
near-duplicates by the verdict, apart for pairs of one source page (variants of one page, one
manual section in two releases or for several architectures), of one site, and of different
sites (Debian's languages counted as sites). A site's pages of one template are a bounded set
whatever the crawl's size; the rate of pairs of different sites times N is a lookup's chance
candidates among N pages of such sites.

Usage: python benchmarks/chance_candidates.py [--base-cache BASE.pkl] [--base 10000]
       [--set bag_bands=14]
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.capacity import BasePage, build_base
from benchmarks.provenance import measured_at
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.methods.contract import Method, lookup_keys
from neardup_pipeline.methods.minhash import resemblance
from neardup_pipeline.verdict.decision import compare

SIZES = (1_000_000, 100_000_000, 1_000_000_000)


def source(page: BasePage) -> str:
    """The real page a base page was made from: one section in any release or architecture."""
    url = str(page.page["url"]).split("?")[0]
    url = re.sub(r"/docs/15\.\d+/", "/docs/15/", url)
    return re.sub(r"/releases/stable/[^/]+/", "/releases/stable/ARCH/", url)


def site(url: str) -> str:
    """The host, and for Debian's guide its language (one site a language)."""
    parts = [*url.split("/"), "", "", "", "", "", "", ""]
    return parts[2] + (f"/{parts[6]}" if "/releases/stable/" in url else "")


def sharing_pairs(base: list[BasePage], methods: Mapping[str, Method],
                  ) -> dict[tuple[int, int], set[str]]:
    """Every pair of base pages sharing a lookup key (made by `methods` from the stored
    signatures), with the kinds of key shared."""
    by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, page in enumerate(base):
        for method, keys in lookup_keys(methods, page.decoded).items():
            for key in keys:
                by_key[(method, key)].append(n)
    pairs: dict[tuple[int, int], set[str]] = defaultdict(set)
    for (_, key), ids in by_key.items():
        kind = "passage" if key.startswith("p:") else "band"
        for pair in itertools.combinations(sorted(set(ids)), 2):
            pairs[pair].add(kind)
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-cache", type=Path, help="capacity.py's pickle of the base")
    parser.add_argument("--base", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a lookup setting to measure instead of the default, e.g. "
                             "bag_bands=14 (JSON value; repeatable)")
    args = parser.parse_args()
    config = NearDupConfig.from_mapping(
        {name: json.loads(value) for name, value in (item.split("=", 1) for item in args.set)})
    if args.base_cache and args.base_cache.exists():
        base = pickle.loads(args.base_cache.read_bytes())[0]
    else:
        base = build_base(args.base, 0, args.seed)[0]
    fingerprinter = Fingerprinter(config)
    capabilities = fingerprinter.capabilities
    sources = [source(page) for page in base]
    sites = [site(s) for s in sources]
    counts: Counter[str] = Counter()
    kinds: Counter[tuple[str, str]] = Counter()
    resemblances: dict[str, list[float]] = defaultdict(list)
    for (a, b), shared in sharing_pairs(base, fingerprinter.methods).items():
        _, match = compare(capabilities, base[a].decoded, base[b].decoded)
        group = ("near-duplicates" if match is not None else "one source page"
                 if sources[a] == sources[b] else "one site" if sites[a] == sites[b]
                 else "different sites")
        counts[group] += 1
        for kind in shared:
            kinds[(group, kind)] += 1
        resemblances[group].append(resemblance(base[a].decoded["bag"].minimums,
                                               base[b].decoded["bag"].minimums))
    pairs = len(base) * (len(base) - 1) // 2
    print(f"{measured_at()}; {len(base):,} base pages, {pairs:,} pairs; settings: "
          f"{' '.join(args.set) or 'the defaults'}")
    print("\n| pairs sharing a key | pairs | by a band key | by a passage key | a pair | "
          "word-set resemblance, median (90th pct) | " +
          " | ".join(f"chance candidates at {n:,.0f}" for n in SIZES) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(SIZES))
    for group in ("near-duplicates", "one source page", "one site", "different sites"):
        rate = counts[group] / pairs
        median, high = np.percentile(resemblances[group], [50, 90]) if counts[group] else (0, 0)
        scaled = " | ".join(f"{rate * n:,.1f}" if group == "different sites" else "-"
                            for n in SIZES)
        print(f"| {group} | {counts[group]:,} | {kinds[(group, 'band')]:,} | "
              f"{kinds[(group, 'passage')]:,} | {rate:.2e} | {median:.3f} ({high:.3f}) | "
              f"{scaled} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
