"""An install without a C/C++ compiler: the compiled modules missing, neardup runs its Python and
numpy code and gives the same texts and stored signatures.

Each case runs in a fresh interpreter where importing `_textwalk`, `_words` or `_sketch` fails
(an import hook raises ImportError, as for a module that was never built), so the fallbacks
chosen at import time are the ones exercised. One case builds and installs the wheel where every
compiler fails, as on a machine without g++.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import tomllib
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.extras import EXTRAS
from tests.corpora import postgresql_pages
from tests.crawl_harness import (
    DUPLICATES,
    PAGES,
    crawl,
    describe,
    fast_settings,
    serve_demo_site,
)
from tests.documents import ARTICLE
from tests.wheels import BUILD_INPUTS, ROOT, build_wheel, failing_compiler_env, install_wheel

COMPILED = (
    "neardup_pipeline.text._textwalk",
    "neardup_pipeline.text._words",
    "neardup_pipeline.sketch._sketch",
)
SCRIPT = """
import json, sys
blocked = set(sys.argv[2].split(",")) if sys.argv[2] else set()

class NeverBuilt:
    def find_spec(self, name, path=None, target=None):
        if name in blocked:
            raise ImportError(f"{name} was not built")
        return None

sys.meta_path.insert(0, NeverBuilt())
from neardup_pipeline import NearDupConfig
from neardup_pipeline.text import extract, walk
from neardup_pipeline.methods import minhash
from neardup_pipeline.text import normalize
from neardup_pipeline.sketch import shingles
from neardup_pipeline.fingerprint import Document, Fingerprinter

compiled = [walk.textwalk is not None, normalize._word_tokens is not None,
            minhash._sketch is not None, shingles._sketch is not None, extract.NATIVE_WALK,
            extract.walk_in_use()]
fingerprinter = Fingerprinter(NearDupConfig(methods=("simhash", "minhash", "bag")))
pages = []
for path in json.loads(sys.argv[1]):
    fp = fingerprinter.fingerprint(Document(path, html=open(path, "rb").read()))
    pages.append({"text": fp.text, "title": fp.title, "signatures": fingerprinter.encode(fp)})
print(json.dumps({"compiled": compiled, "pages": pages}))
"""


def fingerprints(
    paths: list[Path], blocked: tuple[str, ...], env: dict[str, str] | None = None
) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps([str(p) for p in paths]), ",".join(blocked)],
        capture_output=True, text=True, check=True, timeout=300, env=env,
        cwd=paths[0].parent,  # not the checkout: only the installed package can answer
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def sample_pages(tmp_path: Path) -> list[Path]:
    tmp_path.mkdir(exist_ok=True)
    paths = []
    for n, page in enumerate(postgresql_pages()[::78]):  # 20 pages of the sample
        paths.append(tmp_path / f"pg{n}.html")
        paths[-1].write_bytes(page.html)
    menu = "".join(f"<li><a href=/{i}>Section {i}</a></li>" for i in range(30))
    paths.append(tmp_path / "chrome.html")  # short page under a big menu: chrome fallbacks
    paths[-1].write_text(f"<html><body><ul>{menu}</ul><h1>Short</h1><p>{ARTICLE[:200]}</p>"
                         "</body></html>")
    return paths


def test_without_the_compiled_modules_the_same_texts_and_signatures(tmp_path: Path) -> None:
    paths = sample_pages(tmp_path)
    compiled = fingerprints(paths, ())
    fallback = fingerprints(paths, COMPILED)
    assert compiled["compiled"][:5] == [True] * 5
    assert compiled["compiled"][5].endswith(" events (C++)")
    assert fallback["compiled"] == [False] * 5 + ["Python walk (compiled walk not built)"]
    assert fallback["pages"] == compiled["pages"]
    assert all(page["text"] for page in compiled["pages"])  # type: ignore[attr-defined]


@pytest.mark.integration  # builds and installs the wheel in subprocesses
def test_a_build_without_a_compiler_installs_the_pure_python_path(tmp_path: Path) -> None:
    env = failing_compiler_env(tmp_path)
    wheel, output = build_wheel(tmp_path, env=env)
    for module in COMPILED:  # one line each says what was left out and what runs instead
        assert f"neardup: {module} not compiled (" in output, output[-3000:]
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert not [name for name in names if name.endswith((".so", ".pyd", *BUILD_INPUTS))]

    site = tmp_path / "site"
    install_wheel(wheel, site)
    paths = sample_pages(tmp_path / "pages")
    installed = {**os.environ, "PYTHONPATH": str(site)}
    fallback = fingerprints(paths, (), env=installed)
    assert fallback["compiled"] == [False] * 5 + ["Python walk (compiled walk not built)"]
    assert fallback["pages"] == fingerprints(paths, ())["pages"]


# --- footprint: the base install is the default path; the rest are extras -----------------------

# Off the default path: installed by an extra (or a benchmark), never needed by default settings.
OPTIONAL_MODULES = ("resiliparse", "htmldate", "matplotlib", "trafilatura", "lxml_html_clean")


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0].lower().replace("_", "-")
            for req in requirements}


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["project"]  # type: ignore[no-any-return]


def _third_party_imports(module: Path) -> set[str]:
    """Top-level names a module imports (at any depth), other than the standard library's and
    neardup's own."""
    names = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    own = {"neardup_pipeline", "__future__"}
    return {name for name in names if name not in sys.stdlib_module_names and name not in own}


def test_the_base_install_is_the_default_path_and_the_rest_are_extras() -> None:
    project = _pyproject()
    base = _requirement_names(project["dependencies"])
    extras = {name: _requirement_names(reqs)
              for name, reqs in project["optional-dependencies"].items()}
    assert not base & {name.replace("_", "-") for name in OPTIONAL_MODULES}, base

    # `main` installs what text/content.py imports, and the pipeline checks that extra.
    distributions = importlib.metadata.packages_distributions()
    content_imports = _third_party_imports(ROOT / "neardup_pipeline" / "text" / "content.py")
    assert content_imports, "text/content.py imports no main-content library"
    assert set(EXTRAS["main"].modules) == content_imports
    for module in content_imports:
        provided_by = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        assert provided_by & extras["main"], (module, provided_by, extras["main"])
    assert extras["dates"] == {"htmldate"} and set(EXTRAS["dates"].modules) == {"htmldate"}
    assert "matplotlib" in extras["plots"]
    # `make venv` installs `.[test]`: every extra the tests exercise.
    assert extras["main"] | extras["dates"] | extras["plots"] <= extras["test"]


@deferred_f_from_coro_f
async def test_a_default_crawl_needs_no_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in OPTIONAL_MODULES:  # as in a base install: importing them fails
        monkeypatch.setitem(sys.modules, module, None)
    with serve_demo_site(tmp_path) as site:
        result = await crawl(site, fast_settings(NEARDUP_BACKEND=f"sqlite:{tmp_path / 'fp.db'}"))
    assert set(DUPLICATES) <= set(result.dropped), describe(result)
    assert result.stats["neardup/checked"] == PAGES
    assert not result.stats.get("neardup/errors")


@pytest.mark.parametrize(
    ("setting", "value", "extra", "module"),
    [("NEARDUP_CONTENT", "main", "main", "resiliparse"),
     ("NEARDUP_CANONICAL", "best", "dates", "htmldate")],
)
@deferred_f_from_coro_f
async def test_a_setting_whose_extra_is_missing_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    setting: str, value: str, extra: str, module: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    settings = fast_settings(NEARDUP_BACKEND=f"sqlite:{tmp_path / 'fp.db'}", **{setting: value})
    with serve_demo_site(tmp_path) as site:
        try:
            result = await crawl(site, settings)
        except ConfigError as exc:
            message = str(exc)
        else:  # reported by the crawl itself: no page went through an unusable pipeline
            assert not result.came_out, describe(result)
            message = caplog.text
    assert f"pip install 'neardup-pipeline[{extra}]'" in message, message
    assert f"{module} not installed" in message
