"""An Elasticsearch 8.19 server for the tests: the older supported major, beside the 9.x one.

The session fixture `es8_url` yields the URL of one server (tests/es_server.py's `Server`,
security off, like the main test server); a test that uses it is marked `elasticsearch`
(tests/conftest.py). The server starts in a background thread as soon as the collected tests
show that one needs it (`start_early`, from conftest's `pytest_collection_finish`), so its start
overlaps the tests that run before (under pytest-xdist, when a worker first needs it), and stops
when the session ends (`stop`, from
`pytest_sessionfinish`). It needs mvn (the 8.19 integ-test zip, cached beside the 9.x one) and a
JDK 17 to 23. When the main test server is already an 8.x one (NEARDUP_ES_VERSION=8...), that
server is used instead of a second one.

Environment: NEARDUP_ES8_VERSION (default 8.19.0); NEARDUP_ES_START_TIMEOUT as for the main
server.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence

import pytest

from tests.es_indices import delete_indices, unique_index_names
from tests.es_server import DEFAULT_START_TIMEOUT, DEFAULT_VERSION, Server

ES8_VERSION = os.environ.get("NEARDUP_ES8_VERSION", "8.19.0")
FIXTURE = "es8_url"


class Background:
    """The one 8.19 server of the session, started in a thread."""

    def __init__(self) -> None:
        self.server: Server | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.lock = threading.Lock()

    def start(self) -> None:
        with self.lock:
            if self.thread is not None:
                return
            self.server = Server(ES8_VERSION)
            self.thread = threading.Thread(target=self._run, name="es8-start", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        assert self.server is not None
        try:
            self.server.start(float(os.environ.get("NEARDUP_ES_START_TIMEOUT",
                                                   DEFAULT_START_TIMEOUT)))
        except BaseException as exc:  # re-raised in the test that waits for it
            self.error = exc

    def url(self) -> str:
        """Wait for the start; the server's URL, or the reason it did not start."""
        self.start()
        assert self.thread is not None and self.server is not None
        self.thread.join()
        if self.error is not None:
            raise RuntimeError(f"Elasticsearch {ES8_VERSION} did not start: {self.error}")
        return self.server.url

    def stop(self) -> None:
        with self.lock:
            if self.thread is not None:
                self.thread.join()
            if self.server is not None:
                self.server.stop()
            self.server = self.thread = None


_BACKGROUND = Background()


def main_server_is_8x() -> bool:
    """Whether the main test server is an 8.x one, which then serves these tests."""
    return bool(os.environ.get("NEARDUP_TEST_ES_URL")) and \
        os.environ.get("NEARDUP_ES_VERSION", DEFAULT_VERSION).startswith("8.")


def start_early(items: Sequence[pytest.Item]) -> None:
    """Start the server now, in the background, when a selected test will need it. Not in a
    pytest-xdist worker: each collects every test, and only the one given the test starts it
    (on first use), not one server per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not main_server_is_8x() and any(FIXTURE in getattr(i, "fixturenames", ()) for i in items):
        _BACKGROUND.start()


def stop() -> None:
    """Stop the server if one was started (at the end of the session)."""
    _BACKGROUND.stop()


@pytest.fixture(scope="session")
def es8_url() -> str:
    """URL of a running Elasticsearch 8.19 server (the main test server when it is one)."""
    if main_server_is_8x():
        return os.environ["NEARDUP_TEST_ES_URL"]
    return _BACKGROUND.url()


@pytest.fixture
def es8_index_names(es8_url: str) -> Iterator[dict[str, str]]:
    """Unique fingerprint and pages index names on the 8.19 server, deleted afterwards."""
    names = unique_index_names("es8")
    yield names
    delete_indices(es8_url, names)
