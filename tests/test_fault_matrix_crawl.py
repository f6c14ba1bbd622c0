"""The crawl's fault matrix (docs/reliability.md, "Fault matrix: the crawl"): real faults under a
real crawl, on Elasticsearch and on SQLite.

Each cell holds the same contract: no item lost (every page comes out once, checked or passed
`unchecked` with its fingerprint spooled); the finish reason says when neardup's part is not
done (`neardup_incomplete`); one ERROR line, without a traceback, says what happened and how to
go on; and the spool's replay (later in the same crawl, or at the start of the next one) leaves
the index with every page and the verdicts of an undisturbed crawl.

Elasticsearch: one server of this module's own (blocks are set on its indices, it is killed and
started again), reached directly or through a loopback HTTP proxy that answers 429 for a while.
SQLite: a small tmpfs filled up, a second process holding `BEGIN EXCLUSIVE`, a truncated file.
The site and its 12 near-copy pairs are tests/test_reliability.py's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from itemadapter import ItemAdapter
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.scrapy.spool import Spool
from neardup_pipeline.scrapy.stats import INCOMPLETE_REASON
from tests import test_reliability as reliability
from tests.crawl_harness import CrawlResult
from tests.es_server import Server, free_port, own_server
from tests.faults import Http429Proxy, fill, flood_stage, small_tmpfs, write_block
from tests.test_reliability import (
    COPIES,
    INNER,
    PATHS,
    Site,
    after,
    assert_copy_caught,
    crawl,
    es_count,
    names,
    report,
    status_of,
)

site = reliability.site  # the fixture: the 25-page site of those tests

# Every page that is a near-duplicate of an earlier one in an undisturbed crawl.
DUPLICATES = set(COPIES) | set(INNER)
ALL = len(PATHS) + 1  # and the start page


@pytest.fixture(scope="module")
def fault_es() -> Iterator[Server]:
    """An Elasticsearch process of this module's own: blocked, killed and started again."""
    with own_server() as server:
        yield server


def errors_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The ERROR lines of the crawl (the check process's included: they are re-emitted)."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def assert_one_clear_error(caplog: pytest.LogCaptureFixture, *words: str) -> str:
    """One ERROR line holding `words`, and no traceback anywhere in the log."""
    errors = errors_of(caplog)
    assert len(errors) == 1, errors
    for word in words:
        assert word in errors[0], (word, errors[0])
    assert not any(r.exc_info or r.exc_text for r in caplog.records), [
        r.getMessage() for r in caplog.records if r.exc_info or r.exc_text]
    return errors[0]


def assert_no_item_lost(result: CrawlResult) -> set[str]:
    """Every page came out once, kept (tag mode), checked or unchecked; the unchecked ones."""
    assert result.repeated() == []
    assert sorted(result.kept) == sorted([*PATHS, "/index.html"])
    status = status_of(result)
    assert set(status.values()) <= {"checked", "unchecked"}, status
    return {p for p, s in status.items() if s == "unchecked"}


def tagged_duplicates(result: CrawlResult) -> set[str]:
    return {p for p, i in result.kept.items() if ItemAdapter(i).get("neardup_of")}


def replayed_duplicates(caplog: pytest.LogCaptureFixture) -> set[str]:
    """Pages found to be near-duplicates when the spool was replayed (their items long gone)."""
    found = set()
    for record in caplog.records:
        message = record.getMessage()
        if message.startswith("neardup: replayed "):
            url = message.split()[2]
            found.add(url[url.index("/", len("http://")):])
    return found


def assert_replayed_once(unchecked: set[str], first: CrawlResult, again: CrawlResult) -> None:
    """Every unchecked page replayed once: late in the first crawl (into the write buffer,
    spooled with it) or at the start of the second; on SQLite the pages whose commit failed
    too (`spool/unconfirmed`)."""
    replayed = first.stats.get("neardup/replayed", 0) + again.stats.get("neardup/replayed", 0)
    expected = len(unchecked) + first.stats.get("neardup/spool/unconfirmed", 0)
    assert replayed == expected, (replayed, expected)


def assert_verdicts_as_undisturbed(first: CrawlResult, replayed: set[str]) -> None:
    """The copies found live plus those found at replay are an undisturbed crawl's."""
    live = tagged_duplicates(first)
    assert live | replayed == DUPLICATES, (sorted(live), sorted(replayed))
    for copy in live & set(COPIES):
        assert_copy_caught(first, copy, COPIES[copy])


def es_settings(server_url: str, tmp_path: Path) -> dict[str, Any]:
    return {"NEARDUP_BACKEND": server_url, "NEARDUP_ES_BULK_SIZE": 4, **names(tmp_path)}


# --- Elasticsearch: an index block -------------------------------------------------------------


async def assert_next_crawl_completes(
    site: Site, settings: dict[str, Any], result: CrawlResult, unchecked: set[str],
    late: set[str], caplog: pytest.LogCaptureFixture, stored: Callable[[], int],
) -> None:
    """The fault put right, the next crawl with the same spool replays what waits, once, before
    its first page: no ERROR, the spool empty, every page stored (`stored`), and the verdicts of
    an undisturbed crawl (found live, `late` at the first crawl's replay, or at this one's)."""
    caplog.clear()
    again = await crawl(site.base, **settings)
    assert again.stats["finish_reason"] == "finished"
    assert_replayed_once(unchecked, result, again)
    assert not errors_of(caplog)
    assert Spool(settings["NEARDUP_SPOOL_PATH"]).pending() == 0
    assert stored() == ALL
    assert_verdicts_as_undisturbed(result, late | replayed_duplicates(caplog))


@deferred_f_from_coro_f
async def test_es_write_block(
    fault_es: Server, site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`index.blocks.write: true` on the fingerprint index at /o4 (403 per document, until the
    end): the held writes stay buffered, pages pass unchecked and spooled, the close spools
    the writes; finish reason neardup_incomplete. Lifted, the next crawl replays all of it."""
    extra = es_settings(fault_es.url, tmp_path)
    index = extra["NEARDUP_FINGERPRINT_INDEX"]
    site.actions["/o4"] = after(site, 5, lambda: write_block(fault_es.url, index, True))
    caplog.set_level(logging.INFO)
    result = await crawl(site.base, site, **extra)
    report("es write block", result, site)
    unchecked = assert_no_item_lost(result)
    assert unchecked and result.stats["finish_reason"] == INCOMPLETE_REASON
    message = assert_one_clear_error(
        caplog, "refuses writes", index, "index write (api)",
        f'PUT {index}/_settings {{"index.blocks.write": null}}', "NEARDUP_SPOOL_PATH")
    assert result.stats["neardup/spooled"] == len(unchecked)
    assert result.stats["neardup/spool/actions"] > 0
    assert Spool(extra["NEARDUP_SPOOL_PATH"]).pending() == result.stats["neardup/spool/pending"]
    first_errors = len(errors_of(caplog))
    late = replayed_duplicates(caplog)

    write_block(fault_es.url, index, False)  # the fix the ERROR names
    await assert_next_crawl_completes(
        site, extra, result, unchecked, late, caplog, lambda: es_count(fault_es.url, index))
    print(f"\n[es write block] {len(unchecked)} unchecked, {first_errors} ERROR: {message}")


@deferred_f_from_coro_f
async def test_es_flood_stage_block(
    fault_es: Server, site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The flood-stage block as Elasticsearch sets it (`index.blocks.read_only_allow_delete`
    on every index of the node: 429 to writes) from /o4 to the end: pages pass unchecked and
    spooled; the ERROR names the block and both fixes. Freed, the next crawl replays."""
    extra = es_settings(fault_es.url, tmp_path)
    index = extra["NEARDUP_FINGERPRINT_INDEX"]
    site.actions["/o4"] = after(site, 5, lambda: flood_stage(fault_es.url, f"{index}*", True))
    caplog.set_level(logging.INFO)
    # a re-probe every 2 s: each one meets the block again
    result = await crawl(site.base, site, NEARDUP_ES_REPROBE_SECONDS=2.0, **extra)
    report("es flood stage", result, site)
    unchecked = assert_no_item_lost(result)
    assert unchecked and result.stats["finish_reason"] == INCOMPLETE_REASON
    message = assert_one_clear_error(caplog, "flood-stage", "free disk space",
                                     '"index.blocks.read_only_allow_delete": null')

    late = replayed_duplicates(caplog)
    flood_stage(fault_es.url, f"{index}*", False)
    await assert_next_crawl_completes(
        site, extra, result, unchecked, late, caplog, lambda: es_count(fault_es.url, index))
    print(f"\n[es flood stage] {len(unchecked)} unchecked: {message}")


# --- Elasticsearch: 429 ------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_es_answers_429_for_a_while(
    fault_es: Server, site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """429 to every request from /o4 until /d0 is asked for: retried with backoff for
    NEARDUP_ES_RETRY_SECONDS, then degraded; when 429s stop, the spool is replayed in the
    same crawl, which finishes complete."""
    proxy = Http429Proxy(fault_es.url)
    site.actions["/o4"] = after(site, 5, lambda: setattr(proxy, "rejecting", True))
    site.actions["/d0"] = after(site, 13, lambda: setattr(proxy, "rejecting", False))  # o4..o11
    extra = es_settings(proxy.url, tmp_path)
    caplog.set_level(logging.INFO)
    try:
        result = await crawl(site.base, site, **extra)
    finally:
        proxy.close()
    report("es 429", result, site)
    unchecked = assert_no_item_lost(result)
    assert unchecked and result.stats["finish_reason"] == "finished"
    message = assert_one_clear_error(caplog, "status 429", "NEARDUP_SPOOL_PATH")
    stats = result.stats
    assert stats["neardup/es/retries"] >= 1 and proxy.rejected > 0
    assert stats["neardup/spooled"] == stats["neardup/replayed"] == len(unchecked)
    assert "neardup/spool/pending" not in stats
    assert es_count(fault_es.url, extra["NEARDUP_FINGERPRINT_INDEX"]) == ALL
    assert_verdicts_as_undisturbed(result, replayed_duplicates(caplog))
    print(f"\n[es 429] {len(unchecked)} unchecked, {proxy.rejected} answered 429: {message}")


# --- Elasticsearch: killed ---------------------------------------------------------------------


def kill(server: Server) -> None:
    """SIGKILL to the server's whole process group: no shutdown, no flush."""
    process, server.process = server.process, None
    assert process is not None
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


@deferred_f_from_coro_f
async def test_es_killed_and_restarted(
    fault_es: Server, site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGKILL at /o4, started again (same port and data) from /o9 on, /d0 waits for it: the
    pages meanwhile pass unchecked and are replayed in the same crawl; nothing the server had
    acknowledged is lost (its translog), the buffered writes are sent after the restart."""
    up = threading.Event()

    def start_again() -> None:
        fault_es.launch(180)
        up.set()

    site.actions["/o4"] = after(site, 5, lambda: kill(fault_es))
    site.actions["/o9"] = threading.Thread(target=start_again, daemon=True).start
    site.actions["/d0"] = lambda: (up.wait(240), None)[1]
    extra = es_settings(fault_es.url, tmp_path)
    caplog.set_level(logging.INFO)
    result = await crawl(site.base, site, **extra)
    report("es SIGKILL", result, site)
    unchecked = assert_no_item_lost(result)
    assert unchecked and result.stats["finish_reason"] == "finished"
    message = assert_one_clear_error(caplog, "Elasticsearch unavailable", "NEARDUP_SPOOL_PATH")
    stats = result.stats
    assert stats["neardup/spooled"] == stats["neardup/replayed"] == len(unchecked)
    assert es_count(fault_es.url, extra["NEARDUP_FINGERPRINT_INDEX"]) == ALL
    assert_verdicts_as_undisturbed(result, replayed_duplicates(caplog))
    print(f"\n[es SIGKILL] {len(unchecked)} unchecked: {message}")


# --- SQLite ------------------------------------------------------------------------------------


def sqlite_settings(index: Path, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"NEARDUP_BACKEND": f"sqlite:{index}",
            "NEARDUP_SPOOL_PATH": str(tmp_path / "spool.sqlite"), **extra}


def sqlite_count(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])
    finally:
        db.close()


@deferred_f_from_coro_f
async def test_sqlite_disk_full(site: Site, tmp_path: Path,
                                caplog: pytest.LogCaptureFixture) -> None:
    """The index's disk (a 2 MB tmpfs) fills at /o4 and stays full: the next write fails, pages
    pass unchecked, their fingerprints spooled on another disk; neardup_incomplete. With room
    again, the next crawl replays the spool: every page in the index."""
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root")
    with small_tmpfs(tmp_path / "disk", "2m") as disk:
        index = disk / "index.sqlite"
        settings = sqlite_settings(index, tmp_path, NEARDUP_ES_REPROBE_SECONDS=1.0)
        filled: list[Path] = []
        site.actions["/o4"] = after(site, 5, lambda: filled.append(fill(disk)))
        caplog.set_level(logging.INFO)
        result = await crawl(site.base, site, **settings)
        report("sqlite disk full", result, site)
        unchecked = assert_no_item_lost(result)
        assert unchecked and result.stats["finish_reason"] == INCOMPLETE_REASON
        message = assert_one_clear_error(caplog, "is full", "free space", "NEARDUP_SPOOL_PATH")
        assert Spool(settings["NEARDUP_SPOOL_PATH"]).pending() == len(unchecked) + \
            result.stats.get("neardup/spool/unconfirmed", 0)
        late = replayed_duplicates(caplog)

        filled[0].unlink()  # room again
        await assert_next_crawl_completes(
            site, settings, result, unchecked, late, caplog, lambda: sqlite_count(index))
    print(f"\n[sqlite disk full] {len(unchecked)} unchecked: {message}")


LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
sys.stdin.readline()  # the test says when to ask for the lock...
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()  # ...and when to let it go
db.execute("ROLLBACK")
"""


class Locker:
    """A second process that takes `BEGIN EXCLUSIVE` on the index file when told, and holds
    it until released (a release before it got the lock lets it go at once)."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.locked = False

    def _say(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.write(b"\n")
            self.process.stdin.flush()

    def lock(self) -> None:
        """Ask for the lock and wait until it is held."""
        self._say()
        assert self.process.stdout is not None
        self.locked = self.process.stdout.readline().strip() == b"locked"

    def release(self) -> None:
        if self.process.poll() is None:
            self._say()
            self._say()
            self.process.wait(60)


@deferred_f_from_coro_f
async def test_sqlite_locked_by_another_process(
    site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another process asks for the index's write lock at /o1 (it gets it at the crawl's next
    commit) and releases it at /d9: the write that meets it waits the busy timeout, then pages
    pass unchecked and spooled (with those recorded since the last commit); once the lock is
    gone the spool is replayed in the same crawl, which finishes complete."""
    index = tmp_path / "index.sqlite"
    settings = sqlite_settings(index, tmp_path, NEARDUP_ES_REPROBE_SECONDS=3.0)
    lockers: list[Locker] = []
    lockers.append(Locker(index))  # waits for the lock in its own process, from /o1 on

    # in a thread: it gets the lock at the crawl's next commit (every 2 s), with pages flowing
    site.actions["/o1"] = after(site, 2, threading.Thread(target=lockers[0].lock,
                                                         daemon=True).start)
    site.actions["/d9"] = after(site, 22, lambda: lockers[0].release())
    monkeypatch.setattr(reliability, "PAGE_DELAY", 0.25)  # pages flow while it waits
    caplog.set_level(logging.INFO)
    try:
        result = await crawl(site.base, site, **settings)
    finally:
        for locker in lockers:
            locker.release()
    report("sqlite locked", result, site)
    unchecked = assert_no_item_lost(result)
    assert unchecked and result.stats["finish_reason"] == "finished"
    message = assert_one_clear_error(caplog, "locked by another process", "NEARDUP_SPOOL_PATH")
    stats = result.stats
    assert stats["neardup/spooled"] == len(unchecked)
    assert stats["neardup/replayed"] == len(unchecked) + stats.get("neardup/spool/unconfirmed", 0)
    assert sqlite_count(index) == ALL
    assert_verdicts_as_undisturbed(result, replayed_duplicates(caplog))
    print(f"\n[sqlite locked] {len(unchecked)} unchecked: {message}")


def test_sqlite_truncated_at_start(site: Site, tmp_path: Path) -> None:
    """`neardup crawl` on a truncated index file: exit status 1 before a page is fetched, one
    ERROR naming the file and the fix; the fix applied (the file deleted), it completes."""
    index = tmp_path / "index.sqlite"
    db = sqlite3.connect(index)
    db.execute("CREATE TABLE filler (x TEXT)")
    db.executemany("INSERT INTO filler VALUES (?)", [("x" * 1000,)] * 200)
    db.commit()
    db.close()
    with index.open("r+b") as f:
        f.truncate(index.stat().st_size // 3)
    command = [sys.executable, "-m", "neardup_pipeline", "crawl", f"{site.base}/index.html",
               "--backend", f"sqlite:{index}", "--action", "tag"]
    env = {**os.environ, "NEARDUP_SPOOL_PATH": str(tmp_path / "spool.sqlite")}
    failed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120,
                            cwd=tmp_path)
    errors = [line for line in failed.stderr.splitlines() if "ERROR" in line]
    print(f"\n[sqlite truncated] exit {failed.returncode}: {errors}")
    assert failed.returncode == 1
    assert len(errors) == 1 and str(index) in errors[0], failed.stderr
    assert "(neardup_index_damaged)" in errors[0]
    assert "Traceback" not in failed.stderr
    assert "0 pages: 0 kept" in failed.stdout  # closed before a page was fetched

    index.unlink()  # the fix the message names
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sqlite_count(index) == ALL


def test_neardup_crawl_exits_1_while_the_spool_waits(site: Site, tmp_path: Path) -> None:
    """`neardup crawl` whose pages all passed unchecked (Elasticsearch away, started degraded):
    finish reason neardup_incomplete, exit status 1 and a line on stderr saying what waits and
    what to do."""
    command = [sys.executable, "-m", "neardup_pipeline", "crawl", f"{site.base}/index.html",
               "--backend", f"http://127.0.0.1:{free_port()}", "--action", "tag"]
    env = {**os.environ, "NEARDUP_SPOOL_PATH": str(tmp_path / "spool.sqlite"),
           "NEARDUP_ES_START": "degraded", "NEARDUP_ES_REPROBE_SECONDS": "60"}
    ran = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120,
                         cwd=tmp_path)
    print(f"\n[neardup crawl, spool left] exit {ran.returncode}: {ran.stderr.splitlines()[-1]}")
    assert ran.returncode == 1
    assert f"finish_reason = {INCOMPLETE_REASON}" in ran.stdout
    assert f"not complete: {ALL} spooled" in ran.stderr
    assert Spool(tmp_path / "spool.sqlite").pending() == ALL
