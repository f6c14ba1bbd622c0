"""`neardup search QUERY --es URL`: the pages index searched, near-duplicates collapsed.

Needs Elasticsearch: the search collapses on cluster_id.
"""

from __future__ import annotations

import argparse
import json

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.options import add_es_options, es_settings
from neardup_pipeline.cli.sources import es_client


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = sub.add_parser("search", help=about("search"))
    search.add_argument("query", help="words to look for in titles and texts")
    add_es_options(search, required=True)
    search.add_argument("--size", type=int, default=10, help="clusters to show (default 10)")
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.set_defaults(func=cmd_search)


def cmd_search(args: argparse.Namespace) -> int:
    from neardup_pipeline.index.elastic.search import collapsed_search

    with es_client(args.es, args.pages_index, es_settings(args)) as client:
        result = collapsed_search(client, args.pages_index, args.query, size=args.size)
    if args.json:
        print(json.dumps({"query": result.query, "total_pages": result.total_pages,
                          "hits": [vars(h) for h in result.hits]}, ensure_ascii=False, indent=2))
        return 0
    print(f"{result.total_pages} pages match {args.query!r}; "
          f"{len(result.hits)} clusters shown (near-duplicates collapsed)")
    for n, hit in enumerate(result.hits, start=1):
        copies = f"{hit.copies} copies" if hit.copies != 1 else "1 copy"
        print(f"{n:>3}. {hit.title or '(no title)'}  [score {hit.score:.2f}, {copies}]")
        print(f"     {hit.url}")
        if hit.matched_url != hit.url:
            print(f"     (matched in the copy {hit.matched_url})")
    return 0 if result.hits else 1
