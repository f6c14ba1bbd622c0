"""Stage 2: candidate pairs, the pages sharing a lookup key (and the pages a declaration links),
each pair once.

A key's bucket of n pages gives its n(n - 1)/2 pairs while n is at most `limit`. A larger
bucket (a template's boilerplate, a text copied ten thousand times) is cut, in doc-id order, into
blocks of `limit`: every pair within a block, and every page against the first page of each
block (at most `limit` of these leaders), so at most about 2 x limit pairs a page. A chain of
copies still joins through the leaders; the pairs left out are of two pages in different blocks
that match each other and neither any leader nor any page of its own block (docs/batch.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations
from typing import Any

Pair = tuple[int, int]


def bucket_pairs(members: Sequence[tuple[str, int]], limit: int) -> Iterator[Pair]:
    """The pairs of one bucket of (doc id, node), each as (smaller node, larger node)."""
    ordered = sorted(members)  # by doc id: the blocks do not depend on the input's order
    nodes = [node for _, node in ordered]
    if len(nodes) <= limit:
        blocks = [nodes]
    else:
        blocks = [nodes[start:start + limit] for start in range(0, len(nodes), limit)]
    for block in blocks:
        for a, b in combinations(block, 2):
            yield (a, b) if a < b else (b, a)
    if len(blocks) > 1:
        leaders = [block[0] for block in blocks[:limit]]
        for leader in leaders:
            for node in nodes:
                if node != leader:
                    yield (leader, node) if leader < node else (node, leader)


def candidate_pairs(fingerprints: Any, limit: int) -> tuple[Any, Any]:
    """(pairs (a, b) with a < b, the oversized buckets (key, size)) of the checked pages."""
    from pyspark.sql import functions as F

    checked = fingerprints.where(F.col("status") == "ok")
    postings = checked.select(F.explode("keys").alias("key"), "doc_id", "node")
    buckets = (postings.groupBy("key")
               .agg(F.collect_list(F.struct("doc_id", "node")).alias("members"))
               .where(F.size("members") > 1).cache())  # read for the pairs and the report

    def pairs(rows: Iterable[Any]) -> Iterator[Pair]:
        for row in rows:
            yield from bucket_pairs([(m["doc_id"], m["node"]) for m in row["members"]], limit)

    spark = fingerprints.sparkSession
    by_key = spark.createDataFrame(buckets.rdd.mapPartitions(pairs), "a bigint, b bigint")
    declared = declaration_pairs(checked)
    big = buckets.where(F.size("members") > limit).select("key", F.size("members").alias("size"))
    return by_key.unionByName(declared).distinct(), big


def declaration_pairs(checked: Any) -> Any:
    """Pairs of a page naming another URL canonical and the page at that URL (by its URL's key,
    or by its id), whatever their keys: a declaration is verified, never believed."""
    from pyspark.sql import functions as F

    naming = checked.where(F.col("named_id").isNotNull()).select(
        F.col("node").alias("x"), "named_key", "named_id")
    pages = checked.select(F.col("node").alias("y"), "url_key", "doc_id")
    by_url = naming.join(pages, naming["named_key"] == pages["url_key"])
    by_id = naming.join(pages, naming["named_id"] == pages["doc_id"])
    found = by_url.select("x", "y").unionByName(by_id.select("x", "y")).where("x != y")
    return found.select(F.least("x", "y").alias("a"), F.greatest("x", "y").alias("b"))
