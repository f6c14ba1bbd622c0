"""The Spark session a job runs in: local mode by default, any cluster through `--master`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from neardup_pipeline.errors import ConfigError

JVM_ROOT = Path("/usr/lib/jvm")
JAVA_RELEASES = (17, 21)  # the Java releases Spark 4 runs on


def java_home(root: Path = JVM_ROOT) -> str | None:
    """A JDK Spark 4 runs on under `root` (Java 17, else 21), for a machine without JAVA_HOME."""
    if not root.is_dir():
        return None
    for release in JAVA_RELEASES:
        for jdk in sorted(root.iterdir()):
            if f"-{release}-" in jdk.name and (jdk / "bin" / "java").exists():
                return str(jdk)
    return None


def spark_session(master: str | None, partitions: int, app: str = "neardup batch") -> Any:
    """The active session if spark-submit made one, else a new one on `master` (default
    local[2]); `partitions` sets the shuffles' width."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise ConfigError('neardup batch --engine spark needs PySpark: pip install '
                          '"neardup-pipeline[spark]"') from exc
    if "JAVA_HOME" not in os.environ and (home := java_home()) is not None:
        os.environ["JAVA_HOME"] = home
    # The executors' Python must be this one: it has neardup and its compiled extensions.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        active.conf.set("spark.sql.shuffle.partitions", str(partitions))
        return active
    builder = (SparkSession.builder.appName(app).master(master or "local[2]")
               .config("spark.sql.shuffle.partitions", str(partitions))
               .config("spark.default.parallelism", str(partitions))
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.adaptive.enabled", "true"))
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: say which Java is needed
        raise ConfigError(f"Spark did not start ({exc}): it needs Java 17 or 21; set "
                          "JAVA_HOME to such a JDK") from exc
    session.sparkContext.setLogLevel("ERROR")
    return session
