"""What a user sees when the Elasticsearch URL or its setup is wrong: one message naming the
cause and the fix, and for a crawl a finish reason of its own, never a traceback.

The first tests need no Elasticsearch (a plain HTTP server at the URL, a CA file that is not
there, a password in a URL); the rest use the secured server (tests/secured_es.py), a TLS front
of it whose certificate names only `localhost`, and run the commands in this process
(`neardup_pipeline.cli.main.main`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
import ssl
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from cryptography import x509
from elasticsearch import Elasticsearch
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.cli.main import main
from neardup_pipeline.index.elastic import compat
from neardup_pipeline.index.elastic.connection import Connection, client_from_settings
from neardup_pipeline.index.elastic.settings import ElasticSettings
from neardup_pipeline.index.elastic.templates import neardup_indices, template_for
from tests.crawl_harness import crawl, crawl_settings, serve_demo_site
from tests.es_server import free_port
from tests.secured_es import (
    NASTY_PASSWORD,
    SecuredES,
    User,
    _key_pem,
    _pem,
    make_ca,
    make_node_cert,
)

ENV_NAMES = ("NEARDUP_ES_API_KEY", "NEARDUP_ES_BASIC_AUTH", "NEARDUP_ES_USERNAME",
             "NEARDUP_ES_PASSWORD", "NEARDUP_ES_CA_CERTS", "NEARDUP_ES_VERIFY_CERTS",
             "NEARDUP_ES_REQUEST_TIMEOUT", "NEARDUP_ES_RETRY_SECONDS",
             "NEARDUP_ES_MANAGE_TEMPLATES")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NEARDUP_ES_* of the developer's shell reaches these tests."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


def login(monkeypatch: pytest.MonkeyPatch, user: User) -> None:
    monkeypatch.setenv("NEARDUP_ES_USERNAME", user.name)
    monkeypatch.setenv("NEARDUP_ES_PASSWORD", user.password)


def leaks(text: str, password: str = NASTY_PASSWORD) -> bool:
    return password in text or quote(password, safe="") in text


# --- no Elasticsearch -------------------------------------------------------------------------


def test_dedup_names_a_url_that_is_not_elasticsearch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "one page of text"}\n')
    with serve_demo_site(tmp_path) as base:  # a plain http.server: 404 for /_nodes/_local
        assert main(["dedup", str(docs), "--backend", base]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"neardup: error: {base} answered, but is not Elasticsearch: "), err
    assert "404 (text/html" in err and "File not found" in err and "--backend" in err
    assert "Traceback" not in err and "AttributeError" not in err and err.count("\n") == 1


@deferred_f_from_coro_f
async def test_a_crawl_on_a_url_that_is_not_elasticsearch_closes_before_fetching(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    with serve_demo_site(tmp_path) as base:  # the crawled site is the backend too
        result = await crawl(base, crawl_settings(base))
    assert result.stats["finish_reason"] == "neardup_es_not_elasticsearch"
    assert not result.came_out and "downloader/request_count" not in result.stats
    assert f"{base} answered, but is not Elasticsearch" in caplog.text
    assert "Traceback" not in caplog.text and "AssertionError" not in caplog.text


@pytest.mark.parametrize("ca", ["missing", "folder"])
@deferred_f_from_coro_f
async def test_a_ca_file_error_ends_the_crawl_as_tls(
    ca: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "nowhere.pem" if ca == "missing" else tmp_path
    with serve_demo_site(tmp_path) as base:
        result = await crawl(base, crawl_settings(
            f"https://127.0.0.1:{free_port()}", NEARDUP_ES_CA_CERTS=str(path)))
    assert result.stats["finish_reason"] == "neardup_es_tls"
    assert f"the CA file {path}" in caplog.text and not result.came_out


def test_a_password_in_a_url_on_the_command_line_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    closed = f"127.0.0.1:{free_port()}"
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "one page of text"}\n')
    warning = "neardup: warning: the {} URL holds a password"
    for argv, option in ((["stats", "--es", f"https://neardup:{NASTY_PASSWORD}@{closed}"], "--es"),
                         (["dedup", str(docs), "--backend",
                           f"http://neardup:{NASTY_PASSWORD}@{closed}"], "--backend")):
        assert main(argv) == 2  # nothing listens there
        err = capsys.readouterr().err
        assert err.count(warning.format(option)) == 1, err
        assert "NEARDUP_ES_PASSWORD" in err and not leaks(err)
    login(monkeypatch, User("neardup", NASTY_PASSWORD))  # the way it recommends: no warning
    for url in (f"https://{closed}", f"https://neardup@{closed}"):
        assert main(["stats", "--es", url]) == 2
        assert "warning" not in capsys.readouterr().err


# --- the secured server -----------------------------------------------------------------------


def test_an_unknown_user_is_not_told_apart_from_a_wrong_password(
    secured_es: SecuredES, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    login(monkeypatch, User("nobody", NASTY_PASSWORD))
    assert main(["stats", "--es", secured_es.url, "--es-ca-certs", str(secured_es.ca_path)]) == 2
    err = capsys.readouterr().err
    assert ("refused the credentials of user 'nobody' (401: unknown user or wrong password)"
            in err), err
    assert "password of user" not in err and not leaks(err)


class TlsFront:
    """HTTPS on 127.0.0.1 with a certificate that names only `localhost` (no IP SAN), signed
    by a CA of its own (`ca_path`); every connection is passed on to the secured server."""

    def __init__(self, secured_es: SecuredES, folder: Path) -> None:
        ca_key, ca_cert = make_ca("neardup front CA")
        key, cert = make_node_cert(ca_key, ca_cert, (x509.DNSName("localhost"),), "localhost")
        self.ca_path = folder / "front-ca.crt"
        self.ca_path.write_bytes(_pem(ca_cert))
        (folder / "front.crt").write_bytes(_pem(cert))
        (folder / "front.key").write_bytes(_key_pem(key))
        self._accept = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._accept.load_cert_chain(folder / "front.crt", folder / "front.key")
        self._upstream = ssl.create_default_context(cafile=str(secured_es.ca_path))
        self._target = secured_es.url.rsplit(":", 1)[1]
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self.port = 0
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(
            self._handle, "127.0.0.1", 0, ssl=self._accept))
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                "127.0.0.1", int(self._target), ssl=self._upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer),
                             return_exceptions=True)

    def close(self) -> None:
        """Stop listening, end the connections still open, stop the loop."""

        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            open_tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in open_tasks:
                task.cancel()
            await asyncio.gather(*open_tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


@pytest.fixture
def front(secured_es: SecuredES) -> Iterator[TlsFront]:
    with tempfile.TemporaryDirectory(prefix="neardup-front-") as folder:
        served = TlsFront(secured_es, Path(folder))
        try:
            yield served
        finally:
            served.close()


def test_a_certificate_without_the_ip_address_says_which_names_it_holds(
    secured_es: SecuredES, front: TlsFront, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    login(monkeypatch, secured_es.users.admin)
    ca = str(front.ca_path)
    assert main(["stats", "--es", f"https://127.0.0.1:{front.port}", "--es-ca-certs", ca]) == 2
    err = capsys.readouterr().err
    assert ("its certificate does not name the IP address 127.0.0.1 (it names localhost): "
            f"connect by a name the certificate holds (https://localhost:{front.port}), or "
            "re-issue the certificate with the IP address 127.0.0.1") in err, err
    assert "TLS failed" not in err
    shown = err + caplog.text
    assert "Certificate did not match" not in shown and "subjectAltName" not in shown
    # the fix it names works: the same server by the name its certificate holds
    client, location = client_from_settings(
        f"https://localhost:{front.port}", ElasticSettings(
            ca_certs=ca, basic_auth=tuple(secured_es.users.admin)), env={})
    try:
        Connection(client, location, 5.0).probe()
        assert client.cluster.health()["status"] in ("green", "yellow")
    finally:
        client.close()


def admin_client(secured_es: SecuredES) -> Elasticsearch:
    return compat.client(secured_es.url, ca_certs=str(secured_es.ca_path),
                         basic_auth=tuple(secured_es.users.admin), request_timeout=30)


@deferred_f_from_coro_f
async def test_missing_templates_end_the_crawl_with_their_reason_and_a_command_that_works(
    secured_es: SecuredES, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Own index names (outside neardup's template patterns) and the CA as a Scrapy setting:
    the command the crawl prints, run as written by the administrator (only their credentials
    in the environment), installs what the crawl needs, and the crawl starts."""
    suffix = uuid.uuid4().hex[:10]
    fingerprints, pages = f"neardup-msg-fp-{suffix}", f"neardup-msg-pages-{suffix}"
    crawler = secured_es.users.index_only
    settings = crawl_settings(
        secured_es.url, NEARDUP_ES_BASIC_AUTH=f"{crawler.name},{crawler.password}",
        NEARDUP_ES_CA_CERTS=str(secured_es.ca_path), NEARDUP_ES_MANAGE_TEMPLATES=False,
        NEARDUP_FINGERPRINT_INDEX=fingerprints, NEARDUP_PAGES_INDEX=pages)
    caplog.set_level(logging.INFO)
    try:
        with serve_demo_site(tmp_path) as base:
            refused = await crawl(base, settings)
            assert refused.stats["finish_reason"] == "neardup_es_templates"
            assert not refused.came_out
            found = re.search(r"run `(neardup es install-templates [^`]*)`", caplog.text)
            assert found is not None, caplog.text
            login(monkeypatch, secured_es.users.admin)
            assert main(shlex.split(found.group(1))[1:]) == 0
            for name in ("NEARDUP_ES_USERNAME", "NEARDUP_ES_PASSWORD"):
                monkeypatch.delenv(name)
            started = await crawl(base, settings)
        assert started.stats["finish_reason"] == "finished", caplog.text
        assert started.came_out
    finally:
        admin = admin_client(secured_es)
        try:
            specs = neardup_indices(fingerprints, pages)
            admin.options(ignore_status=404).indices.delete(
                index=",".join(s.index for s in specs))
            for spec in specs:
                name = template_for(spec)[0]
                if name == spec.index:  # the run's own; never a template other tests share
                    admin.options(ignore_status=404).indices.delete_index_template(name=name)
        finally:
            admin.close()
