"""Build of the optional C++ extension (neardup_pipeline._textwalk); the rest is pyproject.toml.

The extension reads lxml's libxml2 tree in C, through lxml's public C API and the libxml2 headers
lxml ships. Without a compiler the build goes on and neardup runs its pure-Python reference of
the same walk (optional=True).
"""

from __future__ import annotations

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

extension = Extension(
    "neardup_pipeline._textwalk",
    ["neardup_pipeline/_textwalk.pyx"],
    include_dirs=lxml.get_include(),
    language="c++",
    extra_compile_args=["-O2", "-std=c++17"],
    optional=True,
)

setup(ext_modules=cythonize([extension], language_level=3, quiet=True))
