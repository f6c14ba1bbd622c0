"""Where a figure comes from: the commit and the machine, printed with every benchmark's results.

A figure compares only with figures of the same code on the same machine, so each benchmark
prints both with its results.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What the figures depend on: the package, the benchmarks and the build, not the results files.
MEASURED_PATHS = ("neardup_pipeline", "benchmarks", "pyproject.toml", ":(exclude)benchmarks/*.md")


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=False)
    except OSError:  # no git on this machine
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def git_state() -> str:
    """The commit measured (`git rev-parse --short HEAD`), "+ uncommitted" when the code
    measured differs from it."""
    head = _git("rev-parse", "--short", "HEAD") or "(not a git checkout)"
    changed = _git("status", "--porcelain", "--", *MEASURED_PATHS)
    return f"{head} + uncommitted" if changed else head


def machine() -> str:
    """Cores and CPU model, memory, distribution and Python, in one line."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        distro = platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        distro = platform.system()
    return (f"{os.cpu_count()} cores ({cpu}), {mem_gib:.0f} GiB, {distro}, "
            f"Python {platform.python_version()}")


def measured_at() -> str:
    """"At <commit> on <machine>": the first line of a benchmark's report."""
    return f"At {git_state()} on {machine()}"
