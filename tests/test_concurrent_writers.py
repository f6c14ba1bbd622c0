"""Several processes writing one Elasticsearch index: twins checked at the same instant, by
different processes, still end in one cluster (the write log puts the writers in one order)."""

from __future__ import annotations

import uuid

import pytest

from neardup_pipeline.config import NearDupConfig
from tests.concurrent_writers import run_writers, twins_of
from tests.corpora import postgresql_pages


@pytest.fixture(scope="module")
def twins() -> list[tuple[tuple[str, bytes], tuple[str, bytes]]]:
    pages = [(p.doc_id, p.html, p.group) for p in postgresql_pages()]
    return twins_of(pages, NearDupConfig())[:12]


@pytest.mark.parametrize(("processes", "batch"), [(2, 1), (4, 3)])
def test_twins_checked_at_once_by_different_processes_are_caught(
    es_url: str, twins: list[tuple[tuple[str, bytes], tuple[str, bytes]]], processes: int,
    batch: int,
) -> None:
    assert len(twins) == 12
    outcome = run_writers(es_url, twins, processes, batch,
                          index=f"neardup-concurrent-{uuid.uuid4().hex[:8]}")
    assert outcome.missed == 0, outcome
