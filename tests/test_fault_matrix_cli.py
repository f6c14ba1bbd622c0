"""The fault matrix of `neardup dedup`, `neardup hygiene` and `neardup reuse --index`, each fault
made for real (tests/faults.py): an Elasticsearch of this module's own killed, frozen, refusing
writes (403), past its flood-stage watermark, answering 429; an SQLite file on a full disk,
locked by another process, truncated; Ctrl-C. Every cell: no page or verdict lost, an exit
status that says the job is not complete, one line saying what happened and how to go on, and a
second run that completes the job with the result of an undisturbed run (docs/reliability.md,
"Fault matrix: dedup, hygiene and reuse")."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.corpora import postgresql_pages
from tests.es_server import Server, own_server
from tests.faults import (
    Http429Proxy,
    fill,
    flood_stage,
    small_tmpfs,
    sqlite_locked,
    truncate,
    write_block,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
DOCS = 400  # documents of the dedup corpus: four batches of 100
FED_FIRST = 250  # lines fed before the fault: two batches decided, the third waiting for more
# Short waits, so that a fault is met within seconds (the defaults: 5 s each).
FAST = {"NEARDUP_ES_RETRY_SECONDS": "2", "NEARDUP_ES_REQUEST_TIMEOUT": "2"}


def run(*args: str, env: dict[str, str] | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neardup_pipeline", *args], cwd=ROOT,
                          input=stdin, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **FAST, **(env or {})}, check=False)


def one_line(stderr: str) -> str:
    """The run's only stderr line (no traceback, no retry notices)."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """400 real manual pages (copies across releases among them) and the verdicts of an
    undisturbed run on the memory index."""
    folder = tmp_path_factory.mktemp("corpus")
    path = folder / "in.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in corpus_docs()), encoding="utf-8")
    done = run("dedup", str(path), "-o", str(folder / "base.jsonl"))
    assert done.returncode == 0, done.stderr
    base = read_jsonl(folder / "base.jsonl")
    assert len(base) == DOCS and sum(1 for v in base if v["duplicate_of"]) > 20
    return path, base


def corpus_docs() -> list[dict[str, Any]]:
    """200 manual pages of release 15.18 and their 15.20 copies, ordered so that copies fall
    both before and after the point where a fault stops a run (200 documents)."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for page in postgresql_pages():
        groups[page.group].append(page)
    pairs = [sorted(groups[g], key=lambda p: p.doc_id) for g in sorted(groups)[:DOCS // 2]]
    old, new = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
    order = old[:150] + new[:50] + old[150:] + new[50:]
    return [{"id": p.doc_id, "html": p.html.decode("utf-8", "replace")} for p in order]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_partial(out: Path, base: list[dict[str, Any]], checked: int) -> None:
    """A line for every input document in input order: the first `checked` decided, the rest
    unchecked (none lost)."""
    lines = read_jsonl(out)
    assert [v["id"] for v in lines] == [v["id"] for v in base]
    assert [v.get("status") == "unchecked" for v in lines] == \
        [n >= checked for n in range(len(base))]


# --------------------------------------------------------------------------- SQLite, Ctrl-C


def test_dedup_on_sqlite_ctrl_c_then_same_command_completes(
    corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
) -> None:
    path, base = corpus
    db, out = tmp_path / "fp.sqlite", tmp_path / "out.jsonl"
    argv = [sys.executable, "-m", "neardup_pipeline", "dedup", "-", "--backend", f"sqlite:{db}",
            "-o", str(out)]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    child = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    assert child.stdin is not None and child.stderr is not None
    child.stdin.write("".join(lines[:FED_FIRST]))
    child.stdin.flush()
    wait_for(lambda: reading_stdin(child.pid))  # two batches decided, waiting for the third
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130
    assert one_line(err) == ("neardup: interrupted (Ctrl-C); 200 of 250 documents checked, the "
                             "other 50 written with status unchecked; run the same command "
                             "again to complete")
    assert_partial(out, base[:FED_FIRST], 200)
    again = run("dedup", "-", "--backend", f"sqlite:{db}", "-o", str(out), stdin="".join(lines))
    assert again.returncode == 0, again.stderr
    assert read_jsonl(out) == base


def reading_stdin(pid: int) -> bool:
    """Whether the process's main thread waits in read(2) on its stdin: it has read and decided
    all it was given (Linux: /proc/PID/syscall starts with the call's number and first
    argument; read is 0 on x86-64, 63 on arm64)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    time.sleep(0.2)  # still there a moment later: not a read between two lines
    again = Path(f"/proc/{pid}/syscall").read_text().split()
    return call[:2] == again[:2] and call[:2] in (["0", "0x0"], ["63", "0x0"])


def wait_for(ready: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def run_in_steps_until(child: subprocess.Popen[str], ready: Callable[[], bool]) -> None:
    """Let `child` run in short steps, held (SIGSTOP) while `ready` is asked, until it is; it
    is left held. However slow the question on a loaded machine, the run cannot finish between
    the answer and the fault."""
    os.kill(child.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 60
    while not ready():
        assert child.poll() is None, "the run ended before the fault"
        assert time.monotonic() < deadline, "timed out"
        os.kill(child.pid, signal.SIGCONT)
        time.sleep(0.05)
        os.kill(child.pid, signal.SIGSTOP)


def test_dedup_on_sqlite_locked_by_another_process(
    corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
) -> None:
    path, base = corpus
    db, out = tmp_path / "fp.sqlite", tmp_path / "out.jsonl"
    half = tmp_path / "half.jsonl"
    half.write_text("".join(path.read_text().splitlines(keepends=True)[:100]))
    assert run("dedup", str(half), "--backend", f"sqlite:{db}", "-o", str(out)).returncode == 0
    argv = ("dedup", str(path), "--backend", f"sqlite:{db}", "-o", str(out))
    with sqlite_locked(db):
        started = time.monotonic()
        locked = run(*argv)
        waited = time.monotonic() - started
    assert locked.returncode == 2 and waited < 30
    line = one_line(locked.stderr)
    assert line.startswith(f"neardup: error: SQLite index {db} is locked by another process")
    assert "stop the other process using that file" in line
    again = run(*argv)
    assert again.returncode == 0, again.stderr
    assert read_jsonl(out) == base


def test_dedup_on_sqlite_truncated_file(
    corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
) -> None:
    path, base = corpus
    db, out = tmp_path / "fp.sqlite", tmp_path / "out.jsonl"
    argv = ("dedup", str(path), "--backend", f"sqlite:{db}", "-o", str(out))
    assert run(*argv).returncode == 0
    truncate(db)
    damaged = run(*argv)
    assert damaged.returncode == 2
    line = one_line(damaged.stderr)
    assert line.startswith(f"neardup: error: SQLite index {db} is damaged or truncated")
    assert "restore it from a backup, or delete it" in line
    for leftover in (db, *db.parent.glob("fp.sqlite*")):  # the fix the message gives
        if leftover.is_dir():
            for f in leftover.iterdir():
                f.unlink()
            leftover.rmdir()
        else:
            leftover.unlink(missing_ok=True)
    again = run(*argv)
    assert again.returncode == 0, again.stderr
    assert read_jsonl(out) == base


def test_dedup_on_sqlite_full_disk(
    corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
) -> None:
    path, base = corpus
    out = tmp_path / "out.jsonl"
    with small_tmpfs(tmp_path / "disk", "8m") as disk:
        db = disk / "fp.sqlite"
        argv = ("dedup", str(path), "--backend", f"sqlite:{db}", "-o", str(out))
        half = tmp_path / "half.jsonl"
        half.write_text("".join(path.read_text().splitlines(keepends=True)[:100]))
        assert run("dedup", str(half), "--backend", f"sqlite:{db}", "-o", str(out)
                   ).returncode == 0
        filler = fill(disk, leave=64 * 1024)
        full = run(*argv)
        assert full.returncode == 2
        line = one_line(full.stderr)
        assert f"the disk holding SQLite index {db} is full" in line, line
        assert "free space there" in line
        if "documents checked" in line:  # the index failed mid-run: every line written
            lines = read_jsonl(out)
            assert [v["id"] for v in lines] == [v["id"] for v in base]
        filler.unlink()  # space freed
        again = run(*argv)
        assert again.returncode == 0, again.stderr
        assert read_jsonl(out) == base


# --------------------------------------------------------------------------- Elasticsearch


@pytest.fixture(scope="module")
def own_es() -> Iterator[Server]:
    """An Elasticsearch of this module's own, to kill, freeze and block at will."""
    with own_server() as server:
        yield server


def es_call(url: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{url}{path}", method=method, headers={"Content-Type": "application/json"},
        data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def writelog_entries(url: str, index: str) -> int:
    """Batches the run published (one write-log record each), 0 before the log exists."""
    try:
        es_call(url, "POST", f"/{index}-writelog/_refresh")
        return int(es_call(url, "GET", f"/{index}-writelog/_count")["count"])
    except OSError:
        return 0


class Fault:
    """One Elasticsearch fault: made mid-run, then put right before the second run."""

    def __init__(self, name: str, server: Server, index: str) -> None:
        self.name, self.server, self.index = name, server, index
        self.proxy: Http429Proxy | None = None
        if name == "429":
            self.proxy = Http429Proxy(server.url)

    @property
    def url(self) -> str:
        """What the command is given: the server, or the proxy in front of it."""
        return self.proxy.url if self.proxy is not None else self.server.url

    def make(self) -> None:
        assert self.server.process is not None
        if self.name == "kill":
            os.killpg(self.server.process.pid, signal.SIGKILL)
        elif self.name == "sigstop":
            self.server.pause()
        elif self.name == "403":
            write_block(self.server.url, f"{self.index}*", True)
        elif self.name == "flood":
            flood_stage(self.server.url, f"{self.index}*", True)
        else:
            assert self.proxy is not None
            self.proxy.rejecting = True

    def put_right(self) -> None:
        if self.name == "kill":
            assert self.server.process is not None
            self.server.process.wait(timeout=60)
            self.server.launch(180)
        elif self.name == "sigstop":
            self.server.resume()
        elif self.name == "403":
            write_block(self.server.url, f"{self.index}*", False)
        elif self.name == "flood":
            flood_stage(self.server.url, f"{self.index}*", False)
        else:
            assert self.proxy is not None
            self.proxy.rejecting = False

    def close(self) -> None:
        if self.proxy is not None:
            self.proxy.close()


# What the one line says happened, per fault (the rest of the line is the command's).
SAID = {
    "kill": "Elasticsearch at http://127.0.0.1:",
    "sigstop": "not answer",  # did not answer within 2 s, or (met again) still does not
    "403": "lift the block with PUT ",  # the call that lifts it
    "flood": "flood-stage watermark, index has read-only-allow-delete block",
    "429": "overloaded",  # not "did not answer": it answered, 429
}
ES_FAULTS = list(SAID)


@pytest.mark.elasticsearch
@pytest.mark.parametrize("fault_name", ES_FAULTS)
def test_dedup_on_elasticsearch_fault_then_same_command_completes(
    fault_name: str, own_es: Server, corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
) -> None:
    path, base = corpus
    index = f"fm-dedup-{fault_name}-{uuid.uuid4().hex[:6]}"
    fault = Fault(fault_name, own_es, index)
    out = tmp_path / "out.jsonl"
    try:
        argv = [sys.executable, "-m", "neardup_pipeline", "dedup", "-", "--backend", fault.url,
                "--fingerprint-index", index, "-o", str(out)]
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        child = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env={**os.environ, **FAST})
        assert child.stdin is not None
        child.stdin.write("".join(lines[:FED_FIRST]))
        child.stdin.flush()
        wait_for(lambda: writelog_entries(own_es.url, index) >= 2)  # two batches decided
        fault.make()
        child.stdin.write("".join(lines[FED_FIRST:]))
        child.stdin.close()
        child.stdin = None  # closed: communicate() must not flush it
        _, err = child.communicate(timeout=120)
        fault.put_right()
        assert child.returncode == 2, err
        line = one_line(err)
        print(f"\n[dedup {fault_name}] {line}")
        assert SAID[fault_name] in line, line
        assert line.endswith("; 200 of 400 documents checked, the other 200 written with status "
                             "unchecked; run the same command again to complete"), line
        assert_partial(out, base, 200)
        again = run("dedup", str(path), "--backend", fault.url, "--fingerprint-index", index,
                    "-o", str(out))
        assert again.returncode == 0, again.stderr
        assert read_jsonl(out) == base  # as an undisturbed run
    finally:
        fault.close()


@pytest.mark.elasticsearch
def test_dedup_rides_out_a_429_shorter_than_its_retries(
    own_es: Server, corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
) -> None:
    path, base = corpus
    proxy = Http429Proxy(own_es.url)
    out = tmp_path / "out.jsonl"
    try:
        proxy.rejecting = True
        child = subprocess.Popen(
            [sys.executable, "-m", "neardup_pipeline", "dedup", str(path), "--backend",
             proxy.url, "--fingerprint-index", f"fm-dedup-429-short-{uuid.uuid4().hex[:6]}",
             "-o", str(out)], cwd=ROOT, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **FAST})
        wait_for(lambda: proxy.rejected >= 2)
        proxy.rejecting = False
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0 and err == "", err
        assert read_jsonl(out) == base
    finally:
        proxy.close()


# --------------------------------------------------------------------------- hygiene


HYGIENE_DOCS = 96  # of them 48 originals (corpus_docs' first), then their 48 copies


def load(url: str, index: str, docs: list[dict[str, Any]]) -> None:
    """One shard, indexed in list order: the order hygiene and dedup both read."""
    es_call(url, "PUT", f"/{index}", {"settings": {"number_of_shards": 1,
                                                   "number_of_replicas": 0}})
    body = "".join(json.dumps({"index": {"_index": index, "_id": d["id"]}}) + "\n"
                   + json.dumps({"html": d["html"]}) + "\n" for d in docs)
    request = urllib.request.Request(f"{url}/_bulk?refresh=true", method="POST",
                                     data=body.encode(),
                                     headers={"Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert not json.load(answer)["errors"]


def checkpoint_counts(url: str, index: str) -> dict[str, Any]:
    """The run's checkpoint (a real-time get), {} before it exists."""
    try:
        found = es_call(url, "GET", f"/{index}-neardup-fingerprints-checkpoint/_doc/"
                        f"{urllib.parse.quote(f'{index} -> {index} (all)', safe='')}")
    except OSError:
        return {}
    return dict(found.get("_source") or {})


def hygiene_marks(url: str, index: str) -> dict[str, dict[str, Any]]:
    es_call(url, "POST", f"/{index}/_refresh")
    hits = es_call(url, "POST", f"/{index}/_search", {
        "size": 1000, "_source": ["neardup_*"], "query": {"match_all": {}}})["hits"]["hits"]
    return {h["_id"]: h["_source"] for h in hits}


def assert_consistent(by_id: dict[str, dict[str, Any]]) -> None:
    """Every document marked; one canonical per cluster, named by every other member."""
    clusters: dict[str, list[str]] = defaultdict(list)
    for doc_id, fields in by_id.items():
        assert {"neardup_cluster", "neardup_canonical", "neardup_of"} <= set(fields), doc_id
        clusters[fields["neardup_cluster"]].append(doc_id)
    for cluster, members in clusters.items():
        assert [m for m in members if by_id[m]["neardup_canonical"]] == [cluster]
        assert all(by_id[m]["neardup_of"] == (None if m == cluster else cluster)
                   for m in members)


@pytest.fixture(scope="module")
def hygiene_corpus(corpus: tuple[Path, list[dict[str, Any]]],
                   tmp_path_factory: pytest.TempPathFactory,
                   ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The first documents of the corpus and each one's cluster by `neardup dedup`."""
    path, _ = corpus
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    half = HYGIENE_DOCS // 2  # originals, then their copies: most after the fault
    docs = lines[:half] + lines[150:150 + half]
    folder = tmp_path_factory.mktemp("hygiene")
    (folder / "in.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    done = run("dedup", str(folder / "in.jsonl"), "-o", str(folder / "out.jsonl"))
    assert done.returncode == 0, done.stderr
    clusters = {v["id"]: v["cluster"] for v in read_jsonl(folder / "out.jsonl")}
    assert len(set(clusters.values())) < len(clusters)  # copies among them
    return docs, clusters


@pytest.mark.elasticsearch
@pytest.mark.parametrize("fault_name", ES_FAULTS)
def test_hygiene_on_elasticsearch_fault_then_resumes(
    fault_name: str, own_es: Server,
    hygiene_corpus: tuple[list[dict[str, Any]], dict[str, str]],
) -> None:
    docs, clusters = hygiene_corpus
    index = f"fm-hygiene-{fault_name}-{uuid.uuid4().hex[:6]}"
    load(own_es.url, index, docs)
    fault = Fault(fault_name, own_es, index)
    try:
        argv = ["hygiene", "--es", fault.url, "--index", index, "--window", "8", "--batch", "4"]
        child = subprocess.Popen([sys.executable, "-m", "neardup_pipeline", *argv], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, **FAST})
        run_in_steps_until(child, lambda: checkpoint_counts(own_es.url, index).get(
            "counts", {}).get("read", 0) >= 24)
        try:  # the run is held while the fault is made: it cannot end in between
            fault.make()
        finally:
            os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=120)
        fault.put_right()
        assert child.returncode == 2, (out, err)
        line = one_line(err)
        assert SAID[fault_name] in line, line
        assert line.endswith("documents marked and saved in the checkpoint; run the same "
                             "command again to resume from it"), line
        again = run(*argv)
        assert again.returncode == 0, again.stderr
        assert "resumed from its checkpoint" in again.stdout
        by_id = hygiene_marks(own_es.url, index)
        assert set(by_id) == {d["id"] for d in docs}  # none skipped
        assert_consistent(by_id)  # none half-written, no mark overwritten wrongly
        assert {i: m["neardup_cluster"] for i, m in by_id.items()} == clusters
    finally:
        fault.close()


# --------------------------------------------------------------------------- reuse --index


@pytest.fixture(scope="module")
def reuse_files(corpus: tuple[Path, list[dict[str, Any]]],
                tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, bytes]:
    """A reuse index of 100 manual pages, 100 suspects (50 pages of the next release, 50 of the
    sources under other ids), the index file's bytes (a backup) and an undisturbed run's
    output."""
    path, _ = corpus
    folder = tmp_path_factory.mktemp("reuse")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    sources, suspects, db = folder / "sources.jsonl", folder / "suspects.jsonl", folder / "s.db"
    sources.write_text("".join(lines[:100]), encoding="utf-8")
    suspects.write_text("".join(lines[150:200]) + "".join(
        line.replace('"id": "', '"id": "again/', 1) for line in lines[:50]), encoding="utf-8")
    assert run("reuse", "index", str(sources), "-o", str(db)).returncode == 0
    base = run("reuse", "--index", str(db), str(suspects))
    assert base.returncode == 0, base.stderr
    assert sum(1 for line in base.stdout.splitlines() if json.loads(line)["sources"]) > 50
    return db, suspects, folder / "base.jsonl", base.stdout.encode()


def reuse_fed(db: Path, suspects: Path, out: Path, fault: Callable[[], Any]
              ) -> subprocess.CompletedProcess[str]:
    """`neardup reuse --index` on stdin: 50 suspects, `fault()` once they are looked up, then
    the other 50."""
    lines = suspects.read_text(encoding="utf-8").splitlines(keepends=True)
    argv = [sys.executable, "-m", "neardup_pipeline", "reuse", "--index", str(db), "-", "-o",
            str(out)]
    child = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    assert child.stdin is not None
    child.stdin.write("".join(lines[:50]))
    child.stdin.flush()
    wait_for(lambda: reading_stdin(child.pid))
    with contextlib.ExitStack() as held:
        if (context := fault()) is not None:
            held.enter_context(context)
        child.stdin.write("".join(lines[50:]))
        child.stdin.close()
        child.stdin = None
        _, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, child.returncode, "", err)


def assert_reuse_partial(out: Path, base: bytes) -> int:
    """Every suspect has its line, in input order; those checked as an undisturbed run has
    them. Returns how many were checked."""
    got = read_jsonl(out)
    expected = [json.loads(line) for line in base.decode().splitlines()]
    assert [r["id"] for r in got] == [r["id"] for r in expected]
    checked = [r.get("status") != "unchecked" for r in got]
    done = checked.index(False) if False in checked else len(got)
    assert checked == [n < done for n in range(len(got))]
    assert got[:done] == expected[:done]
    assert all(r["sources"] == [] for r in got[done:])
    return done


def test_reuse_index_locked_by_another_process_mid_run(
    reuse_files: tuple[Path, Path, Path, bytes], tmp_path: Path,
) -> None:
    db, suspects, _, base = reuse_files
    out = tmp_path / "out.jsonl"
    locked = reuse_fed(db, suspects, out, lambda: sqlite_locked(db))
    assert locked.returncode == 2
    line = one_line(locked.stderr)
    assert line.startswith(f"neardup: error: SQLite index {db} is locked by another process")
    assert line.endswith("; 50 of 100 suspects checked, the other 50 written with status "
                         "unchecked; run the same command again to complete"), line
    assert assert_reuse_partial(out, base) == 50
    again = run("reuse", "--index", str(db), str(suspects), "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert out.read_bytes() == base


def test_reuse_index_truncated_mid_run(
    reuse_files: tuple[Path, Path, Path, bytes], tmp_path: Path,
) -> None:
    db, suspects, _, base = reuse_files
    copy, out = tmp_path / "s.db", tmp_path / "out.jsonl"
    copy.write_bytes(db.read_bytes())
    damaged = reuse_fed(copy, suspects, out, lambda: truncate(copy))
    assert damaged.returncode == 2
    line = one_line(damaged.stderr)
    assert line.startswith(f"neardup: error: SQLite index {copy} is damaged or truncated"), line
    assert "restore it from a backup, or build it again with `neardup reuse index" in line
    assert "written with status unchecked; run the same command again to complete" in line
    assert_reuse_partial(out, base)
    copy.write_bytes(db.read_bytes())  # restored from the backup
    again = run("reuse", "--index", str(copy), str(suspects), "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert out.read_bytes() == base


def test_reuse_index_output_on_a_full_disk(
    reuse_files: tuple[Path, Path, Path, bytes], tmp_path: Path,
) -> None:
    db, suspects, _, base = reuse_files
    with small_tmpfs(tmp_path / "disk", "1m") as disk:
        out = disk / "out.jsonl"
        filler = fill(disk, leave=4096)
        full = run("reuse", "--index", str(db), str(suspects), "-o", str(out))
        assert full.returncode == 2
        line = one_line(full.stderr)
        assert line.startswith(f"neardup: error: the disk holding {out} is full"), line
        assert line.endswith("free space there, then run the same command again"), line
        filler.unlink()
        again = run("reuse", "--index", str(db), str(suspects), "-o", str(out))
        assert again.returncode == 0, again.stderr
        assert out.read_bytes() == base
