"""Stage 2: candidate pairs, the pages sharing a lookup key (and the pages a declaration links),
in two passes that verify what can change the clusters and no more.

Pass 1 (`star_pairs`): each key's bucket gives the pairs of its first page (by doc id) with
each other page, n - 1 pairs where a crawl's copies are mostly one cluster; with the
declaration pairs, they are verified and joined into first components.
Pass 2 (`cross_pairs`): of every bucket, the pairs of pages in different first components:
only a match between two such pages can join clusters, so the pairs within a component (most
of them, in a collection of copies) are never verified, and the clusters are still the
components of every matching pair, as `dedup` makes them.

A bucket holds all its pairs while it has at most `limit` pages. A larger one (a template's
boilerplate, a text copied ten thousand times) is cut, in doc-id order, into blocks of `limit`:
every pair within a block, and every page against the first page of each block (at most
`limit` of these leaders), so at most about 2 x limit pairs a page. A chain of copies still
joins through the leaders; the pairs left out are of two pages in different blocks that match
each other and neither any leader nor any page of its own block (docs/batch.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations
from typing import Any

Pair = tuple[int, int]
Member = tuple[str, int, int]  # doc id, node, first component


def ordered(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


def bucket_pairs(members: Sequence[tuple[str, int]], limit: int) -> Iterator[Pair]:
    """The pairs of one bucket of (doc id, node), each as (smaller node, larger node)."""
    nodes = [node for _, node in sorted(members)]  # by doc id: blocks independent of order
    blocks = [nodes[start:start + limit] for start in range(0, len(nodes), limit)]
    for block in blocks:
        for a, b in combinations(block, 2):
            yield ordered(a, b)
    if len(blocks) > 1:
        for leader in (block[0] for block in blocks[:limit]):
            for node in nodes:
                if node != leader:
                    yield ordered(leader, node)


def star(members: Sequence[tuple[str, int]]) -> Iterator[Pair]:
    """Pass 1's pairs of a bucket: its first page by doc id with each other page."""
    first = min(members)[1]
    for _, node in members:
        if node != first:
            yield ordered(first, node)


def across(members: Sequence[Member], limit: int) -> Iterator[Pair]:
    """Pass 2's pairs of a bucket: those `bucket_pairs` gives of pages in different first
    components (the only pairs whose match can join two clusters)."""
    if len({component for _, _, component in members}) < 2:
        return
    component = {node: comp for _, node, comp in members}
    for a, b in bucket_pairs([(doc_id, node) for doc_id, node, _ in members], limit):
        if component[a] != component[b]:
            yield a, b


def _buckets(checked: Any, *extra: str) -> Any:
    from pyspark.sql import functions as F

    postings = checked.select(F.explode("keys").alias("key"), "doc_id", "node", *extra)
    return (postings.groupBy("key")
            .agg(F.collect_list(F.struct("doc_id", "node", *extra)).alias("members"))
            .where(F.size("members") > 1))


def star_pairs(fingerprints: Any, limit: int) -> tuple[Any, Any]:
    """(pass 1's pairs (a, b) with a < b, the oversized buckets (key, size)) of the checked
    pages."""
    from pyspark.sql import functions as F

    checked = fingerprints.where(F.col("status") == "ok")
    buckets = _buckets(checked).cache()  # read for the pairs and the report

    def pairs(rows: Iterable[Any]) -> Iterator[Pair]:
        for row in rows:
            yield from star([(m["doc_id"], m["node"]) for m in row["members"]])

    spark = fingerprints.sparkSession
    by_key = spark.createDataFrame(buckets.rdd.mapPartitions(pairs), "a bigint, b bigint")
    big = buckets.where(F.size("members") > limit).select("key", F.size("members").alias("size"))
    return by_key.unionByName(declaration_pairs(checked)).distinct(), big


def cross_pairs(fingerprints: Any, nodes: Any, verified: Any, limit: int) -> Any:
    """Pass 2's pairs, given the first components (node, component), less the pairs pass 1
    `verified` already."""
    from pyspark.sql import functions as F

    checked = (fingerprints.where(F.col("status") == "ok").join(nodes, "node", "left")
               .withColumn("component", F.coalesce("component", "node")))
    buckets = _buckets(checked, "component")

    def pairs(rows: Iterable[Any]) -> Iterator[Pair]:
        for row in rows:
            yield from across([(m["doc_id"], m["node"], m["component"])
                               for m in row["members"]], limit)

    spark = fingerprints.sparkSession
    found = spark.createDataFrame(buckets.rdd.mapPartitions(pairs), "a bigint, b bigint")
    return found.distinct().join(verified, ["a", "b"], "left_anti")


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
