"""`neardup crawl` without a URL (`make demo`): every run gives the same result, on the
embedded default and on Elasticsearch, and a fresh start never deletes a crawl's own index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from neardup_pipeline.index.elastic.templates import neardup_indices

SUMMARY = "11 pages: 7 kept, 4 dropped"


def demo(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    return subprocess.run(
        [sys.executable, "-m", "neardup_pipeline", "crawl", *args], cwd=cwd,
        env={**clean, **env}, capture_output=True, text=True, timeout=180, check=False,
    )


def delete_indices(es: Any, fingerprint_index: str) -> None:
    for spec in neardup_indices(fingerprint_index, None):
        es.options(ignore_status=404).indices.delete(index=spec.index)


def test_the_demo_gives_the_same_result_every_run(tmp_path: Path) -> None:
    for _ in range(2):
        run = demo(tmp_path)
        assert run.returncode == 0, run.stderr
        assert SUMMARY in run.stdout
    assert (tmp_path / "neardup-demo.sqlite").exists()


def test_the_demo_on_elasticsearch_starts_fresh_every_run(tmp_path: Path, es_url: str,
                                                          es: Any) -> None:
    first = demo(tmp_path, "--backend", es_url)
    assert first.returncode == 0, first.stderr
    assert SUMMARY in first.stdout
    again = demo(tmp_path, "--backend", es_url)
    assert again.returncode == 0, again.stderr
    assert SUMMARY in again.stdout  # not "0 kept, 11 dropped": the first run was deleted
    assert "fresh start: deleted neardup-demo" in again.stderr
    delete_indices(es, "neardup-demo")


def test_a_fresh_start_deletes_a_named_index_only_when_asked(tmp_path: Path, es_url: str,
                                                             es: Any) -> None:
    """The demo's default fresh start is for its own index: an index the settings name is
    deleted by an explicit --fresh alone."""
    name = "crawl-of-record"
    first = demo(tmp_path, "--backend", es_url, NEARDUP_FINGERPRINT_INDEX=name)
    assert first.returncode == 0, first.stderr
    kept = demo(tmp_path, "--backend", es_url, NEARDUP_FINGERPRINT_INDEX=name)
    assert kept.returncode == 0, kept.stderr
    assert "deleted" not in kept.stderr
    assert "11 pages: 0 kept" in kept.stdout  # the crawl's index remembered every page
    fresh = demo(tmp_path, "--backend", es_url, "--fresh", NEARDUP_FINGERPRINT_INDEX=name)
    assert fresh.returncode == 0, fresh.stderr
    assert f"fresh start: deleted {name}" in fresh.stderr
    assert SUMMARY in fresh.stdout
    delete_indices(es, name)
