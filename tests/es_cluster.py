#!/usr/bin/env python3
"""A three-node Elasticsearch cluster for the tests, from the distribution of tests/es_server.py.

Usage::

    python tests/es_cluster.py --serve   # start three nodes, print their URLs, run until Ctrl-C

Each node is that module's `Server` (the cached integ-test zip, the JDK, the user, its own
temporary folders, heap, console log and stop), given its own name and ports and the cluster's
discovery instead of single-node discovery: 127.0.0.1, distinct free HTTP and transport ports,
`discovery.seed_hosts` naming every node's transport port, `cluster.initial_master_nodes`
naming every node, security off. Every node is master-eligible and holds data, so any one may
be killed and the other two keep a quorum. `ClusterNode.kill` sends SIGKILL to a node's process
group (no shutdown at all, as a crashed machine); `launch` starts it again on its ports and data
folder, and it rejoins. neardup's indices get one replica here by themselves: their settings say
`auto_expand_replicas: 0-1`.

`started_cluster()` gives a running cluster and stops it; tests/test_cluster_failover.py makes
it a session fixture, started only when that test runs. The nodes start at once and run the
client compiler alone (`-XX:TieredStopAtLevel=1`: a start costs ~40% less CPU): about a minute
on 2 busy cores. Environment: as tests/es_server.py (NEARDUP_ES_VERSION; NEARDUP_ES_JAVA_OPTS,
each node's heap, default 512 MB; NEARDUP_ES_START_TIMEOUT).

Standard library only, like tests/es_server.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.es_server import (
    DEFAULT_START_TIMEOUT,
    DEFAULT_VERSION,
    Server,
    ServerError,
    free_port,
    install,
    log,
    server_user,
)

SIZE = 3


class ClusterNode(Server):
    """One node of the cluster: a `Server` with its given ports and the cluster's discovery."""

    def __init__(self, version: str, name: str, ports: tuple[int, int],
                 seeds: Sequence[str], masters: Sequence[str]) -> None:
        super().__init__(version)
        self.name = name
        self.given_ports = ports
        self.seeds = list(seeds)
        self.masters = list(masters)

    def ports(self) -> tuple[int, int]:
        return self.given_ports

    def node_options(self) -> list[str]:
        return [
            f"-Enode.name={self.name}",
            f"-Ediscovery.seed_hosts={','.join(self.seeds)}",
            # Read only when the cluster forms the first time; a restarted node ignores it.
            f"-Ecluster.initial_master_nodes={','.join(self.masters)}",
        ]

    def launch(self, timeout: float) -> None:
        """Start the prepared node (again: same ports and data) and wait until it has joined."""
        assert self.workdir is not None
        options = self.workdir / "config" / "jvm.options.d" / "cluster-node.options"
        if not options.exists():
            options.parent.mkdir(exist_ok=True)
            # The client compiler alone: a start takes 20 CPU seconds instead of 34 (three
            # share two cores), and the tests' small load needs no optimising compiler.
            options.write_text("-XX:TieredStopAtLevel=1\n", encoding="utf-8")
        super().launch(timeout)

    @property
    def running(self) -> bool:
        """True while the node's process is running (not killed, halted or exited)."""
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the node's whole process group: no shutdown, no flush, as a crashed machine.
        Ports, config and data stay: `launch` starts it again."""
        process, self.process = self.process, None
        if process is None:
            return
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        log(f"{self.name} killed (SIGKILL)")


def distinct_ports(count: int) -> list[int]:
    """`count` different free TCP ports on 127.0.0.1."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


class Cluster:
    """Three nodes on 127.0.0.1, one temporary folder each; `url` is the product's form of
    several nodes: their URLs separated by commas."""

    def __init__(self, version: str, size: int = SIZE) -> None:
        self.version = version
        self.start_seconds = 0.0  # how long `start` took, for the tests' reports
        ports = distinct_ports(2 * size)
        names = [f"neardup-node-{n}" for n in range(size)]
        seeds = [f"127.0.0.1:{ports[2 * n + 1]}" for n in range(size)]
        self.nodes = [
            ClusterNode(version, names[n], (ports[2 * n], ports[2 * n + 1]), seeds, names)
            for n in range(size)
        ]

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """Every node's URL, comma-separated, as NEARDUP_BACKEND and --es take them."""
        return ",".join(self.urls)

    def node(self, name: str) -> ClusterNode:
        return next(node for node in self.nodes if node.name == name)

    def start(self, timeout: float) -> None:
        """Start every node at once (none can elect a master alone) and wait until all have
        joined and the cluster is green; stops them all on failure."""
        started = time.monotonic()
        install(self.version)  # fetched and unpacked once, before the nodes race for it
        server_user()  # created once (as root) before three threads look for it
        try:
            with ThreadPoolExecutor(len(self.nodes)) as pool:
                for done in [pool.submit(node.start, timeout) for node in self.nodes]:
                    done.result()
            self.wait(status="green", timeout=timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        log(f"cluster of {len(self.nodes)} nodes green after {self.start_seconds:.1f} s: "
            f"{self.url}")

    def get(self, path: str, timeout: float = 30.0) -> Any:
        """GET `path` (JSON) from the first running node that answers."""
        problem: Exception | None = None
        for node in self.nodes:
            if not node.running:
                continue
            try:
                with urllib.request.urlopen(node.url + path, timeout=timeout) as response:
                    return json.load(response)
            except (OSError, ValueError) as exc:
                problem = exc
        raise ServerError(f"no node of the cluster answers {path}: {problem}")

    def wait(self, status: str = "green", timeout: float = 120.0) -> dict[str, Any]:
        """Wait until every running node has joined and the cluster has `status`; its health."""
        running = sum(node.running for node in self.nodes)
        query = urllib.parse.urlencode({"wait_for_status": status, "wait_for_nodes": running,
                                        "wait_for_no_initializing_shards": "true",
                                        "timeout": "2s"})
        deadline = time.monotonic() + timeout
        while True:
            try:
                health: dict[str, Any] = self.get(f"/_cluster/health?{query}", timeout=10)
                if not health.get("timed_out"):
                    return health
            except ServerError:
                pass  # no master yet: 503 until one is elected
            if time.monotonic() > deadline:
                raise ServerError(f"cluster not {status} with {running} nodes after "
                                  f"{timeout:.0f} s")
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop every node and delete its folders."""
        for node in self.nodes:
            node.stop()


@contextlib.contextmanager
def started_cluster() -> Iterator[Cluster]:
    """A started cluster of the configured version, stopped (folders deleted) at the end."""
    cluster = Cluster(os.environ.get("NEARDUP_ES_VERSION", DEFAULT_VERSION))
    try:
        cluster.start(float(os.environ.get("NEARDUP_ES_START_TIMEOUT", DEFAULT_START_TIMEOUT)))
        yield cluster
    finally:
        cluster.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Start the cluster and keep it running until Ctrl-C (or until a node dies)."""
    parser = argparse.ArgumentParser(description="Run a 3-node Elasticsearch on 127.0.0.1.")
    parser.add_argument("--serve", action="store_true", required=True,
                        help="start and run until Ctrl-C")
    parser.add_argument("--version", default=os.environ.get("NEARDUP_ES_VERSION",
                                                            DEFAULT_VERSION))
    options = parser.parse_args(argv)
    cluster = Cluster(options.version)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        cluster.start(float(os.environ.get("NEARDUP_ES_START_TIMEOUT", DEFAULT_START_TIMEOUT)))
        print(f"Elasticsearch cluster {options.version} is up at {cluster.url}", flush=True)
        print("Press Ctrl-C to stop it.", flush=True)
        while all(node.running for node in cluster.nodes):
            time.sleep(1)
        log("a node exited on its own")
        return 1
    except ServerError as error:
        log(f"error: {error}")
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        cluster.stop()
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
