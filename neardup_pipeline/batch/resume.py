"""Each stage's output kept in the job's work folder, so a killed job run again with the same
inputs, settings and output goes on from its last completed stage. A stage counts as done when
Spark committed it (its `_SUCCESS`); a half-written one is written again. The folder holds the
job's identity: another job's folder is refused, never mixed in."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from neardup_pipeline.errors import ConfigError

IDENTITY = "job.json"
DONE = "_SUCCESS"


def identity_digest(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def exists(spark: Any, path: str) -> bool:
    """Whether `path` exists on its Hadoop file system (local, hdfs://, s3a://)."""
    jvm = spark.sparkContext._jvm
    where = jvm.org.apache.hadoop.fs.Path(path)
    return bool(where.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(where))


def started(spark: Any, work: str) -> bool:
    """Whether a job keeps its stages in `work` already."""
    return exists(spark, f"{work.rstrip('/')}/{IDENTITY}")


class Stages:
    """The work folder of one job (any Hadoop file system path: local, hdfs://, s3a://)."""

    def __init__(self, spark: Any, work: str, identity: dict[str, Any]) -> None:
        self.spark, self.work = spark, work.rstrip("/")
        self.reused: list[str] = []  # stages found done, not run again
        digest = identity_digest(identity)
        marker = self.path(IDENTITY)
        if self.exists(marker):
            held = spark.read.text(marker).first()[0]
            if held != digest:
                raise ConfigError(
                    f"work folder {self.work} holds another job's stages (other inputs, "
                    "settings or output): give another --work folder, or remove it to start "
                    "over")
        else:
            spark.createDataFrame([(digest,)], "value string").coalesce(1).write.mode(
                "overwrite").text(marker)

    def path(self, name: str) -> str:
        return f"{self.work}/{name}"

    def exists(self, path: str) -> bool:
        return exists(self.spark, path)

    def done(self, name: str) -> bool:
        return self.exists(f"{self.path(name)}/{DONE}")

    def save(self, name: str, table: Any) -> Any:
        """`table` written as stage `name` unless done before; the stage as saved."""
        if self.done(name):
            self.reused.append(name)
        else:
            table.write.mode("overwrite").parquet(self.path(name))
        return self.spark.read.parquet(self.path(name))

    def mark(self, name: str) -> None:
        """Record that step `name` (one without a table: a write elsewhere) completed."""
        self.spark.createDataFrame([(name,)], "value string").coalesce(1).write.mode(
            "overwrite").text(self.path(name))
