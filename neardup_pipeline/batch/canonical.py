"""Stage 5: each cluster's canonical by the crawl's rule (verdict/clusters.py's
`canonical_rank`): a page another member names and matches, then its own word, its URL. The
batch has no arrival order: every page is seen at once (`seen` 0), so a full tie falls to the
smallest doc id, whatever the input's order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from neardup_pipeline.verdict.clusters import offer_of, page_facts

SEEN = 0.0


def offer_rows(demote: tuple[str, ...]) -> Any:
    """The mapPartitions function: member rows -> (node, component, rank, doc_id)."""
    def rows(members: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        for row in members:
            facts = page_facts(row["doc_id"], row["url"], row["canonical_url"], SEEN,
                               bool(row["named"]))
            rank, doc_id = offer_of(facts, demote)
            yield row["node"], row["component"], rank, doc_id
    return rows


def canonicals(fingerprints: Any, nodes: Any, edges: Any, demote: tuple[str, ...]) -> Any:
    """(node, component, canonical_node, canonical) of every checked page; a page without a
    match is its own component and canonical."""
    from pyspark.sql import functions as F

    named = (edges.where("a_named").select(F.col("a").alias("node"))
             .unionByName(edges.where("b_named").select(F.col("b").alias("node")))
             .distinct().withColumn("named", F.lit(True)))
    members = (fingerprints.where(F.col("status") == "ok")
               .select("node", "doc_id", "url", "canonical_url")
               .join(nodes, "node", "left").join(named, "node", "left")
               .withColumn("component", F.coalesce("component", "node")))
    spark = fingerprints.sparkSession
    offers = spark.createDataFrame(members.rdd.mapPartitions(offer_rows(demote)),
                                   "node bigint, component bigint, rank string, doc_id string")
    best = offers.groupBy("component").agg(F.min(F.struct("rank", "doc_id", "node")).alias("c"))
    return offers.join(best, "component").select(
        "node", "component", F.col("c.node").alias("canonical_node"),
        F.col("c.doc_id").alias("canonical"))
