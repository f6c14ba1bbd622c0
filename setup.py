r"""Build of the optional compiled modules; the rest of the package is in pyproject.toml.

- neardup_pipeline.text._textwalk (C++): reads libxml2's parse events (or lxml's tree) through
  lxml's public C API and the libxml2 headers lxml ships: the site chrome and the visible text.
- neardup_pipeline.text._words (C): the word tokens of a text, as re.findall(r"\w+") gives them.
- neardup_pipeline.sketch._sketch (C): Rabin shingle fingerprints and MinHash minimums, bit for bit
  the numpy code's; the minimums in AVX-512 or AVX2 lanes where the CPU has them (_minhash_lanes.h,
  chosen when the module loads; x86-64 with GCC or Clang, else the scalar loop).

Without a compiler the build goes on (optional=True) and neardup runs the pure-Python reference
of each: the same results, slower.
"""

from __future__ import annotations

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

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

setup(ext_modules=cythonize(extensions, language_level=3, quiet=True))
