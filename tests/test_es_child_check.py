"""An Elasticsearch crawl checks its pages in the check process: the crawler's own process opens
no client; degraded mode spools and replays there, its log records and stats reach the crawl;
a check process killed mid-crawl is restarted without losing a page or a copy."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from itemadapter import ItemAdapter
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.scrapy.spool import Spool
from tests.es_server import free_port
from tests.test_reliability import (
    COPIES,
    INNER,
    ORIGINALS,
    PATHS,
    Site,
    after,
    assert_nothing_lost,
    crawl,
    es_count,
    names,
    status_of,
)

pytestmark = pytest.mark.elasticsearch


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


@pytest.fixture
def clients_here(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every Elasticsearch client made in this (the crawler's) process from now on."""
    made: list[Any] = []
    real = Elasticsearch.__init__

    def init(self: Elasticsearch, *args: Any, **kwargs: Any) -> None:
        made.append(args or kwargs.get("hosts"))
        real(self, *args, **kwargs)

    monkeypatch.setattr(Elasticsearch, "__init__", init)
    return made


def fresh_names(tmp_path: Path, es_url: str) -> Iterator[dict[str, Any]]:
    """The reliability tests' names, the fingerprint index unique on the shared server and
    deleted after."""
    extra = {**names(tmp_path),
             "NEARDUP_FINGERPRINT_INDEX": f"neardup-child-{uuid.uuid4().hex[:10]}"}
    yield extra
    with Elasticsearch(es_url, request_timeout=30) as client:
        index = extra["NEARDUP_FINGERPRINT_INDEX"]
        client.options(ignore_status=404).indices.delete(
            index=f"{index},{index}-writelog,{index}-df,{index}-clusters", allow_no_indices=True)


@pytest.fixture
def extra(tmp_path: Path, es_url: str) -> Iterator[dict[str, Any]]:
    yield from fresh_names(tmp_path, es_url)


def messages(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith(logger)]


@deferred_f_from_coro_f
async def test_degraded_crawl_spools_and_next_replays_in_the_check_process(
    site: Site, es_url: str, extra: dict[str, Any], clients_here: list[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    away = await crawl(site.base, NEARDUP_BACKEND=f"http://user:secret@127.0.0.1:{free_port()}",
                       NEARDUP_ES_START="degraded", NEARDUP_ES_REPROBE_SECONDS=60, **extra)
    assert_nothing_lost(away)
    assert set(status_of(away).values()) == {"unchecked"}
    assert away.stats["neardup/spooled"] == away.stats["neardup/spool/pending"] == len(PATHS) + 1
    opened = [m for m in messages(caplog, "neardup_pipeline.scrapy.check.child")
              if "checked in a child process" in m]
    assert len(opened) == 1 and "unavailable: started degraded" in opened[0]
    # Made in the check process, logged by the crawler's logging, credentials redacted.
    unavailable = messages(caplog, "neardup_pipeline.scrapy.check.degraded")
    assert any("Elasticsearch unavailable" in m for m in unavailable)
    assert not [r for r in caplog.records if "secret" in r.getMessage()]
    assert clients_here == []

    caplog.clear()
    again = await crawl(site.base, NEARDUP_BACKEND=es_url, **extra)
    assert_nothing_lost(again)
    assert again.stats["neardup/replayed"] == len(PATHS) + 1
    assert Spool(extra["NEARDUP_SPOOL_PATH"]).pending() == 0
    assert set(status_of(again).values()) == {"checked"}  # every page a copy of its replay
    assert again.stats["neardup/duplicates"] == len(COPIES) + len(INNER)  # as on one crawl
    opened = [m for m in messages(caplog, "neardup_pipeline.scrapy.check.child")
              if "checked in a child process" in m]
    assert len(opened) == 1 and "fingerprints stored" in opened[0]
    assert clients_here == []
    assert es_count(es_url, extra["NEARDUP_FINGERPRINT_INDEX"]) == len(PATHS) + 1


def kill_the_check_process() -> None:
    children = [p for p in multiprocessing.active_children() if p.name == "neardup-child"]
    assert len(children) == 1, children
    assert children[0].pid is not None
    os.kill(children[0].pid, signal.SIGKILL)


@deferred_f_from_coro_f
async def test_killed_check_process_is_restarted_and_its_pages_still_count(
    site: Site, es_url: str, extra: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    """Killed once the originals are checked, their fingerprints still in its bulk buffer:
    the page in flight is checked again by the restarted process, which reads what the dead
    one recorded from the write log, so the copies of the pages it checked are caught."""
    site.actions["/d0"] = after(site, 1 + len(ORIGINALS), kill_the_check_process)
    result = await crawl(site.base, site, NEARDUP_BACKEND=es_url, **extra)
    assert_nothing_lost(result)
    assert set(status_of(result).values()) == {"checked"}
    assert result.stats["neardup/child/restarts"] == 1
    assert result.stats["neardup/duplicates"] == len(COPIES) + len(INNER)
    of = {p: str(ItemAdapter(i)["neardup_of"])[len(result.base):] for p, i in result.kept.items()}
    for copy, original in COPIES.items():  # whichever came first, the other points at it
        group = {copy, original} | {p for pair in INNER.items() if original in pair for p in pair}
        group |= {c for c, o in COPIES.items() if o in group}
        assert of[copy] in group - {copy} or of[original] in group - {original}, (copy, of)
    assert any("the check process died" in m
               for m in messages(caplog, "neardup_pipeline.scrapy.check.child"))
    # What the dead process had recorded (the start page and the 12 originals) was still in
    # its bulk buffer: in the write log only, not in the fingerprint index (docs/reliability.md,
    # "The check process"); the copies, checked by the new process, were written at close.
    assert es_count(es_url, extra["NEARDUP_FINGERPRINT_INDEX"]) == len(COPIES)
