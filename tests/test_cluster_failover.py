"""A node of a three-node Elasticsearch cluster killed (SIGKILL) mid-crawl and brought back: no
page lost, no pair missed, and the crawl keeps checking pages against the other two nodes.

The cluster is tests/es_cluster.py's, started for this test alone (a session fixture nothing
else asks for); the crawl is given every node's URL, comma-separated, with the default
Elasticsearch timeouts. neardup's indices have one replica on three nodes (their
`auto_expand_replicas: 0-1`). The node killed is the one holding the fingerprint index's primary
shard, so its replica must be promoted while the crawl writes.

The site holds PAIRS near-duplicate pairs (b_i is a_i with two words changed), crawled a_0..a_n
then b_0..b_n, one request at a time. Faults are tied to requests, so they land at the same
pages on every run: the node dies when a7 is asked for (once the pipeline has put out the pages
before it), starts again when a16 is asked for, and b10 waits until it has rejoined and the
cluster is green. Pairs 0-6 thus span the kill, 7-9 lie inside the outage, 10-19 span the return.
"""

from __future__ import annotations

import http.server
import itertools
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from itemadapter import ItemAdapter
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.index.elastic.connection import client_from_settings
from neardup_pipeline.index.elastic.settings import ElasticSettings
from tests import crawl_harness
from tests.crawl_harness import fast_settings
from tests.documents import random_vocabulary
from tests.es_cluster import Cluster, ClusterNode, started_cluster

PAIRS = 20
FIRST = [f"/a{i}" for i in range(PAIRS)]
SECOND = [f"/b{i}" for i in range(PAIRS)]
PATHS = ["/index.html", *FIRST, *SECOND]
KILL_AT, RESTART_AT, BACK_BY = "/a7", "/a16", "/b10"
DOWN = PATHS[PATHS.index(KILL_AT):PATHS.index(BACK_BY)]  # checked while the node is away
PAGE_DELAY = 0.05  # seconds per response: the pipeline keeps pace, faults land at their page
RESTART_TIMEOUT = 300.0


def _pages() -> dict[str, bytes]:
    rng = random.Random(29)
    vocab = random_vocabulary(rng, 3000, shortest=4)
    texts: dict[str, str] = {}
    for i in range(PAIRS):
        words = [rng.choice(vocab) for _ in range(200)]
        texts[f"/a{i}"] = " ".join(words)
        words[40], words[140] = "edited", "words"
        texts[f"/b{i}"] = " ".join(words)
    pages = {p: f"<html><head><title>{p}</title></head><body><p>{t}</p></body></html>"
             for p, t in texts.items()}
    links = "".join(f'<a href="{p}">{p}</a> ' for p in PATHS[1:])
    pages["/index.html"] = f"<html><body><p>start page</p>{links}</body></html>"
    return {p: body.encode() for p, body in pages.items()}


class Site:
    """The pages on 127.0.0.1; `actions[path]` runs before that path is served."""

    def __init__(self) -> None:
        self.pages = _pages()
        self.actions: dict[str, Callable[[], None]] = {}
        self.came_out: dict[str, float] = {}  # path -> when the pipeline put it out
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(PAGE_DELAY)
                action = site.actions.pop(self.path, None)
                if action is not None:
                    action()
                body = site.pages.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, items: int) -> None:
        """Until the pipeline has put out `items` items (a fault lands between two items)."""
        deadline = time.monotonic() + 60
        while len(self.came_out) < items and time.monotonic() < deadline:
            time.sleep(0.02)


class Failover:
    """Kill the node holding the fingerprint index's primary, start it again, say when it is
    back (rejoined, cluster green)."""

    def __init__(self, cluster: Cluster, fingerprint_index: str) -> None:
        self.cluster = cluster
        self.fingerprint_index = fingerprint_index
        self.victim: ClusterNode | None = None
        self.was_master = False
        self.killed_at = self.back_at = 0.0
        self.back = threading.Event()
        self.problem: BaseException | None = None

    def kill(self) -> None:
        try:
            shards = self.cluster.get(f"/_cat/shards/{self.fingerprint_index}?format=json")
            primary = next(s["node"] for s in shards if s["prirep"] == "p")
            master = self.cluster.get("/_cat/master?format=json")[0]["node"]
            self.victim = self.cluster.node(primary)
            self.was_master = primary == master
            self.victim.kill()
            self.killed_at = time.monotonic()
        except BaseException as exc:  # raised in the site's thread: the test reports it
            self.problem = exc
            raise

    def restart(self) -> None:
        def run() -> None:
            try:
                assert self.victim is not None
                self.victim.launch(RESTART_TIMEOUT)
                self.cluster.wait("green", RESTART_TIMEOUT)
                self.back_at = time.monotonic()
            except BaseException as exc:  # reported by the test, never left in a thread
                self.problem = exc
            finally:
                self.back.set()

        threading.Thread(target=run, daemon=True).start()

    def wait_back(self) -> None:
        self.back.wait(RESTART_TIMEOUT)


@pytest.fixture(scope="session")
def es_cluster() -> Iterator[Cluster]:
    """The three-node cluster, started the first time a test asks for it."""
    with started_cluster() as cluster:
        yield cluster


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


def indices(cluster: Cluster, *names: str) -> dict[str, list[dict[str, str]]]:
    """The shard copies of each index: {index: [{prirep, state, node}, ...]}."""
    found: dict[str, list[dict[str, str]]] = {name: [] for name in names}
    for shard in cluster.get(f"/_cat/shards/{','.join(names)}?format=json"):
        found[shard["index"]].append(shard)
    return found


def test_several_node_urls_make_one_client() -> None:
    """NEARDUP_BACKEND and --es take the nodes of one cluster as comma-separated URLs: one
    client over all of them, credentials given once and never shown."""
    client, location = client_from_settings(
        "http://neardup:pa,ss@127.0.0.1:9201, http://127.0.0.1:9202", ElasticSettings(), env={})
    try:
        assert sorted(n.config.port for n in client.transport.node_pool.all()) == [9201, 9202]
        assert location == "http://***@127.0.0.1:9201,http://127.0.0.1:9202"
    finally:
        client.close()
    for mixed in ("http://a:1@127.0.0.1:9201,http://b:2@127.0.0.1:9202",
                  "http://127.0.0.1:9201,https://127.0.0.1:9202",
                  "http://127.0.0.1:9201,127.0.0.1:9202"):
        with pytest.raises(ConfigError):
            client_from_settings(mixed, ElasticSettings(), env={})


@pytest.mark.elasticsearch
@deferred_f_from_coro_f
async def test_node_killed_mid_crawl_loses_nothing(
    es_cluster: Cluster, site: Site, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:10]
    fingerprints = f"neardup-fingerprints-failover-{suffix}"
    pages_index = f"neardup-pages-failover-{suffix}"
    failover = Failover(es_cluster, fingerprints)

    def kill() -> None:
        site.wait_for(PATHS.index(KILL_AT))
        failover.kill()

    def heard(path: str, _item: Any) -> None:
        site.came_out.setdefault(path, time.monotonic())

    site.actions[KILL_AT] = kill
    site.actions[RESTART_AT] = failover.restart
    site.actions[BACK_BY] = failover.wait_back
    settings = fast_settings(
        DOWNLOAD_TIMEOUT=RESTART_TIMEOUT + 60, NEARDUP_ACTION="tag",
        NEARDUP_BACKEND=es_cluster.url, NEARDUP_FINGERPRINT_INDEX=fingerprints,
        NEARDUP_PAGES_INDEX=pages_index, NEARDUP_ES_BULK_SIZE=4,
        NEARDUP_SPOOL_PATH=str(tmp_path / "spool.sqlite"),
        # Failover takes 0.6-2.2 s here; the margin keeps a loaded machine's slower promotion
        # from sending pages to the spool, which this test does not exercise.
        NEARDUP_ES_RETRY_SECONDS=30,
    )
    result = await crawl_harness.crawl(site.base, settings, on_item=heard)
    assert failover.problem is None, failover.problem
    assert failover.victim is not None
    down = [p for p, t in site.came_out.items() if failover.killed_at < t < failover.back_at]
    times = sorted(site.came_out.values())
    stall = max(b - a for a, b in itertools.pairwise(times))
    failover_wait = site.came_out[KILL_AT] - failover.killed_at  # the first page after the kill
    status = {p: ItemAdapter(i).get("neardup_status") for p, i in result.kept.items()}
    neardup = crawl_harness.neardup_stats(result)
    print(f"\n[failover] cluster start {es_cluster.start_seconds:.1f} s; killed "
          f"{failover.victim.name} (primary of the fingerprint index"
          f"{', elected master' if failover.was_master else ''}); down "
          f"{failover.back_at - failover.killed_at:.1f} s (restart and green), {len(down)} "
          f"pages checked meanwhile; first page after the kill out in {failover_wait:.1f} s; "
          f"longest wait between two pages {stall:.1f} s (the return); crawl "
          f"{result.seconds:.1f} s; {neardup}")

    # Nothing lost: every page came out once, kept (tag mode) and checked live.
    assert result.stats["finish_reason"] == "finished"
    assert result.repeated() == []
    assert sorted(result.kept) == sorted(PATHS)
    assert set(status.values()) == {"checked"}, status
    assert neardup.get("neardup/errors", 0) == 0
    # The crawl kept going against the other two nodes: the pages of the outage came out
    # checked while the node was away.
    assert sorted(down) == sorted(DOWN)
    # No pair missed: in each, a_i is its cluster's original and b_i points at it.
    for a, b in zip(FIRST, SECOND, strict=True):
        assert ItemAdapter(result.kept[a])["neardup_of"] is None, a
        assert ItemAdapter(result.kept[b])["neardup_of"] == site.base + a, b

    # The cluster holds it all: three nodes, green, every index with its one replica started,
    # every page's fingerprint and record, one canonical per pair and the copy pointing at it.
    health = es_cluster.wait("green", 60)
    assert health["number_of_nodes"] == 3
    copies = indices(es_cluster, fingerprints, pages_index, f"{fingerprints}-writelog")
    for name, shards in copies.items():
        assert sorted(s["prirep"] for s in shards) == ["p", "r"], (name, shards)
        assert {s["state"] for s in shards} == {"STARTED"}, (name, shards)
    client = Elasticsearch(es_cluster.urls, request_timeout=30)
    try:
        client.indices.refresh(index=[fingerprints, pages_index])
        assert client.count(index=fingerprints)["count"] == len(PATHS)
        hits = client.search(index=pages_index, size=len(PATHS) + 10)["hits"]["hits"]
    finally:
        client.close()
    records = {h["_source"]["url"][len(site.base):]: h["_source"] for h in hits}
    assert sorted(records) == sorted(PATHS)
    for a, b in zip(FIRST, SECOND, strict=True):
        assert records[a]["is_canonical"] is True, records[a]
        assert records[b]["is_canonical"] is False, records[b]
        assert records[b]["duplicate_of"] == site.base + a, records[b]
