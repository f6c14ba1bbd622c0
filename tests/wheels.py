"""Build the project's wheel from a copy of the checkout (tests/test_mappings.py,
tests/test_fallbacks.py), so a build leaves nothing in the working tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["neardup_pipeline"]  # source folders whose .py files the wheel must hold
TOP_FILES = {"pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in"}
# Build inputs the wheel leaves out: the .pyx, the C/C++ Cython generates, the header.
BUILD_INPUTS = (".pyx", ".c", ".cpp", ".h")


def build_wheel(tmp_path: Path, env: dict[str, str] | None = None) -> tuple[Path, str]:
    """The wheel, and the build's verbose output (setup.py's warnings are in it).

    Offline first (the virtualenv's setuptools); with build isolation as a fallback when the
    environment lacks a setuptools/wheel recent enough.
    """
    source = tmp_path / "src"
    source.mkdir()
    for item in ROOT.iterdir():
        if item.is_file() and item.name in TOP_FILES:
            shutil.copy2(item, source / item.name)
    for folder in [*PACKAGES, "es_mappings"]:
        shutil.copytree(
            ROOT / folder,
            source / folder,
            # Built in place by the editable install: the build makes its own. The C/C++ that
            # Cython generated stays (cythonize reuses it when newer than the .pyx).
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".*", "*.so", "*.pyd"),
        )
    dist = tmp_path / "dist"
    base = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(dist), str(source)]
    offline = subprocess.run(
        [*base, "--no-build-isolation"], capture_output=True, text=True, timeout=600, env=env
    )
    done = offline
    if offline.returncode != 0:
        done = subprocess.run(base, capture_output=True, text=True, timeout=600, env=env)
        if done.returncode != 0:
            pytest.fail(
                "wheel build failed\n--- without isolation ---\n"
                f"{offline.stdout[-3000:]}{offline.stderr[-3000:]}\n--- with isolation ---\n"
                f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
    wheels = list(dist.glob("neardup_pipeline-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], done.stdout + done.stderr


def failing_compiler_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine without a working C/C++ compiler: every compiler name on
    PATH (and CC/CXX) exits 1, as a missing g++ makes the build's compile step fail."""
    fake = tmp_path / "no-compiler"
    fake.mkdir()
    for name in ("cc", "c++", "gcc", "g++", "clang", "clang++"):
        tool = fake / name
        tool.write_text(f"#!/bin/sh\necho '{name}: no compiler here' >&2\nexit 1\n")
        tool.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '')}",
        "CC": str(fake / "gcc"),
        "CXX": str(fake / "g++"),
    }


def install_wheel(wheel: Path, site: Path) -> None:
    """Unpack the wheel into `site` (no dependencies: the running virtualenv has them)."""
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site), str(wheel)])


def run(
    cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result
