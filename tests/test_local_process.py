"""benchmarks/local_process.py: the process behind a local port, its CPU and its disk writes,
read from /proc for this test's own process and a socket it listens on."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from benchmarks.local_process import disk_writes, listening_pid, process_cpu

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_the_process_listening_on_a_port_is_found() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert listening_pid(f"http://127.0.0.1:{port}") == os.getpid()
    assert listening_pid(f"http://127.0.0.1:{port}") is None  # closed: nobody listens
    assert listening_pid("http://search.example:9200") is None  # not on this machine


def test_cpu_and_disk_writes_grow_with_the_work_done() -> None:
    cpu_before = process_cpu(os.getpid())
    written_before = disk_writes(os.getpid())
    assert cpu_before is not None and written_before is not None
    sum(i * i for i in range(2_000_000))
    # the repository's disk, not a tmpfs /tmp, so the bytes reach a block device
    with tempfile.TemporaryDirectory(dir=ROOT) as folder:
        with open(Path(folder) / "data", "wb") as out:
            out.write(os.urandom(4 << 20))
            out.flush()
            os.fsync(out.fileno())
        cpu_after = process_cpu(os.getpid())
        written_after = disk_writes(os.getpid())
    assert cpu_after is not None and cpu_after > cpu_before
    assert written_after is not None and written_after - written_before >= 4 << 20
    assert process_cpu(None) is None and disk_writes(None) is None
