"""The rules of the house, checked: layers that only import downward, no import cycle, nothing
below the plugin imports pytest, small modules, and the viewer's assets as package files."""

from __future__ import annotations

import ast
import importlib.resources
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_rollout"
ROOT = PACKAGE.name

#: Bottom to top, one folder (or top-level module) a layer: a module may import from its
#: own layer or one below it.
LAYERS = (
    "errors",
    "safety",
    "format",
    "diff",
    "replay",
    "sdk",
    "analysis",
    "otel",
    "store",
    "session",
    "view",
    "cli",
    "plugin",
    "__main__",
)


def _name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.ImportFrom | ast.Import, package: str) -> list[str]:
    """The dotted names an import statement reaches, one for each name it imports:
    ``from . import x`` reaches ``<package>.x``, ``from .x import f`` reaches
    ``<package>.x.f``, ``import pytest_rollout.diff.compare`` reaches that module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - (node.level - 1)])
        target = ".".join([base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    return [f"{target}.{alias.name}" for alias in node.names]


def imports_of(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module under ``package`` and the modules of it that it imports: relative or
    absolute, at any level of the file, ``TYPE_CHECKING`` ones included."""
    modules = {_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                # The module each name is or lives in.
                for reached in _imported(node, own):
                    module = reached
                    while module and module not in modules:
                        module = module.rpartition(".")[0]
                    found.add(module)
        graph[name] = {m for m in found if m and m not in (name, package.name)}
    return graph


def _layer(module: str) -> int:
    top = module.split(".")[1]
    return LAYERS.index(top)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``module -> target`` for each import of a layer above the module's own."""
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if module.count(".")
        for target in sorted(targets)
        if target.count(".") and _layer(target) > _layer(module)
    ]


def test_every_folder_is_a_layer_of_its_own() -> None:
    tops = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    tops |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert tops == set(LAYERS)


def test_no_layer_imports_a_layer_above_it() -> None:
    assert upward_imports(imports_of()) == []


def test_an_upward_import_is_found_however_it_is_written(tmp_path: Path) -> None:
    """The check itself: an arrow up is caught written absolutely, relatively, as a
    ``from . import`` of a module, and under ``TYPE_CHECKING``."""
    package = tmp_path / ROOT
    for folder in ("format", "diff", "session"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "session" / "engine.py").write_text("")
    (package / "diff" / "compare.py").write_text(f"import {ROOT}.session.engine\n")
    (package / "format" / "loader.py").write_text(f"from {ROOT}.diff import compare\n")
    (package / "format" / "recorder.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..session import engine\n"
    )
    (package / "format" / "lines.py").write_text("from .. import diff\n")
    (package / "session" / "rollout.py").write_text(f"from {ROOT}.format.loader import x\n")
    assert upward_imports(imports_of(package)) == [
        f"{ROOT}.diff.compare -> {ROOT}.session.engine",
        f"{ROOT}.format.lines -> {ROOT}.diff",
        f"{ROOT}.format.loader -> {ROOT}.diff.compare",
        f"{ROOT}.format.recorder -> {ROOT}.session.engine",
    ]


def test_there_is_no_import_cycle() -> None:
    graph = imports_of()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        for target in sorted(graph[module]):
            cycle = visit(target, (*path, module))
            if cycle:
                return cycle
        done.add(module)
        return []

    cycles = [c for m in sorted(graph) if (c := visit(m, ()))]
    assert cycles == []


def test_only_the_plugin_imports_pytest() -> None:
    importers = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "plugin":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n.split(".")[0] in ("pytest", "_pytest") for n in names):
                importers.append(_name(path))
    assert importers == []


def test_modules_and_functions_stay_small() -> None:
    too_big = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 600:
            too_big.append(f"{_name(path)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 80:
                    too_big.append(f"{_name(path)}.{node.name}: {length} lines")
    assert too_big == []


def test_the_viewer_script_and_style_are_package_files() -> None:
    assets = importlib.resources.files("pytest_rollout.view")
    for name in ("viewer.js", "viewer.css"):
        source = (assets / name).read_text(encoding="utf-8")
        longest = max(source.splitlines(), key=len)
        # Read and linted as what they are: no Python module carries their text.
        holders = [
            _name(path)
            for path in PACKAGE.rglob("*.py")
            if longest in path.read_text(encoding="utf-8")
        ]
        assert holders == [], name
