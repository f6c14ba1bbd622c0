r"""Build of the optional compiled modules; the rest of the package is in pyproject.toml.

- neardup_pipeline.text._textwalk (C++): reads libxml2's parse events (or lxml's tree) through
  lxml's public C API and the libxml2 headers lxml ships: the site chrome and the visible text.
- neardup_pipeline.text._words (C): the word tokens of a text, as re.findall(r"\w+") gives them.
- neardup_pipeline.sketch._sketch (C): Rabin shingle fingerprints and MinHash minimums, bit for bit
  the numpy code's; the minimums in AVX-512 or AVX2 lanes where the CPU has them (_minhash_lanes.h,
  chosen when the module loads; x86-64 with GCC or Clang, else the scalar loop).

Without a working compiler the build goes on: each module that does not compile is left out with
one warning line, and neardup runs the pure-Python reference of it (the same results, slower).
`cythonize` returns new Extension objects without `optional`, so OptionalBuildExt decides per
module instead (tests/test_fallbacks.py builds a wheel with a failing compiler).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

# What a missing or broken C/C++ toolchain raises while one module builds.
COMPILER_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError)


def _reason(exc: BaseException) -> str:
    """The failing compiler and its exit status, not its whole command line."""
    cause = exc.args[0] if exc.args else None
    if isinstance(cause, subprocess.CalledProcessError):
        return f"{Path(str(cause.cmd[0])).name} exited with status {cause.returncode}"
    text = str(exc).splitlines()
    return text[0][:200] if text else type(exc).__name__


class OptionalBuildExt(build_ext):
    """Build each compiled module when the toolchain can; otherwise skip it with one line."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except COMPILER_ERRORS as exc:
            print(
                f"neardup: {ext.name} not compiled ({_reason(exc)}): its pure-Python path "
                "is installed (same results, slower)",
                file=sys.stderr,
            )


extensions = [
    Extension(
        "neardup_pipeline.text._textwalk",
        ["neardup_pipeline/text/_textwalk.pyx"],
        include_dirs=lxml.get_include(),
        language="c++",
        extra_compile_args=["-O2", "-std=c++17"],
        optional=True,
    ),
    Extension(
        "neardup_pipeline.text._words",
        ["neardup_pipeline/text/_words.pyx"],
        extra_compile_args=["-O2"],
        optional=True,
    ),
    Extension(
        "neardup_pipeline.sketch._sketch",
        ["neardup_pipeline/sketch/_sketch.pyx"],
        depends=["neardup_pipeline/sketch/_minhash_lanes.h"],
        extra_compile_args=["-O3"],
        optional=True,
    ),
]

compiled = cythonize(extensions, language_level=3, quiet=True)
for extension in compiled:
    extension.optional = True  # editable installs copy only the modules that were built
setup(ext_modules=compiled, cmdclass={"build_ext": OptionalBuildExt})
