"""`neardup crawl [URL]`: the options of the bundled crawler (no URL: the demo site).

The crawl itself is `neardup_pipeline.scrapy.crawl.run`, which loads Scrapy only when it runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.options import add_es_connection_options, add_es_template_option
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.scrapy.crawl import CRAWL_BACKEND, DEMO_BACKEND, run
from neardup_pipeline.scrapy.settings import ScrapySettings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("crawl", help=about("crawl"))
    parser.add_argument(
        "url", nargs="?", default=None,
        help="start URL (the crawl stays on its host); omitted: crawl the bundled demo site",
    )
    parser.add_argument(
        "--backend", default=None,
        help=f"index: sqlite:PATH, memory or http(s)://host:9200 (default: NEARDUP_BACKEND, "
        f"else {DEMO_BACKEND} for the demo, {CRAWL_BACKEND} for a URL)",
    )
    parser.add_argument(
        "--fresh", action=argparse.BooleanOptionalAction, default=None,
        help="start from an empty index: delete the SQLite file, or on Elasticsearch the "
        "fingerprint index, its side indices and the pages index (default: yes for the demo, "
        "on its own file or index `neardup-demo`, so every run gives the same result; no for "
        "a URL)",
    )
    parser.add_argument("--action", choices=("drop", "tag"), default=None,
                        help="drop near-duplicates or tag them (default: NEARDUP_ACTION, else "
                        f"{ScrapySettings.action})")
    parser.add_argument("--methods", default=None,
                        help="comma-separated (default: NEARDUP_METHODS, else "
                        f"{_default_methods()})")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="write kept items as JSON lines to this file")
    parser.add_argument("--max-pages", type=int, default=None,
                        help="stop after this many responses (CLOSESPIDER_PAGECOUNT)")
    parser.add_argument("--log-level", default="WARNING",
                        help="Scrapy log level (default: WARNING, so the summary stands out)")
    add_es_connection_options(parser)
    add_es_template_option(parser)
    parser.set_defaults(func=run)


def _default_methods() -> str:
    """The methods a crawl runs when none are named, with `auto` spelled out."""
    named = ",".join(NearDupConfig.methods)
    run = ",".join(NearDupConfig().method_names)
    return named if named == run else f"{named} = {run}"
