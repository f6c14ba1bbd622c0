"""Fault injection against a real Elasticsearch that these tests own: stopped and started again
mid-crawl, paused with SIGSTOP/SIGCONT (a full bulk buffer waiting on it), gone at close, gone at
start. Every item must come out once, `checked` or `unchecked`; unchecked pages' fingerprints are
spooled and replayed, and the stats add up.

One server for the module (its own process, never the shared test server), restarted in place on
the same port and data folder: three starts in all. The fault happens inside the site's HTTP
handler when the crawl requests a given page, so it lands at the same item on every run.
"""

from __future__ import annotations

import http.server
import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from itemadapter import ItemAdapter
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.index.elastic.settings import ElasticSettings
from neardup_pipeline.scrapy.spool import Spool
from neardup_pipeline.scrapy.stats import INCOMPLETE_REASON
from tests import crawl_harness
from tests.crawl_harness import CrawlResult, fast_settings
from tests.documents import random_vocabulary
from tests.es_server import Server, free_port, own_server
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.elasticsearch

ORIGINALS = [f"/o{i}" for i in range(12)]
COPIES = {f"/d{i}": f"/o{i}" for i in range(12)}  # each a near-copy (2 words changed)
INNER = {"/o7": "/o6"}  # a near-duplicate pair inside the outage: found only at replay
PATHS = ORIGINALS + list(COPIES)
PAGE_DELAY = 0.1
OUTAGE = {f"/o{i}" for i in range(4, 12)}  # the pages requested while the server is away


def _texts() -> dict[str, str]:
    rng = random.Random(8)
    vocab = random_vocabulary(rng, 3000, shortest=4)
    texts = {p: " ".join(rng.choice(vocab) for _ in range(200)) for p in ORIGINALS}
    texts["/o7"] = texts["/o6"].replace(texts["/o6"].split()[50], "changed", 1)
    for copy, original in COPIES.items():
        words = texts[original].split()
        words[20], words[120] = "edited", "words"
        texts[copy] = " ".join(words)
    return texts


def after(site: Site, pages: int, action: Callable[[], None]) -> Callable[[], None]:
    """The action, once the pipeline has put out `pages` items (the fault lands between two
    items, never while one is being checked)."""

    def run() -> None:
        deadline = time.monotonic() + 60
        while len(site.scraped) < pages and time.monotonic() < deadline:
            time.sleep(0.02)
        action()

    return run


class Site:
    """The pages, served on 127.0.0.1; `on(path, action)` runs the action before serving it."""

    def __init__(self) -> None:
        texts = _texts()
        links = "".join(f'<a href="{p}">{p}</a> ' for p in PATHS)
        self.pages = {p: f"<html><head><title>{p}</title></head><body><p>{t}</p></body></html>"
                      for p, t in texts.items()}
        self.pages["/index.html"] = f"<html><body><p>start page</p>{links}</body></html>"
        self.actions: dict[str, Callable[[], None]] = {}
        self.timings: dict[str, float] = {}
        self.scraped: set[str] = set()  # filled by the crawl: a fault waits for the pipeline
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(PAGE_DELAY)  # the pipeline keeps pace: a fault lands at its page
                action = site.actions.pop(self.path, None)
                if action is not None:
                    started = time.monotonic()
                    action()
                    site.timings[self.path] = time.monotonic() - started
                body = site.pages.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture(scope="module")
def own_es() -> Iterator[Server]:
    """An Elasticsearch process of this module's own, to stop, pause and restart at will."""
    with own_server() as server:
        yield server


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


async def crawl(base: str, site: Site | None = None, **extra: Any) -> CrawlResult:
    """Tag mode (every page kept, checked or unchecked) with short Elasticsearch timeouts; the
    site hears of each item, so a fault can wait for the pipeline."""
    settings = fast_settings(
        DOWNLOAD_TIMEOUT=300, NEARDUP_ACTION="tag", NEARDUP_ES_REQUEST_TIMEOUT=2.0,
        NEARDUP_ES_RETRY_SECONDS=3.0, NEARDUP_ES_REPROBE_SECONDS=0.5,
    )
    settings.update(extra)
    heard = None if site is None else lambda path, _: site.scraped.add(path)
    return await crawl_harness.crawl(base, settings, on_item=heard)


def names(tmp_path: Path) -> dict[str, Any]:
    suffix = tmp_path.name.replace("_", "-").lower()[-30:]
    return {"NEARDUP_FINGERPRINT_INDEX": f"neardup-rel-{suffix}",
            "NEARDUP_SPOOL_PATH": str(tmp_path / "spool.sqlite")}


def es_count(url: str, index: str) -> int:
    client = Elasticsearch(url, request_timeout=30)
    try:
        client.indices.refresh(index=index)
        return int(client.count(index=index).body["count"])
    finally:
        client.close()


def status_of(result: CrawlResult) -> dict[str, str]:
    return {p: str(ItemAdapter(i).get("neardup_status")) for p, i in result.kept.items()}


def assert_nothing_lost(result: CrawlResult, complete: bool | None = None) -> None:
    """Every page once, kept (tag mode), checked or unchecked; the spider finished, and its
    finish reason says whether neardup's part is done: `neardup_incomplete` while spooled rows
    wait for the next crawl (`complete`, when given, says which the test expects)."""
    left = bool(result.stats.get("neardup/spool/pending"))
    if complete is not None:
        assert complete is not left, result.stats.get("neardup/spool/pending")
    assert result.stats["finish_reason"] == (INCOMPLETE_REASON if left else "finished")
    assert result.repeated() == []
    assert sorted(result.kept) == sorted([*PATHS, "/index.html"])
    assert set(status_of(result).values()) <= {"checked", "unchecked"}
    assert result.stats.get("neardup/errors", 0) == 0


def assert_one_error(caplog: pytest.LogCaptureFixture) -> None:
    """The outage said once at ERROR (what happened, where the spool is, how it is replayed),
    and no traceback anywhere."""
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "NEARDUP_SPOOL_PATH" in errors[0], errors
    assert not any(r.exc_info or r.exc_text for r in caplog.records)


def assert_copy_caught(result: CrawlResult, copy: str, original: str) -> None:
    """A copy points at its original; d7 (copy of o7, itself a copy of o6) at any of that group."""
    found = str(ItemAdapter(result.kept[copy])["neardup_of"])[len(result.base):]
    group = {original, *(k for k, v in INNER.items() if v == original)}
    group |= {v for k, v in INNER.items() if k == original}
    group |= {c for c, o in COPIES.items() if o in group}
    assert found in group - {copy}, (copy, found)


def report(name: str, result: CrawlResult, site: Site) -> None:
    neardup = {k: v for k, v in result.stats.items() if k.startswith("neardup/")}
    faults = {k: round(v, 2) for k, v in site.timings.items()}
    print(f"\n[{name}] crawl {result.seconds:.1f} s, fault actions {faults}: {neardup}")


@deferred_f_from_coro_f
async def test_stop_and_restart_mid_crawl(
    own_es: Server, site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped at /o4, started again (same port and data) at /d0: o4..o11 pass unchecked,
    are replayed once the server answers, and their copies d4..d11 are caught online."""
    up = threading.Event()

    def start_again() -> None:
        own_es.launch(180)
        up.set()

    site.actions["/o4"] = after(site, 5, own_es.halt)
    site.actions["/o9"] = threading.Thread(target=start_again, daemon=True).start
    site.actions["/d0"] = lambda: (up.wait(240), None)[1]
    extra = names(tmp_path)
    result = await crawl(site.base, site, NEARDUP_BACKEND=own_es.url, NEARDUP_ES_BULK_SIZE=4,
                         **extra)
    report("stop/restart", result, site)
    assert_nothing_lost(result)
    assert_one_error(caplog)
    status = status_of(result)
    unchecked = {p for p, s in status.items() if s == "unchecked"}
    assert unchecked == OUTAGE
    for copy, original in COPIES.items():  # every copy caught, the replayed originals' too
        assert_copy_caught(result, copy, original)
    stats = result.stats
    n = len(unchecked)
    assert stats["neardup/unchecked"] == stats["neardup/spooled"] == stats["neardup/replayed"] == n
    assert stats["neardup/replayed/duplicates"] == len(INNER)  # o7, a copy of o6, at replay
    assert stats["neardup/es/outages"] == 1
    assert stats["neardup/es/unavailable"] >= 1
    assert stats["neardup/items"] == len(PATHS) + 1
    assert stats["neardup/checked"] == len(PATHS) + 1 - n  # the unchecked were not compared
    assert "neardup/spool/pending" not in stats
    # Nothing lost in the index either: every page's fingerprint is stored.
    assert es_count(own_es.url, extra["NEARDUP_FINGERPRINT_INDEX"]) == len(PATHS) + 1
    assert Spool(extra["NEARDUP_SPOOL_PATH"]).pending() == 0


@deferred_f_from_coro_f
async def test_paused_server_full_bulk_buffer(
    own_es: Server, site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGSTOP at /o4 with writes in the bulk buffer (size 4), SIGCONT at /d0: requests hang
    until the bounded wait ends, the buffered writes wait in memory and are sent after the
    pause; the pages seen meanwhile pass unchecked and are replayed."""
    site.actions["/o4"] = after(site, 5, own_es.pause)
    site.actions["/d0"] = after(site, 13, own_es.resume)  # once o4..o11 came out, unchecked
    extra = names(tmp_path)
    try:
        result = await crawl(site.base, site, NEARDUP_BACKEND=own_es.url,
                             NEARDUP_ES_BULK_SIZE=4, **extra)
    finally:
        own_es.resume()
    report("pause/resume", result, site)
    assert_nothing_lost(result)
    assert_one_error(caplog)
    status = status_of(result)
    unchecked = {p for p, s in status.items() if s == "unchecked"}
    # Pages checked in the moments after SIGCONT, before the next probe, pass unchecked too.
    assert OUTAGE <= unchecked <= OUTAGE | set(COPIES)
    late = unchecked & set(COPIES)
    for copy, original in COPIES.items():
        if copy not in late:
            assert_copy_caught(result, copy, original)
    stats = result.stats
    n = len(unchecked)
    assert stats["neardup/unchecked"] == stats["neardup/spooled"] == stats["neardup/replayed"] == n
    assert stats["neardup/replayed/duplicates"] == len(INNER) + len(late)  # found at replay
    assert stats["neardup/es/retries"] >= 1
    assert es_count(own_es.url, extra["NEARDUP_FINGERPRINT_INDEX"]) == len(PATHS) + 1


@deferred_f_from_coro_f
async def test_gone_at_close_then_next_crawl_replays(
    own_es: Server, site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped at the last page, with 25 writes still buffered (bulk size 100): they and the
    last page are spooled at close; the next crawl with the same spool replays them first."""
    site.actions["/d11"] = after(site, len(PATHS), own_es.halt)
    extra = names(tmp_path)
    result = await crawl(site.base, site, NEARDUP_BACKEND=own_es.url, NEARDUP_ES_BULK_SIZE=100,
                         **extra)
    report("gone at close", result, site)
    assert_one_error(caplog)
    assert_nothing_lost(result, complete=False)
    assert [p for p, s in status_of(result).items() if s == "unchecked"] == ["/d11"]
    stats = result.stats
    assert stats["neardup/spooled"] == 1
    assert stats["neardup/spool/actions"] == len(PATHS)  # index page + 23 checked pages
    assert stats["neardup/spool/pending"] == len(PATHS) + 1
    spool = Spool(extra["NEARDUP_SPOOL_PATH"])
    assert spool.pending() == len(PATHS) + 1
    spool.close()

    await_start = time.monotonic()
    own_es.launch(180)
    restart = time.monotonic() - await_start
    again = await crawl(site.base, NEARDUP_BACKEND=own_es.url, **extra)
    report(f"next crawl (restart {restart:.1f} s)", again, site)
    assert again.stats["neardup/replayed/actions"] == len(PATHS)
    assert again.stats["neardup/replayed"] == 1
    assert again.stats["neardup/replayed/duplicates"] == 1  # d11, a copy of o11
    assert Spool(extra["NEARDUP_SPOOL_PATH"]).pending() == 0
    assert es_count(own_es.url, extra["NEARDUP_FINGERPRINT_INDEX"]) == len(PATHS) + 1
    # The second crawl saw every page before: all are copies of the first crawl's pages now.
    assert all(status_of(again)[p] == "checked" for p in PATHS)


@deferred_f_from_coro_f
async def test_default_settings_keep_a_crawl_moving_through_an_outage(
    own_es: Server, site: Site, tmp_path: Path
) -> None:
    """With the default timeouts, a server frozen at /o4 (SIGSTOP: every request hangs, the
    worst case) holds up one page for a few seconds, then pages pass unchecked; the close
    probes once and tries once (the server is known to be away), never the whole wait again."""
    defaults = ElasticSettings()
    came_out: dict[str, float] = {}

    def heard(path: str, _: Any) -> None:
        came_out[path] = time.monotonic()
        site.scraped.add(path)

    site.actions["/o4"] = after(site, 5, own_es.pause)
    settings = fast_settings(DOWNLOAD_TIMEOUT=300, NEARDUP_ACTION="tag",
                             NEARDUP_BACKEND=own_es.url, **names(tmp_path))
    try:
        result = await crawl_harness.crawl(site.base, settings, on_item=heard)
        ended = time.monotonic()
    finally:
        own_es.resume()
    times = sorted(came_out.values())
    stall = max(later - earlier for earlier, later in itertools.pairwise(times))
    close = ended - times[-1]
    print(f"\n[defaults] stall {stall:.1f} s, close {close:.1f} s, crawl {result.seconds:.1f} s")
    assert_nothing_lost(result, complete=False)
    unchecked = {p for p, s in status_of(result).items() if s == "unchecked"}
    assert unchecked >= OUTAGE
    # One page waits the bounded retry (an attempt may run its request timeout past it).
    assert stall <= defaults.retry_seconds + defaults.request_timeout + 1.5
    assert stall <= 12
    # The close: one probe (at most 2 s) and one attempt, the buffered writes spooled.
    assert close <= 2 + defaults.request_timeout + 2
    assert close <= 10
    assert result.stats["neardup/spool/actions"] > 0


@deferred_f_from_coro_f
async def test_unavailable_at_start_fails_fast(
    site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No server: one clear ERROR line and a clean close within the probe timeout, before a page
    is fetched; no traceback from Scrapy's own components."""
    started = time.monotonic()
    result = await crawl(site.base, NEARDUP_BACKEND=f"http://127.0.0.1:{free_port()}",
                         **names(tmp_path))
    assert time.monotonic() - started < 10
    assert result.stats["finish_reason"] == "neardup_index_unavailable"
    assert not result.kept and "downloader/request_count" not in result.stats
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "not reachable" in errors[0].getMessage()
    assert "NEARDUP_ES_START" in errors[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)


@deferred_f_from_coro_f
async def test_unavailable_at_start_degraded(site: Site, tmp_path: Path) -> None:
    """NEARDUP_ES_START = degraded: every page passes unchecked, every fingerprint spooled."""
    extra = names(tmp_path)
    result = await crawl(site.base, NEARDUP_BACKEND=f"http://127.0.0.1:{free_port()}",
                         NEARDUP_ES_START="degraded", NEARDUP_ES_REPROBE_SECONDS=60, **extra)
    assert_nothing_lost(result, complete=False)
    assert set(status_of(result).values()) == {"unchecked"}
    assert result.stats["neardup/spooled"] == len(PATHS) + 1
    assert result.stats["neardup/spool/pending"] == len(PATHS) + 1


@deferred_f_from_coro_f
async def test_unavailable_fail_mode_closes_cleanly(site: Site, tmp_path: Path) -> None:
    """NEARDUP_ON_ERROR = fail: the spider closes with its own reason; items in flight still
    come out unchecked with their fingerprints spooled."""
    result = await crawl(site.base, NEARDUP_BACKEND=f"http://127.0.0.1:{free_port()}",
                         NEARDUP_ES_START="degraded", NEARDUP_ON_ERROR="fail", **names(tmp_path))
    assert result.stats["finish_reason"] == "neardup_es_unavailable"
    assert result.kept and set(status_of(result).values()) == {"unchecked"}
    assert result.stats["neardup/spooled"] == len(result.kept)


@deferred_f_from_coro_f
async def test_credentials_never_logged_when_unreachable(
    site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The failure path names the server, never the password or API key (URL or environment)."""
    caplog.set_level(logging.DEBUG)
    result = await crawl(site.base, NEARDUP_BACKEND=f"http://neardup:s3cret-pw@127.0.0.1:"
                         f"{free_port()}", NEARDUP_ES_API_KEY="c2VjcmV0LWtleQ==",
                         NEARDUP_ES_START="degraded", **names(tmp_path))
    assert result.stats["neardup/spooled"] == len(PATHS) + 1
    assert "s3cret-pw" not in caplog.text and "c2VjcmV0LWtleQ==" not in caplog.text
    assert "127.0.0.1" in caplog.text


@deferred_f_from_coro_f
async def test_spool_lies_in_scrapy_data_folder(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default spool path is relative: it lies in Scrapy's data folder (.scrapy/), never in
    the folder the crawl was started from."""
    monkeypatch.chdir(tmp_path)
    extra = names(tmp_path)
    del extra["NEARDUP_SPOOL_PATH"]
    result = await crawl(site.base, NEARDUP_BACKEND=f"http://127.0.0.1:{free_port()}",
                         NEARDUP_ES_START="degraded", NEARDUP_ES_REPROBE_SECONDS=60, **extra)
    assert result.stats["neardup/spooled"] == len(PATHS) + 1
    assert not (tmp_path / "neardup-spool.sqlite").exists()
    assert Spool(tmp_path / ".scrapy" / "neardup-spool.sqlite").pending() == len(PATHS) + 1


@deferred_f_from_coro_f
async def test_an_outage_among_pages_checked_together(
    es_url: str, es_index_names: dict[str, str], site: Site, tmp_path: Path
) -> None:
    """16 requests at a time, so pages wait together and are checked in batches. The crawl
    reaches the shared test server through a proxy whose network is cut as the first 16 pages
    are requested: they pass unchecked and are spooled. The other 8 are answered together
    once all of those came out and the network is back: the first of them finds the server,
    the spool is replayed, and the rest are checked as one batch, each copy caught."""
    proxy = TcpProxy(es_url)
    first_wave = PATHS[:16]  # the scheduler hands the index's links out in order
    second_wave = PATHS[16:]
    back = threading.Event()

    def network_back() -> None:
        if not back.is_set():
            after(site, 1 + len(first_wave), proxy.restore)()
            time.sleep(0.6)  # past NEARDUP_ES_REPROBE_SECONDS: the next page probes
            back.set()

    def wait_for_network() -> None:
        back.wait(60)

    site.actions[first_wave[0]] = proxy.cut
    for path in second_wave:
        site.actions[path] = network_back if path == second_wave[0] else wait_for_network
    spool = tmp_path / "spool.sqlite"
    try:
        result = await crawl(
            site.base, site, NEARDUP_BACKEND=proxy.url, NEARDUP_SPOOL_PATH=str(spool),
            NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"],
            CONCURRENT_REQUESTS=16, CONCURRENT_REQUESTS_PER_DOMAIN=16,
        )
    finally:
        back.set()
        proxy.close()
    report("outage in batches", result, site)
    assert_nothing_lost(result)
    unchecked = {p for p, s in status_of(result).items() if s == "unchecked"}
    assert set(first_wave) <= unchecked <= {*first_wave, "/index.html"}
    for copy in second_wave:  # checked after the replay: their originals were spooled
        assert_copy_caught(result, copy, COPIES[copy])
    stats = result.stats
    assert stats["neardup/spooled"] == stats["neardup/replayed"] == len(unchecked)
    assert stats["neardup/es/outages"] == 1
    assert stats["neardup/batch/pages"] > stats["neardup/batch/lookups"] >= 1
    assert es_count(es_url, es_index_names["fingerprint_index"]) == len(PATHS) + 1
    assert Spool(str(spool)).pending() == 0
