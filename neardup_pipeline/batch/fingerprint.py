"""Stage 1: every document fingerprinted in the executors by the crawl's own Fingerprinter and
defaults; a document read twice under one id (a page crawled twice into one feed) is checked
once, at its first position, as `dedup` does."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from neardup_pipeline.batch.documents import document_of
from neardup_pipeline.batch.executor import fingerprinter
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.text.canonical import url_key
from neardup_pipeline.verdict.declared import names_other

SCHEMA = ("position bigint, where string, doc_id string, url string, es_id string, "
          "status string, problem string, keys array<string>, signatures string, "
          "canonical_url string, url_key string, named_key string, named_id string")
UNREADABLE, ERROR, REPEATED = "unreadable", "error", "repeated"
EMPTY = (None,) * 5  # signatures, canonical_url, url_key, named_key, named_id


def named_by(url: str | None, declared: str | None) -> tuple[str | None, str | None]:
    """(the key of the URL, the id) a page declares canonical when it names another page, as
    the crawl looks them up: by URL only for a page with a URL of its own."""
    if not declared or not names_other(url, declared):
        return None, None
    return (url_key(declared) if url else None), declared


def fingerprint_rows(config: NearDupConfig) -> Any:
    """The mapPartitions function of this stage: document rows -> fingerprint rows."""
    def rows(docs: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        fingerprints = fingerprinter(config)
        for row in docs:
            head = (row["position"], row["where"], row["doc_id"], row["url"], row["es_id"])
            if row["problem"] is not None:
                yield (*head, UNREADABLE, row["problem"], [], *EMPTY)
                continue
            try:
                fp = fingerprints.fingerprint(document_of(row))
            except Exception as exc:  # one page's crash is its verdict, not the job's end
                yield (*head, ERROR, f"fingerprinting failed: {exc!r}", [], *EMPTY)
                continue
            keys = [f"{name}:{key}" for name, values in fp.keys.items() for key in values]
            stored = json.dumps(fingerprints.encode(fp)) if fp.status == "ok" else None
            yield (*head, fp.status, None, keys, stored, fp.canonical_url,
                   url_key(row["url"]) if row["url"] else None,
                   *named_by(row["url"], fp.canonical_url))
    return rows


def fingerprint_table(spark: Any, docs: Any, config: NearDupConfig) -> Any:
    """Fingerprints with a node number each (the graph's vertex) and repeated ids marked. Only
    the ids read more than once travel to be compared (Spark broadcasts them when they are
    few), never the signatures."""
    from pyspark.sql import functions as F

    table = spark.createDataFrame(docs.rdd.mapPartitions(fingerprint_rows(config)), SCHEMA)
    repeats = (table.where(F.col("doc_id").isNotNull()).groupBy("doc_id")
               .agg(F.min("position").alias("first"), F.count("*").alias("reads"))
               .where(F.col("reads") > 1).select("doc_id", "first"))
    marked = table.join(repeats, "doc_id", "left")
    repeated = F.col("first").isNotNull() & (F.col("position") != F.col("first"))
    return (marked.withColumn("status", F.when(repeated, F.lit(REPEATED))
                              .otherwise(F.col("status")))
            .drop("first").withColumn("node", F.monotonically_increasing_id()))
