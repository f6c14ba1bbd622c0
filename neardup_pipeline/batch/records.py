"""Stage 6: one `dedup` output record per input record (verdict/verdict.py's
`verdict_record`): each page's cluster named for its canonical and, for the other members, the
similarity to it measured between the two pages, as `dedup` restates it at the end of a run. A
page read again under its id is its first reading's record with `"status": "repeated"`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, cast

from neardup_pipeline.batch.executor import Decoded, fingerprinter
from neardup_pipeline.batch.fingerprint import REPEATED, UNREADABLE
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.verdict.decision import closest
from neardup_pipeline.verdict.verdict import Verdict, VerdictStatus, verdict_record

SCHEMA = ("position bigint, es_id string, id string, duplicate_of string, similarity double, "
          "method string, cluster string, canonical boolean, status string, url string")
FIELDS = ("id", "duplicate_of", "similarity", "method", "cluster", "canonical", "status", "url")


def record_of(verdict: Verdict, url: str | None) -> dict[str, Any]:
    """The output record of a page, its URL last, as `dedup` writes it."""
    record = verdict_record(verdict)
    if url:
        record["url"] = url
    return record


def line_of(record: dict[str, Any]) -> str:
    """The JSONL line of a record: `dedup`'s, fields without a value left out as it does."""
    shown = {k: v for k, v in record.items() if k in FIELDS and (
        v is not None or k in ("duplicate_of", "similarity", "method"))}
    return json.dumps(shown, ensure_ascii=False)


def record_rows(config: NearDupConfig) -> Any:
    """The mapPartitions function: a page with its canonical's signatures -> its record."""
    def rows(pages: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        fingerprints = fingerprinter(config)
        decoded = Decoded(fingerprints)
        for row in pages:
            status = row["status"]
            if status != "ok":
                verdict = Verdict(row["doc_id"], cast(VerdictStatus, status))
            elif row["canonical"] == row["doc_id"]:
                verdict = Verdict(row["doc_id"], "ok", cluster=row["doc_id"],
                                  canonical=row["doc_id"])
            else:
                similarity, method = closest(
                    fingerprints.capabilities, decoded(row["doc_id"], row["signatures"]),
                    decoded(row["canonical"], row["canonical_signatures"]))
                verdict = Verdict(row["doc_id"], "ok", duplicate_of=row["canonical"],
                                  similarity=similarity, method=method,
                                  cluster=row["canonical"], canonical=row["canonical"])
            record = record_of(verdict, row["url"])
            yield (row["position"], row["es_id"], *(record.get(k) for k in FIELDS))
    return rows


def output_records(fingerprints: Any, canonical: Any, config: NearDupConfig) -> Any:
    """Every readable input record's output record (SCHEMA), in no particular order."""
    from pyspark.sql import functions as F

    pages = fingerprints.where(~F.col("status").isin(REPEATED, UNREADABLE))
    theirs = fingerprints.select(F.col("node").alias("canonical_node"),
                                 F.col("signatures").alias("canonical_signatures"))
    joined = (pages.join(canonical.select("node", "canonical", "canonical_node"), "node", "left")
              .join(theirs, "canonical_node", "left"))
    spark = fingerprints.sparkSession
    decided = spark.createDataFrame(joined.rdd.mapPartitions(record_rows(config)), SCHEMA)
    again = (fingerprints.where(F.col("status") == REPEATED)
             .select("position", "es_id", F.col("doc_id").alias("id")))
    first = decided.drop("position", "es_id", "status")
    repeated = again.join(first, "id").select(
        "position", "es_id", "id", "duplicate_of", "similarity", "method", "cluster",
        "canonical", F.lit(REPEATED).alias("status"), "url")
    return decided.unionByName(repeated)


def unreadable_records(fingerprints: Any) -> Any:
    """The records that could not be read (`dedup` reports them, writes no line): what the
    index marks `bad_field`, each its own cluster."""
    from pyspark.sql import functions as F

    bad = fingerprints.where((F.col("status") == UNREADABLE) & F.col("es_id").isNotNull())
    doc_id = F.coalesce("doc_id", "es_id")
    return bad.select("position", "es_id", doc_id.alias("id"),
                      F.lit(None).cast("string").alias("duplicate_of"),
                      F.lit(None).cast("double").alias("similarity"),
                      F.lit(None).cast("string").alias("method"), doc_id.alias("cluster"),
                      F.lit(False).alias("canonical"), F.lit(UNREADABLE).alias("status"), "url")
