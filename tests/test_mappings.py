"""The Elasticsearch mappings ship with the package: wheel, installed wheel and editable install."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

from neardup_pipeline.errors import MappingNotFound
from neardup_pipeline.index.elastic.mappings import load_mapping, mapping_names
from tests.wheels import (
    BUILD_INPUTS,
    PACKAGES,
    ROOT,
    build_wheel,
    failing_compiler_env,
    install_wheel,
)
from tests.wheels import run as _run

MAPPING_FILES = ["fingerprints", "fingerprints-template", "pages", "pages-template"]

CHECK = """
import json, sys
import neardup_pipeline.index.elastic.mappings as m
names = ["fingerprints", "fingerprints-template", "pages", "pages-template"]
from importlib.metadata import distribution
direct_url = distribution("neardup-pipeline").read_text("direct_url.json") or "{}"
loaded = {n: m.load_mapping(n) for n in names}
print(json.dumps({"file": m.__file__, "loaded": loaded, "direct_url": direct_url}))
"""


def test_load_mapping_finds_every_file() -> None:
    assert set(MAPPING_FILES) <= set(mapping_names())
    for name in MAPPING_FILES:
        assert load_mapping(name) == load_mapping(f"{name}.json")
        assert load_mapping(name) == json.loads((ROOT / "es_mappings" / f"{name}.json").read_text())
    with pytest.raises(MappingNotFound):
        load_mapping("no-such-mapping")
    with pytest.raises(MappingNotFound):
        load_mapping("../pyproject")


@pytest.mark.parametrize("name", ["fingerprints", "pages"])
def test_templates_carry_the_index_mappings(name: str) -> None:
    """One mapping, two files: the template must never drift from the index body."""
    body = load_mapping(name)
    template = load_mapping(f"{name}-template")
    assert template["template"]["mappings"] == body["mappings"]
    assert template["template"]["settings"] == body["settings"]
    assert template["index_patterns"] == [f"neardup-{name}*"]
    assert isinstance(template["version"], int)


def test_mappings_use_only_core_features() -> None:
    """The integ-test-zip server has no analysis-common and no unsigned_long."""
    text = json.dumps([load_mapping(name) for name in MAPPING_FILES])
    assert "unsigned_long" not in text
    analyzers = {
        field["analyzer"]
        for name in ("fingerprints", "pages")
        for field in load_mapping(name)["mappings"]["properties"].values()
        if "analyzer" in field
    }
    assert analyzers <= {"standard"}


def test_editable_install_finds_mappings(tmp_path: Path) -> None:
    """Run from elsewhere (not the checkout) so only the installed project can answer."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = _run([sys.executable, "-c", CHECK], cwd=tmp_path, env=env)
    found = json.loads(result.stdout.splitlines()[-1])
    direct_url = json.loads(found["direct_url"])
    assert direct_url["dir_info"].get("editable") is True, direct_url
    assert Path(found["file"]).resolve().parent == ROOT / "neardup_pipeline" / "index" / "elastic"
    for name in MAPPING_FILES:
        assert found["loaded"][name] == load_mapping(name)


@pytest.mark.integration  # builds the wheel in a subprocess
def test_wheel_carries_mappings_and_every_module(tmp_path: Path) -> None:
    # What this checks is the package data, not the compiled modules: without a compiler the
    # build takes seconds (tests/test_fallbacks.py checks that such a wheel works).
    wheel, _ = build_wheel(tmp_path, env=failing_compiler_env(tmp_path))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for name in MAPPING_FILES:
            inside = f"neardup_pipeline/es_mappings/{name}.json"
            assert inside in names
            assert archive.read(inside) == (ROOT / "es_mappings" / f"{name}.json").read_bytes()
    # The only top-level package: the example project in crawler/ is not installed.
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {
        "neardup_pipeline"
    }
    # pyproject lists packages explicitly (to map es_mappings/): a forgotten one shows up here.
    for package in PACKAGES:
        for module in (ROOT / package).rglob("*.py"):
            if "__pycache__" not in module.parts:
                assert module.relative_to(ROOT).as_posix() in names, (
                    f"{module.relative_to(ROOT)} is missing from the wheel: add its package to "
                    "[tool.setuptools] packages in pyproject.toml"
                )
    # Build inputs stay out: the .pyx, the C/C++ Cython generates, the header; stubs stay in.
    assert not [name for name in names if name.endswith(BUILD_INPUTS)]
    for stub in (ROOT / "neardup_pipeline").rglob("*.pyi"):
        assert stub.relative_to(ROOT).as_posix() in names

    # Installed from the wheel (no source tree beside it), load_mapping reads the package data.
    site = tmp_path / "site"
    install_wheel(wheel, site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = _run([sys.executable, "-c", CHECK], cwd=tmp_path, env=env)
    found = json.loads(result.stdout.splitlines()[-1])
    assert Path(found["file"]).resolve().is_relative_to(site.resolve())
    assert not (site / "es_mappings").exists()  # inside the package, not a top-level folder
    for name in MAPPING_FILES:
        assert found["loaded"][name] == load_mapping(name)
