"""The package's import structure: no cycle between modules, and a pure core without Scrapy,
Twisted or Elasticsearch."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import neardup_pipeline

PACKAGE = Path(neardup_pipeline.__file__).resolve().parent
ROOT = PACKAGE.name
CORE = ("text", "sketch", "methods", "verdict", "fingerprint")
ADAPTER_LIBRARIES = ("scrapy", "twisted", "elasticsearch", "elastic_transport")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def import_statements(
    nodes: Iterable[ast.AST], deferred: bool
) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements among `nodes` and inside them that run when the module is loaded,
    and with `deferred` also those in function bodies (they run at the first call). Imports
    under `if TYPE_CHECKING:` never run."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from import_statements(node.orelse, deferred)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not deferred:
            continue
        else:
            yield from import_statements(ast.iter_child_nodes(node), deferred)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def imports_of(name: str, path: Path, modules: dict[str, Path], deferred: bool) -> set[str]:
    """The package's modules that module `name` imports (module-level, or also deferred)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in import_statements(tree.body, deferred):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = name.split(".")
            anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            found.add(submodule if submodule in modules else base)
    return {target for target in found if target in modules and target != name}


def import_graph(deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    modules = package_modules()
    return {name: imports_of(name, path, modules, deferred) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_the_imports_it_should() -> None:
    graph = import_graph()
    assert f"{ROOT}.cli.main" in graph and f"{ROOT}.cli.commands" in graph[f"{ROOT}.cli.main"]
    assert f"{ROOT}.cli.inputs" in graph[f"{ROOT}.cli.dedup"]
    assert f"{ROOT}.errors" in graph[f"{ROOT}.cli.inputs"]


def test_cycles_are_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_import_cycle_hidden_in_a_function() -> None:
    """An import moved into a function body breaks a cycle at load time, not in the design."""
    found = cycles(import_graph(deferred=True))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_core_imports_no_adapter_library() -> None:
    modules = sorted(
        name for name in package_modules()
        if name.split(".")[1:2] and name.split(".")[1] in CORE
    )
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{ADAPTER_LIBRARIES!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []
