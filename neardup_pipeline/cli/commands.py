"""The commands of `neardup`: the module that registers and runs each, and the line
`neardup --help` shows for it, in the order it lists them.

A run imports the module of the command it names and no other: each imports what it works
with (Elasticsearch, Scrapy, the hygiene code, matplotlib), which would otherwise be every
command's start-up."""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "dedup": ("neardup_pipeline.cli.dedup",
              "flag near-duplicates in a JSONL corpus, in input order"),
    "compare": ("neardup_pipeline.cli.compare", "similarity of two documents under each method"),
    "crawl": ("neardup_pipeline.cli.crawl", "run the bundled crawler (no URL: the demo site)"),
    "anchors": ("neardup_pipeline.cli.anchors", "anchor-word models (Ilyinsky et al.)"),
    "eval": ("neardup_pipeline.cli.eval",
             "pairwise precision/recall/F1 per method against gold groups, with a sweep"),
    "search": ("neardup_pipeline.cli.search",
               "search the pages index, near-duplicates collapsed"),
    "stats": ("neardup_pipeline.cli.stats", "documents, clusters and duplicates by method"),
    "report": ("neardup_pipeline.cli.report", "one self-contained HTML report of the clusters"),
    "reuse": ("neardup_pipeline.cli.reuse",
              "which sources a text copied, and which passages (character offsets)"),
    "hygiene": ("neardup_pipeline.cli.hygiene",
                "mark the near-duplicates of an existing Elasticsearch index"),
    "batch": ("neardup_pipeline.cli.batch",
              "near-duplicates of a whole collection on Spark (JSONL, Parquet, WARC, an index)"),
    "es": ("neardup_pipeline.cli.es", "Elasticsearch administration (index templates)"),
}


def about(name: str) -> str:
    """The line `neardup --help` shows for a command."""
    return COMMANDS[name][1]
