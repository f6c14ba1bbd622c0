"""Stage 3: each candidate pair verified by the methods' own compare (verdict/decision.py),
the thresholds and template-twin rule of the crawl; a pair that matches is an edge of the
match graph. An edge also says whether one page declares the other canonical (the rule's first
criterion: a page another member names and matches)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from neardup_pipeline.batch.executor import Decoded, fingerprinter
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.verdict.decision import compare

SCHEMA = "a bigint, b bigint, method string, similarity double, a_named boolean, b_named boolean"
SIDE = ("node", "doc_id", "signatures", "url_key", "named_key", "named_id")


def names(naming: Any, named: Any) -> bool:
    """Whether page `naming` declares page `named` canonical (by its URL's key, or its id)."""
    return bool((naming["named_key"] is not None and naming["named_key"] == named["url_key"])
                or (naming["named_id"] is not None and naming["named_id"] == named["doc_id"]))


def verify_rows(config: NearDupConfig) -> Any:
    """The mapPartitions function of this stage: joined pairs -> matching edges."""
    def rows(pairs: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        fingerprints = fingerprinter(config)
        decoded = Decoded(fingerprints)
        capabilities = fingerprints.capabilities
        for row in pairs:
            a, b = row["x"], row["y"]
            # the later page against the earlier, as a crawl compares: here by doc id
            later, earlier = (b, a) if a["doc_id"] < b["doc_id"] else (a, b)
            _, best = compare(capabilities, decoded(later["doc_id"], later["signatures"]),
                              decoded(earlier["doc_id"], earlier["signatures"]))
            if best is not None:
                yield (a["node"], b["node"], best[0], float(best[1]), names(b, a), names(a, b))
    return rows


def match_edges(pairs: Any, fingerprints: Any, config: NearDupConfig) -> Any:
    """The pairs that match, as edges (a, b, method, similarity, a_named, b_named)."""
    from pyspark.sql import functions as F

    side = fingerprints.where(F.col("status") == "ok").select(*SIDE)
    x = side.select(F.struct(*SIDE).alias("x"), F.col("node").alias("a"))
    y = side.select(F.struct(*SIDE).alias("y"), F.col("node").alias("b"))
    joined = pairs.join(x, "a").join(y, "b").select("x", "y")
    spark = fingerprints.sparkSession
    return spark.createDataFrame(joined.rdd.mapPartitions(verify_rows(config)), SCHEMA)
