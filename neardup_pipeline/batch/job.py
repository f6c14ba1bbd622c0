"""One batch job from its inputs to its output, stage by stage, each stage kept (resume.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from neardup_pipeline.batch.candidates import cross_pairs, star_pairs
from neardup_pipeline.batch.canonical import canonicals
from neardup_pipeline.batch.components import Save, components
from neardup_pipeline.batch.fingerprint import ERROR, REPEATED, UNREADABLE, fingerprint_table
from neardup_pipeline.batch.read import kind_of, read_inputs
from neardup_pipeline.batch.records import line_of, output_records, unreadable_records
from neardup_pipeline.batch.resume import Stages, exists, started
from neardup_pipeline.batch.verify import match_edges
from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.hygiene.fields import FieldSpec
from neardup_pipeline.verdict.batch import batchable

OutputFormat = Literal["jsonl", "parquet", "es"]
SHOWN_PROBLEMS = 10


@dataclass(frozen=True)
class BatchJob:
    """What a job reads, how it judges, where it writes."""

    inputs: tuple[str, ...]
    output: str  # a folder (jsonl, parquet) or the index URL to mark (es)
    output_format: OutputFormat
    work: str
    config: NearDupConfig
    bucket_limit: int = 1000
    partitions: int = 8
    fields: FieldSpec = field(default_factory=FieldSpec)

    def identity(self) -> dict[str, Any]:
        """What makes two runs the same job (resume.py): a stage of another is never reused."""
        return {"inputs": list(self.inputs), "output": self.output,
                "format": self.output_format, "bucket_limit": self.bucket_limit,
                "params": Fingerprinter(self.config).params(),
                "demote": list(self.config.verdict.canonical_demote),
                "fields": [self.fields.content, self.fields.kind, self.fields.url,
                           self.fields.id]}

    def check(self) -> None:
        """Refuse what a batch cannot do the crawl's way, before Spark starts."""
        if not batchable(Fingerprinter(self.config)):
            raise ConfigError("neardup batch needs methods whose signatures do not depend on "
                              "the corpus (simhash, minhash, bag, auto, anchors with "
                              "--anchors-model); rarewords needs `neardup dedup --df-pass`")
        if "anchors" in self.config.method_names and not self.config.anchors.model:
            raise ConfigError("neardup batch --method anchors needs --anchors-model (fit one "
                              "with `neardup anchors fit`)")
        if self.output_format == "es" and [kind_of(i) for i in self.inputs] != ["es"]:
            raise ConfigError("--output-format es marks the index the job read: give exactly "
                              "one input, http(s)://host:9200/INDEX")
        if self.bucket_limit < 2:
            raise ConfigError("--max-bucket must be at least 2")


@dataclass
class Summary:
    """What a job did: counts, each stage's seconds, and the records it could not read."""

    documents: int = 0
    checked: int = 0
    duplicates: int = 0
    clusters: int = 0  # of more than one page
    repeated: int = 0
    unreadable: int = 0
    errors: int = 0
    pairs: int = 0
    edges: int = 0
    oversized: int = 0  # buckets past --max-bucket
    seconds: dict[str, float] = field(default_factory=dict)
    reused: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every input record was read and checked."""
        return not self.unreadable and not self.errors


def run(spark: Any, job: BatchJob,
        index_reader: Callable[[Any, int, str, int], Any] | None = None,
        mark: Callable[[Any], None] | None = None) -> Summary:
    """Run (or resume) `job`; `index_reader` reads Elasticsearch inputs, `mark` writes an
    index's marks (elastic.py: their client stays out of a job without them)."""
    if job.output_format != "es" and not started(spark, job.work) and exists(spark, job.output):
        raise ConfigError(f"{job.output} exists: a batch job writes a folder of its own and "
                          "would replace what is there; give another -o, or remove it")
    stages = Stages(spark, job.work, job.identity())
    summary = Summary()

    @contextmanager
    def timed(name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        spent = time.perf_counter() - start
        summary.seconds[name] = round(summary.seconds.get(name, 0.0) + spent, 3)

    config = job.config
    with timed("fingerprint"):
        docs = read_inputs(spark, job.inputs, job.partitions, index_reader)
        fps = stages.save("fingerprints", fingerprint_table(spark, docs, config))
    with timed("candidates"):
        pairs, big = star_pairs(fps, job.bucket_limit)
        pairs = stages.save("pairs", pairs)
        big = stages.save("oversized", big)
    with timed("verify"):
        edges = stages.save("edges", match_edges(pairs, fps, config))
    with timed("components"):
        first = stages.save("components-1", components(edges, rounds(stages, "first")))
    with timed("candidates"):
        more = stages.save("pairs-2", cross_pairs(fps, first, pairs, job.bucket_limit))
    with timed("verify"):
        edges = stages.save("edges-2", edges.unionByName(match_edges(more, fps, config)))
    with timed("components"):
        nodes = stages.save("components", components(edges, rounds(stages, "final")))
    with timed("canonical"):
        chosen = stages.save("canonicals", canonicals(fps, nodes, edges,
                                                      config.verdict.canonical_demote))
    with timed("records"):
        records = output_records(fps, chosen, config)
        if job.output_format == "es":
            records = records.unionByName(unreadable_records(fps))
        records = stages.save("records", records)
    with timed("write"):
        if not stages.done("written"):
            write_output(spark, job, records, mark)
            stages.mark("written")
    summarize(summary, fps, pairs.unionByName(more), edges, big, records)
    summary.reused = stages.reused
    return summary


def rounds(stages: Stages, name: str) -> Save:
    """Where one components run keeps its rounds."""
    return lambda round_, table: stages.save(f"rounds-{name}/{round_}", table)


def write_output(spark: Any, job: BatchJob, records: Any,
                 mark: Callable[[Any], None] | None) -> None:
    """The records in the input's order as JSONL lines or Parquet rows, or as marks."""
    from pyspark.sql import functions as F

    if job.output_format == "es":
        if mark is None:
            raise ConfigError("--output-format es needs the index writer")
        mark(records)
        return
    ordered = records.orderBy("position")
    if job.output_format == "parquet":
        ordered.drop("position", "es_id").write.mode("overwrite").parquet(job.output)
        return
    lines = spark.createDataFrame(
        records.rdd.map(lambda row: (row["position"], line_of(row.asDict()))),
        "position bigint, value string")
    lines.orderBy("position").select(F.col("value")).write.mode("overwrite").text(job.output)


def summarize(summary: Summary, fps: Any, pairs: Any, edges: Any, big: Any,
              records: Any) -> None:
    from pyspark.sql import functions as F

    counts = {row["status"]: row["count"] for row in fps.groupBy("status").count().collect()}
    summary.documents = sum(counts.values())
    summary.checked = counts.get("ok", 0)
    summary.repeated = counts.get(REPEATED, 0)
    summary.unreadable = counts.get(UNREADABLE, 0)
    summary.errors = counts.get(ERROR, 0)
    summary.pairs = pairs.count()
    summary.edges = edges.count()
    summary.oversized = big.count()
    sizes = records.where(F.col("status").isNull()).groupBy("cluster").count()
    shared = sizes.where(F.col("count") > 1).agg(F.count("*").alias("clusters"),
                                                 F.sum(F.col("count") - 1).alias("copies"))
    found = shared.first()
    summary.clusters, summary.duplicates = int(found["clusters"]), int(found["copies"] or 0)
    if not summary.unreadable and not summary.errors:
        return
    bad = fps.where(F.col("status").isin(UNREADABLE, ERROR)).orderBy("position")
    summary.problems = [(row["where"], row["problem"])
                        for row in bad.select("where", "problem").take(SHOWN_PROBLEMS)]
