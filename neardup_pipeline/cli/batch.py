"""`neardup batch INPUT... -o OUT --engine spark`: the whole collection judged at once on Spark
(docs/batch.md). PySpark is imported only when the command runs."""

from __future__ import annotations

import argparse
import sys

from neardup_pipeline.cli import options
from neardup_pipeline.cli.commands import about

ENGINES = ("spark",)
FORMATS = ("jsonl", "parquet", "es")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    batch = sub.add_parser("batch", help=about("batch"))
    batch.add_argument(
        "inputs", nargs="+", metavar="INPUT",
        help="JSONL (the dedup input), Parquet (id|url, html|text columns), WARC (.warc, "
        ".warc.gz) or an Elasticsearch index, http(s)://host:9200/INDEX")
    batch.add_argument(
        "-o", "--output", required=True, metavar="OUT",
        help="a folder of JSONL (dedup's lines, in input order) or Parquet part files; with "
        "--output-format es, the index to mark (http(s)://host:9200/INDEX, the input)")
    batch.add_argument("--output-format", choices=FORMATS, default="jsonl",
                       help="jsonl (default), parquet, or es: partial updates of "
                       "neardup_cluster, neardup_canonical, neardup_of on the input index")
    batch.add_argument("--engine", choices=ENGINES, default="spark",
                       help="the engine that runs the job (default: spark)")
    batch.add_argument("--master", metavar="URL",
                       help="Spark master (default: local[2], or spark-submit's)")
    batch.add_argument("--partitions", type=options.at_least(1), default=8, metavar="N",
                       help="shuffle partitions, and Elasticsearch slices (default: 8; about "
                       "2-4 per executor core)")
    batch.add_argument("--max-bucket", type=options.at_least(2), default=1000, metavar="N",
                       help="pages of one lookup key compared pair by pair; a larger bucket "
                       "is cut in blocks joined through their first pages (default: 1000)")
    batch.add_argument("--work", metavar="DIR",
                       help="where each stage is kept for a resumed run (default: OUT.stages; "
                       "a shared file system on a cluster)")
    options.add_field_options(batch)
    options.add_method_options(batch)
    options.add_es_connection_options(batch)
    batch.set_defaults(func=cmd_batch)


def cmd_batch(args: argparse.Namespace) -> int:
    from neardup_pipeline.batch.job import BatchJob, run
    from neardup_pipeline.batch.session import spark_session

    config = options.config_from_args(args)
    config = config.replace(elastic=options.es_settings(args, config.elastic))
    output = str(args.output).rstrip("/")
    work = args.work or (f"{output}.stages" if args.output_format != "es"
                         else f"neardup-batch-{output.rsplit('/', 1)[-1]}.stages")
    job = BatchJob(tuple(args.inputs), output, args.output_format, work, config,
                   bucket_limit=args.max_bucket, partitions=args.partitions,
                   fields=options.field_spec(args))
    job.check()
    spark = spark_session(args.master, args.partitions)
    reader = mark = None
    if any(source.startswith(("http://", "https://")) for source in job.inputs):
        from neardup_pipeline.batch.elastic import IndexReader, write_marks

        reader = IndexReader(config, job.fields)

        def mark(records: object) -> None:
            write_marks(config, output, records)
    try:
        summary = run(spark, job, reader, mark)
    finally:
        if reader is not None:
            reader.close()
    print(f"neardup batch: {summary.documents:,} records, {summary.checked:,} checked, "
          f"{summary.duplicates:,} duplicates in {summary.clusters:,} clusters; "
          f"{summary.pairs:,} pairs verified, {summary.edges:,} matched"
          + (f"; stages reused: {', '.join(summary.reused)}" if summary.reused else ""),
          file=sys.stderr)
    if summary.oversized:
        print(f"neardup batch: {summary.oversized:,} lookup keys held more than "
              f"--max-bucket {job.bucket_limit} pages: compared in blocks (docs/batch.md)",
              file=sys.stderr)
    for where, problem in summary.problems:
        print(f"neardup: {where}: {problem}", file=sys.stderr)
    if not summary.complete:
        print(f"neardup batch: {summary.unreadable:,} record(s) unreadable and "
              f"{summary.errors:,} failed to fingerprint (the first {len(summary.problems)} "
              f"above; all in {work}/fingerprints with their status)", file=sys.stderr)
        return 1
    return 0
