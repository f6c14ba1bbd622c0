"""Shared fixtures: real backends (memory, SQLite, the Elasticsearch test server), shared data."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neardup_pipeline.config import NearDupConfig

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
BACKENDS = ["memory", "sqlite", "elasticsearch"]
PERSISTENT_BACKENDS = ["sqlite", "elasticsearch"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_es = callspec is not None and "elasticsearch" in callspec.params.values()
        if on_es or "es_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.elasticsearch)


@pytest.fixture(scope="session")
def es_url() -> str:
    """URL of the real test server; a test that needs it fails (never skips) without it."""
    url = os.environ.get("NEARDUP_TEST_ES_URL")
    if not url:
        pytest.fail(
            "NEARDUP_TEST_ES_URL is not set: run the suite with `make test`, which starts a real "
            "Elasticsearch (or deselect with -m 'not elasticsearch' while developing)"
        )
    from elasticsearch import Elasticsearch

    client = Elasticsearch(url, request_timeout=30)
    try:
        client.cluster.health(wait_for_status="yellow", timeout="30s")
    except Exception as exc:
        pytest.fail(f"Elasticsearch test server at {url} is not usable: {exc}")
    finally:
        client.close()
    return url


@pytest.fixture
def es(es_url: str) -> Iterator[Any]:
    """A plain client to look at the server behind the backend's back."""
    from elasticsearch import Elasticsearch

    client = Elasticsearch(es_url, request_timeout=30)
    yield client
    client.close()


@pytest.fixture
def es_index_names(es_url: str) -> Iterator[dict[str, str]]:
    """Unique fingerprint and pages index names for one test, deleted afterwards."""
    suffix = uuid.uuid4().hex[:10]
    names = {
        "fingerprint_index": f"neardup-fingerprints-test-{suffix}",
        "pages_index": f"neardup-pages-test-{suffix}",
    }
    yield names
    from elasticsearch import Elasticsearch

    client = Elasticsearch(es_url, request_timeout=30)
    try:
        # one call per index: a missing one must not spare the other (-df: rarewords' DF index)
        for name in [*names.values(), f"{names['fingerprint_index']}-df"]:
            client.options(ignore_status=404).indices.delete(index=name)
    finally:
        client.close()


def _config_for(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> NearDupConfig:
    if backend == "memory":
        return NearDupConfig(backend="memory")
    if backend == "sqlite":
        return NearDupConfig(backend=f"sqlite:{tmp_path / 'index.sqlite'}")
    url = request.getfixturevalue("es_url")
    names = request.getfixturevalue("es_index_names")
    return NearDupConfig(backend=url, **names)


@pytest.fixture(params=BACKENDS)
def backend_config(request: pytest.FixtureRequest, tmp_path: Path) -> NearDupConfig:
    """A configuration for each real backend in turn (the contract suite runs on all three)."""
    return _config_for(request, request.param, tmp_path)


@pytest.fixture(params=PERSISTENT_BACKENDS)
def persistent_config(request: pytest.FixtureRequest, tmp_path: Path) -> NearDupConfig:
    """The backends that keep fingerprints across processes (SQLite, Elasticsearch)."""
    return _config_for(request, request.param, tmp_path)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (read-only real corpora); a test that needs it fails when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data folder not found at {SHARED_DATA}")
    return SHARED_DATA
