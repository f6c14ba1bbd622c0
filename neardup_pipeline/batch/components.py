"""Stage 4: the match graph's connected components, distributed: large-star / small-star
(Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014). Each round is two
shuffles and keeps every component's edges; the graph converges to one star per component,
every node linked to the component's smallest node, in O(log n) rounds; the rounds stop as
soon as the graph is such a set of stars. Each round's edges are
saved (`save`), which cuts Spark's lineage and lets a killed job resume at the round it
reached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Save = Callable[[str, Any], Any]  # (name, table) -> the table as saved, read back
MAX_ROUNDS = 200  # a cycle-free run needs about log2(largest component); far past that is a bug


def large_star(edges: Any) -> Any:
    """Each node's larger neighbours linked to the smallest node of its neighbourhood."""
    from pyspark.sql import functions as F

    both = edges.select("u", "v").unionByName(edges.select(F.col("v").alias("u"),
                                                           F.col("u").alias("v")))
    low = both.groupBy("u").agg(F.least(F.min("v"), F.first("u")).alias("m"))
    return (both.join(low, "u").where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("u"), F.col("m").alias("v")).distinct())


def small_star(edges: Any) -> Any:
    """Each node and its smaller neighbours linked to the smallest of them."""
    from pyspark.sql import functions as F

    down = edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v"))
    low = down.groupBy("u").agg(F.min("v").alias("m"))
    linked = (down.join(low, "u").where(F.col("v") != F.col("m"))
              .select(F.col("v").alias("u"), F.col("m").alias("v")))
    return linked.unionByName(low.select("u", F.col("m").alias("v"))).distinct()


def stars(edges: Any) -> bool:
    """Whether the graph is one star per component (every node linked to one centre, no centre
    linked on): large-star and small-star then change nothing, so the rounds are done."""
    from pyspark.sql import functions as F

    if not edges.groupBy("u").count().where(F.col("count") > 1).isEmpty():
        return False
    centres = edges.select(F.col("v").alias("u")).distinct()
    return bool(centres.join(edges.select("u"), "u").isEmpty())


def components(edges: Any, save: Save) -> Any:
    """(node, component) of every node with an edge, the component named by its smallest node.
    `edges`: (a, b). A round already saved is read back, not computed again."""
    from pyspark.sql import functions as F

    current = save("round-0", edges.select(F.col("a").alias("u"), F.col("b").alias("v")))
    for number in range(1, MAX_ROUNDS):
        current = save(f"round-{number}", small_star(large_star(current)))
        if stars(current):
            break
    else:
        raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds")
    return (current.select(F.col("u").alias("node"), F.col("v").alias("component"))
            .unionByName(current.select(F.col("v").alias("node"), F.col("v").alias("component")))
            .distinct())
