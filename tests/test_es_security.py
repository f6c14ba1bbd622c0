"""Connecting securely: the client factory, TLS and credentials against a real secured server
(tests/secured_es.py: HTTPS with the test's CA, file-realm users), each failure said with its
cause and fix, the liveness check's 401/403 taken for a refusal (never an outage), and no secret
in any output: CLI output, logs, the crawl's feed and spool, the report. The first tests need no
server (redaction, credentials and options); the rest start the secured one."""

from __future__ import annotations

import json
import logging
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from elasticsearch import Elasticsearch
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.cli.main import build_parser, main
from neardup_pipeline.cli.options import es_settings
from neardup_pipeline.config import NearDupConfig, redact_backend
from neardup_pipeline.errors import (
    CaFileError,
    ConfigError,
    CredentialsRefused,
    PrivilegeMissing,
)
from neardup_pipeline.index.elastic.connection import Connection, client_from_settings
from neardup_pipeline.index.elastic.redaction import redact_url, scrub
from neardup_pipeline.index.elastic.settings import ElasticSettings
from neardup_pipeline.scrapy.spool import Spool
from tests.crawl_harness import DUPLICATES, ORIGINALS, crawl, crawl_settings, serve_demo_site
from tests.documents import OTHER, STEMMED_FLAGS, A, edit
from tests.es_server import free_port
from tests.secured_es import NASTY_PASSWORD, SecuredES, User

ENV_NAMES = ("NEARDUP_ES_API_KEY", "NEARDUP_ES_BASIC_AUTH", "NEARDUP_ES_USERNAME",
             "NEARDUP_ES_PASSWORD", "NEARDUP_ES_CA_CERTS", "NEARDUP_ES_VERIFY_CERTS",
             "NEARDUP_ES_REQUEST_TIMEOUT", "NEARDUP_ES_RETRY_SECONDS")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NEARDUP_ES_* of the developer's shell reaches these tests."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


def leaks(text: str | bytes, password: str = NASTY_PASSWORD) -> bool:
    """Whether `text` holds the password, as written or percent-encoded."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return password in text or quote(password, safe="") in text


# --- no server: redaction, credentials, options ---------------------------------------------


BAD_URLS = [
    f"https://neardup:{NASTY_PASSWORD}@",  # no host at all
    f"https://neardup:{NASTY_PASSWORD}@127.0.0.1:port",  # a port that is no number
    f"htp://neardup:{NASTY_PASSWORD}@127.0.0.1:9200",  # a mistyped scheme
]


@pytest.mark.parametrize("url", [
    f"https://neardup:{NASTY_PASSWORD}@127.0.0.1:9200",
    f"http://neardup:{NASTY_PASSWORD}@es.example:9200/prefix?x=1",
    f"https://neardup:{quote(NASTY_PASSWORD, safe='')}@127.0.0.1:9200",
    f"https://:{NASTY_PASSWORD}@127.0.0.1",
    *BAD_URLS,
])
def test_urls_are_redacted_whether_they_parse_or_not(url: str) -> None:
    shown = redact_url(url)
    assert not leaks(shown) and "***@" in shown and shown == redact_backend(url)
    assert not leaks(scrub(f"failed: {url!r} ({url})"))


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_bad_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        if url.startswith("htp:"):
            NearDupConfig(backend=url)
        else:
            client_from_settings(url, ElasticSettings(), env={})
    assert not leaks(str(refused.value)) and "***@" in str(refused.value)


def test_scrub_removes_known_secrets_in_any_form() -> None:
    text = f"boom {NASTY_PASSWORD} and {quote(NASTY_PASSWORD, safe='')} end"
    assert scrub(text, [NASTY_PASSWORD]) == "boom *** and *** end"


def test_basic_auth_splits_at_the_first_comma_only() -> None:
    config = NearDupConfig.from_settings(Settings({"NEARDUP_ES_BASIC_AUTH": "user,pa,ss"}))
    assert config.elastic.basic_auth == ("user", "pa,ss")
    assert ElasticSettings(basic_auth=["user", "a,b"]).basic_auth == ("user", "a,b")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="user and a password") as refused:
        NearDupConfig.from_settings(Settings({"NEARDUP_ES_BASIC_AUTH": "no-comma-secret"}))
    assert "no-comma-secret" not in str(refused.value)
    assert "secret" not in repr(ElasticSettings(basic_auth=("u", "secret"), api_key="secret"))


def test_credentials_in_the_url_only_are_named_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    client, location = client_from_settings(
        f"https://neardup:{NASTY_PASSWORD}@127.0.0.1:9200", ElasticSettings(), env={})
    client.close()
    assert location == "https://***@127.0.0.1:9200"
    assert "auth: basic as 'neardup' from the URL" in caplog.text
    assert "auth: none" not in caplog.text and not leaks(caplog.text)
    client, _ = client_from_settings(
        "https://127.0.0.1:9200", ElasticSettings(),
        env={"NEARDUP_ES_BASIC_AUTH": f"neardup,{NASTY_PASSWORD}",
             "NEARDUP_ES_API_KEY": "QUJDOkRFRg=="})
    client.close()
    assert "auth: api key from NEARDUP_ES_API_KEY" in caplog.text
    assert "QUJDOkRFRg==" not in caplog.text


def test_a_ca_file_is_checked_before_any_request(tmp_path: Path) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    for path, message in ((tmp_path / "missing.pem", "does not exist"),
                          (not_pem, "holds no PEM certificate"), (tmp_path, "cannot be read")):
        with pytest.raises(CaFileError, match=message):
            client_from_settings("https://127.0.0.1:9200", ElasticSettings(ca_certs=str(path)),
                                 env={})


def test_flags_win_over_variables_which_fill_in_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEARDUP_ES_VERIFY_CERTS", "false")
    monkeypatch.setenv("NEARDUP_ES_CA_CERTS", "/env/ca.pem")
    monkeypatch.setenv("NEARDUP_ES_REQUEST_TIMEOUT", "12")
    parser = build_parser()
    from_env = es_settings(parser.parse_args(["stats", "--es", "https://h:9200"]))
    assert (from_env.verify_certs, from_env.ca_certs, from_env.request_timeout) == (
        False, "/env/ca.pem", 12.0)
    flagged = es_settings(parser.parse_args([
        "stats", "--es", "https://h:9200", "--es-verify-certs", "--es-ca-certs", "/flag/ca.pem",
        "--es-request-timeout", "3"]))
    assert (flagged.verify_certs, flagged.ca_certs, flagged.request_timeout) == (
        True, "/flag/ca.pem", 3.0)
    for command in (["dedup", "-"], ["crawl"], ["search", "q", "--es", "x"], ["report", "-o", "r"]):
        assert parser.parse_args([*command, "--no-es-verify-certs"]).es_verify_certs is False


# --- the secured server ---------------------------------------------------------------------


@pytest.fixture
def names(secured_es: SecuredES) -> Iterator[dict[str, str]]:
    """Index names of one test under neardup-* (the roles' pattern), deleted afterwards."""
    suffix = uuid.uuid4().hex[:10]
    made = {"fingerprints": f"neardup-sec-fp-{suffix}", "pages": f"neardup-sec-pages-{suffix}",
            "dedup": f"neardup-sec-dedup-{suffix}"}
    yield made
    admin = Elasticsearch(secured_es.url, basic_auth=secured_es.users.admin,
                          ca_certs=str(secured_es.ca_path), request_timeout=30)
    try:
        admin.options(ignore_status=404).indices.delete(index=",".join(made.values()))
    finally:
        admin.close()


def as_env(monkeypatch: pytest.MonkeyPatch, user: User | None, **extra: str) -> None:
    if user is not None:
        monkeypatch.setenv("NEARDUP_ES_USERNAME", user.name)
        monkeypatch.setenv("NEARDUP_ES_PASSWORD", user.password)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)


FAILURES = {
    # case: (user in the environment, extra environment, URL kind, extra flags, message parts)
    "no CA given": ("neardup", {}, "url", [], ["not trusted", "--es-ca-certs",
                                                  "NEARDUP_ES_CA_CERTS"]),
    "another CA": ("neardup", {}, "url", ["--es-ca-certs", "OTHER_CA"],
                   ["not signed by the CA file", "NEARDUP_ES_CA_CERTS"]),
    "CA file missing": ("neardup", {}, "url", ["--es-ca-certs", "/nowhere/ca.pem"],
                        ["/nowhere/ca.pem does not exist", "NEARDUP_ES_CA_CERTS"]),
    "http to the HTTPS port": ("neardup", {}, "http", [], ["expects HTTPS", "use https://"]),
    "wrong password": ("wrong_password", {}, "url", ["--es-ca-certs", "CA"],
                       ["refused the credentials of user 'neardup' (401: unknown user or "
                        "wrong password)", "NEARDUP_ES_PASSWORD"]),
    "no credentials": (None, {}, "url", ["--es-ca-certs", "CA"],
                       ["needs credentials", "NEARDUP_ES_USERNAME", "NEARDUP_ES_API_KEY"]),
    "API key refused": (None, {"NEARDUP_ES_API_KEY": "Ym9ndXM6Ym9ndXM="}, "url",
                        ["--es-ca-certs", "CA"], ["refused the API key", "NEARDUP_ES_API_KEY"]),
    "privilege missing": ("neardup", {}, "url", ["--es-ca-certs", "CA", "--pages-index",
                                                 "other-pages"],
                          ["user [neardup]", "indices:data/read/search",
                           "index privilege 'read' on other-pages"]),
    "unreachable": ("neardup", {}, "closed", [], ["not reachable (connection refused)"]),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_each_failure_says_its_cause_and_fix(
    case: str, secured_es: SecuredES, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:
    user_name, extra_env, kind, flags, parts = FAILURES[case]
    user = getattr(secured_es.users, user_name) if user_name else None
    as_env(monkeypatch, user, **extra_env)
    # the password is in the URL too, unencoded, where the case allows (env credentials win)
    nasty = f"neardup:{NASTY_PASSWORD}@"
    url = {"url": secured_es.url,
           "http": secured_es.http_url_of_https_port.replace("://", f"://{nasty}", 1),
           "closed": f"https://{nasty}127.0.0.1:{free_port()}"}[kind]
    flags = [{"CA": str(secured_es.ca_path), "OTHER_CA": str(secured_es.other_ca_path)}.get(f, f)
             for f in flags]
    caplog.set_level(logging.DEBUG)
    assert main(["stats", "--es", url, *flags]) == 2
    out, err = capsys.readouterr()
    assert all(part in err for part in parts), err
    assert "Traceback" not in err and not leaks(out + err + caplog.text)


def test_https_sent_to_a_plain_http_server(es_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--es", es_url.replace("http://", "https://")]) == 2
    assert "does not speak TLS on that port: use http://" in capsys.readouterr().err


def test_the_liveness_check_raises_on_a_refusal(secured_es: SecuredES) -> None:
    """401 and 403 on cluster health are refusals to report, not an absence to wait out."""
    users = secured_es.users
    for user, expected in ((users.no_monitor, PrivilegeMissing),
                           (users.wrong_password, CredentialsRefused), (users.neardup, None)):
        client, location = client_from_settings(
            secured_es.url, ElasticSettings(ca_certs=str(secured_es.ca_path),
                                            basic_auth=user), env={})
        try:
            connection = Connection(client, location, 1.0)
            if expected is None:
                assert connection.ping(2.0)
                continue
            with pytest.raises(expected) as refused:
                connection.ping(2.0)
            assert "'monitor'" in str(refused.value) or "NEARDUP_ES_PASSWORD" in str(
                refused.value)
        finally:
            client.close()


@pytest.mark.parametrize("user_name", ["no_monitor", "wrong_password"])
@deferred_f_from_coro_f
async def test_a_refused_liveness_check_stops_the_crawl(
    user_name: str, secured_es: SecuredES, names: dict[str, str], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Even with NEARDUP_ES_START = 'degraded': no page passes unchecked, nothing is spooled,
    and the log says which privilege or which credentials."""
    user = getattr(secured_es.users, user_name)
    caplog.set_level(logging.INFO)
    with serve_demo_site(tmp_path) as base:
        result = await crawl(base, crawl_settings(
            secured_es.url, NEARDUP_ES_BASIC_AUTH=f"{user.name},{user.password}",
            NEARDUP_ES_CA_CERTS=str(secured_es.ca_path), NEARDUP_ES_START="degraded",
            NEARDUP_FINGERPRINT_INDEX=names["fingerprints"],
            NEARDUP_SPOOL_PATH=str(tmp_path / "spool.sqlite")))
    assert result.stats["finish_reason"] == "neardup_es_access_refused"
    assert not result.came_out and not (tmp_path / "spool.sqlite").exists()
    expected = "cluster privilege 'monitor'" if user_name == "no_monitor" else \
        "refused the credentials of user 'neardup'"
    assert expected in caplog.text and not leaks(caplog.text, user.password)


@deferred_f_from_coro_f
async def test_crawl_and_every_command_over_tls_keep_the_password_out(
    secured_es: SecuredES, names: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The least-privilege user, its password (`/ # ? @ : %`) unencoded in the URL: a crawl
    into the pages index, then dedup, search, stats and report with the CA or with
    verification off; the password is in no output, log line, feed or report."""
    caplog.set_level(logging.DEBUG)
    ca = str(secured_es.ca_path)
    url = secured_es.url_with(secured_es.users.neardup)
    feed = tmp_path / "kept.jsonl"
    with serve_demo_site(tmp_path) as base:
        result = await crawl(base, crawl_settings(
            url, NEARDUP_ES_CA_CERTS=ca, NEARDUP_FINGERPRINT_INDEX=names["fingerprints"],
            NEARDUP_PAGES_INDEX=names["pages"],
            FEEDS={str(feed): {"format": "jsonlines", "encoding": "utf-8"}}))
    assert result.stats["finish_reason"] == "finished", caplog.text
    assert len(result.kept) == len(ORIGINALS) and len(result.dropped) == len(DUPLICATES)
    assert "auth: basic as 'neardup' from the URL" in caplog.text

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in (
        {"id": "a", "text": A}, {"id": "b", "text": edit(A, 5)}, {"id": "x", "text": OTHER})))
    verdicts = tmp_path / "verdicts.jsonl"
    assert main(["dedup", str(docs), "-o", str(verdicts), "--method", "simhash", "--language",
                 "en", *STEMMED_FLAGS, "--backend",
                 url, "--es-ca-certs", ca, "--fingerprint-index", names["dedup"]]) == 0
    assert [json.loads(line)["duplicate_of"] for line in verdicts.read_text().splitlines()] == [
        None, "a", None]
    assert main(["search", "history", "--es", url, "--pages-index", names["pages"],
                 "--es-ca-certs", ca]) == 0
    searched = capsys.readouterr()
    assert "A Brief History of PostgreSQL" in searched.out
    as_env(monkeypatch, secured_es.users.neardup, NEARDUP_ES_CA_CERTS=ca)
    assert main(["stats", "--es", secured_es.url, "--pages-index", names["pages"],
                 "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["documents"] == 11
    out, err = searched.out + out, searched.err + err
    report = tmp_path / "report.html"
    caplog.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["report", "--es", url, "--pages-index", names["pages"],
                     "--no-es-verify-certs", "-o", str(report)]) == 0
    assert not caught, [str(w.message) for w in caught]  # no InsecureRequestWarning per request
    assert caplog.text.count("verification is off") == 1
    out2, err2 = capsys.readouterr()
    texts: list[str | bytes] = [out + err + out2 + err2, caplog.text, feed.read_bytes(),
                                report.read_bytes(), verdicts.read_text()]
    assert not any(leaks(text) for text in texts)
    assert "https://***@127.0.0.1" in report.read_text(encoding="utf-8")


@deferred_f_from_coro_f
async def test_a_degraded_crawl_spools_without_the_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The server away at start: pages pass unchecked into the spool; neither the spool nor the
    log holds the password written unencoded in the URL."""
    caplog.set_level(logging.DEBUG)
    spool = tmp_path / "spool.sqlite"
    with serve_demo_site(tmp_path) as base:
        result = await crawl(base, crawl_settings(
            f"https://neardup:{NASTY_PASSWORD}@127.0.0.1:{free_port()}",
            NEARDUP_ES_START="degraded", NEARDUP_ES_REPROBE_SECONDS=60,
            NEARDUP_SPOOL_PATH=str(spool)))
    assert result.stats["neardup/spooled"] == 11 and Spool(spool).pending() == 11
    assert "not reachable (connection refused)" in caplog.text
    spooled = b"".join(p.read_bytes() for p in tmp_path.glob("spool.sqlite*"))
    assert not leaks(caplog.text) and not leaks(spooled)
