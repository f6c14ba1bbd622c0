"""Faults made for real, for the fault-matrix tests: an HTTP proxy that answers 429 in front of a
real Elasticsearch, index blocks set as Elasticsearch sets them, a second process holding an
SQLite file's exclusive lock, a small tmpfs that fills up, a truncated file."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Headers that belong to one hop, not to the request or answer the proxy passes on.
HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                         "proxy-connection", "te", "trailer", "upgrade"})
REJECTED = {"error": {"root_cause": [{"type": "es_rejected_execution_exception",
                                      "reason": "rejected execution (queue capacity 1)"}],
                      "type": "es_rejected_execution_exception",
                      "reason": "rejected execution (queue capacity 1)"}, "status": 429}


class Http429Proxy:
    """An HTTP proxy on 127.0.0.1 in front of a real Elasticsearch: it passes every request on,
    except while `rejecting`, when it answers 429 as a node whose queues are full does."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        target = (parts.hostname or "127.0.0.1", parts.port or 80)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the client expects
            disable_nagle_algorithm = True  # headers and body leave at once, no 40 ms stalls

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.rejecting:
                    proxy.rejected += 1
                    self._answer(429, {"Content-Type": "application/json",
                                       "X-Elastic-Product": "Elasticsearch"},
                                 json.dumps(REJECTED).encode())
                    return
                upstream = http.client.HTTPConnection(*target, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in HOP_HEADERS}
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                    self._answer(answer.status, {k: v for k, v in answer.getheaders()
                                                 if k.lower() not in HOP_HEADERS}, data)
                finally:
                    upstream.close()

            def _answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.rejecting = False
        self.rejected = 0
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def put_settings(es_url: str, indices: str, settings: dict[str, Any]) -> None:
    """PUT `indices`/_settings (a pattern: every index of a job at once)."""
    request = urllib.request.Request(
        f"{es_url}/{indices}/_settings?expand_wildcards=all", method="PUT",
        data=json.dumps(settings).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert json.load(answer).get("acknowledged") is True


def flood_stage(es_url: str, indices: str, on: bool) -> None:
    """What Elasticsearch does to every index with a shard on a node whose disk passes the
    flood-stage watermark (and undoes once the disk is below the high watermark)."""
    put_settings(es_url, indices, {"index.blocks.read_only_allow_delete": True if on else None})


def write_block(es_url: str, indices: str, on: bool) -> None:
    """An index write block: Elasticsearch 9.2 refuses writes with 403 (FORBIDDEN/8)."""
    put_settings(es_url, indices, {"index.blocks.write": True if on else None})


_LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
db.rollback()
"""


@contextlib.contextmanager
def sqlite_locked(path: Path) -> Iterator[None]:
    """Another process holds `path` with `BEGIN EXCLUSIVE` until the block ends."""
    locker = subprocess.Popen([sys.executable, "-c", _LOCKER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        yield
    finally:
        assert locker.stdin is not None
        locker.stdin.close()
        locker.wait(timeout=30)


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted on `folder` (made if missing), unmounted after the block."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                   check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the filesystem of `folder` up to `leave` free bytes with one file; returns it."""
    filler = folder / "filler"
    with filler.open("wb") as out, contextlib.suppress(OSError):
        stat = os.statvfs(folder)
        free = stat.f_bavail * stat.f_frsize - leave
        chunk = b"\0" * (1 << 20)
        while free > 0:
            out.write(chunk[:free])
            free -= len(chunk)
        out.flush()
    return filler


def truncate(path: Path, keep: float = 0.5) -> None:
    """Cut `path` to `keep` of its size: a copy that stopped partway, a disk that lost its end."""
    size = path.stat().st_size
    with path.open("r+b") as file:
        file.truncate(int(size * keep))
