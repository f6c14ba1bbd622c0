"""A server's process on this machine, found by its port, and what it spends: CPU and disk
writes from /proc (Linux), so a benchmark charges the server's cost beside its own."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit


def listening_pid(url: str) -> int | None:
    """The local process listening on the URL's port (Linux /proc; root reads every process),
    or None: the server's CPU is then not measured."""
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        return None
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == parts.port:
                inodes.add(f"socket:[{fields[9]}]")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                return int(entry.name)
        except OSError:
            continue
    return None


def process_cpu(pid: int | None) -> float | None:
    """User + system CPU seconds of a running process, from /proc/PID/stat."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def disk_writes(pid: int | None) -> int | None:
    """Bytes the process has written to disk so far: write_bytes less cancelled_write_bytes
    (pages written then truncated before they reached the disk); None: not measured."""
    if pid is None:
        return None
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split(": ") for line in lines)
    return int(fields["write_bytes"]) - int(fields["cancelled_write_bytes"])
