"""Shared fixtures: real backends (memory, SQLite, the Elasticsearch test server); the markers
that set integration tests apart from unit tests."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.index import FingerprintIndex, open_index
from tests import es8
from tests.crawl_harness import serve_demo_site
from tests.es8 import es8_index_names, es8_url  # noqa: F401  (the 8.19 server, a session fixture)
from tests.es_indices import delete_indices, unique_index_names
from tests.secured_es import secured_es  # noqa: F401  (the secured server, a session fixture)

BACKENDS = ["memory", "sqlite", "elasticsearch"]
PERSISTENT_BACKENDS = ["sqlite", "elasticsearch"]

# Modules all of whose tests start a crawl, a subprocess, a child process or a server. Elsewhere
# a test is integration when it awaits (a crawl on the reactor), serves the demo site or needs
# Elasticsearch; a few others say so with @pytest.mark.integration.
INTEGRATION_MODULES = frozenset({
    "test_bad_input_crawl",
    "test_childproc",
    "test_cli",
    "test_crawl",
    "test_crawl_anchors",
    "test_crawl_methods",
    "test_crawl_rarewords",
    "test_fallbacks",
    "test_hostile_input",
    "test_offload",
    "test_reliability",
    "test_reliability_parallel",
    "test_report_browser",
})


def _uses_elasticsearch(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    on_es = callspec is not None and "elasticsearch" in callspec.params.values()
    fixtures = getattr(item, "fixturenames", ())
    return on_es or "es_url" in fixtures or "secured_es" in fixtures or "es8_url" in fixtures


def _is_integration(item: pytest.Item) -> bool:
    function = getattr(item, "function", None)
    return (
        item.path.stem in INTEGRATION_MODULES
        or item.get_closest_marker("elasticsearch") is not None
        or "site" in getattr(item, "fixturenames", ())
        or (function is not None and inspect.iscoroutinefunction(inspect.unwrap(function)))
    )


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`-m "not integration"` leaves the fast unit tests; `-m "not elasticsearch"` runs without
    the Elasticsearch test server."""
    for item in items:
        if _uses_elasticsearch(item):
            item.add_marker(pytest.mark.elasticsearch)
        if _is_integration(item):
            item.add_marker(pytest.mark.integration)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the 8.19 server in the background when a selected test needs it (tests/es8.py)."""
    es8.start_early(session.items)


def pytest_sessionfinish() -> None:
    es8.stop()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    """A temporary copy of the demo site, served; yields its base URL (no trailing slash)."""
    with serve_demo_site(tmp_path) as base:
        yield base


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
    names = unique_index_names("test")
    yield names
    delete_indices(es_url, names)


def _config_for(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> NearDupConfig:
    if backend == "memory":
        return NearDupConfig(backend="memory")
    if backend == "sqlite":
        return NearDupConfig(backend=f"sqlite:{tmp_path / 'index.sqlite'}")
    url = request.getfixturevalue("es_url")
    names = request.getfixturevalue("es_index_names")
    return NearDupConfig(backend=url).replace(**names)


@pytest.fixture(params=BACKENDS)
def backend_config(request: pytest.FixtureRequest, tmp_path: Path) -> NearDupConfig:
    """A configuration for each real backend in turn (the contract suite runs on all three)."""
    return _config_for(request, request.param, tmp_path)


@pytest.fixture(params=PERSISTENT_BACKENDS)
def persistent_config(request: pytest.FixtureRequest, tmp_path: Path) -> NearDupConfig:
    """The backends that keep fingerprints across processes (SQLite, Elasticsearch)."""
    return _config_for(request, request.param, tmp_path)


@pytest.fixture
def index(backend_config: NearDupConfig) -> Iterator[FingerprintIndex]:
    """The backend of `backend_config`, opened; closed after the test."""
    opened = open_index(backend_config.backend, backend_config)
    yield opened
    opened.close()


@pytest.fixture(params=PERSISTENT_BACKENDS)
def crawl_backend(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """`crawl_settings` arguments for each persistent backend in turn: a SQLite file, or the
    Elasticsearch test server with a fingerprint index of the test's own."""
    if request.param == "sqlite":
        return {"backend": f"sqlite:{tmp_path / 'fp.sqlite'}"}
    names = request.getfixturevalue("es_index_names")
    return {
        "backend": request.getfixturevalue("es_url"),
        "NEARDUP_FINGERPRINT_INDEX": names["fingerprint_index"],
    }
