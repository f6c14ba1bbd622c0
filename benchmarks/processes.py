"""Whole processes timed as a user sees them: wall seconds and the CPU seconds the process
itself used (its rusage), start-up included."""

from __future__ import annotations

import os
import subprocess
import time


def timed_process(command: list[str], accepted: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `command`; an exit status outside `accepted`
    raises RuntimeError with its stderr."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in accepted:
        raise RuntimeError(f"{' '.join(command)} failed ({code}): "
                           f"{error.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime
