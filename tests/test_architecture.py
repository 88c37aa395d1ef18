"""The rules of the house, checked: layers that only import downward, no import cycle, nothing
below the plugin imports pytest, small modules, and the viewer's assets as package files."""

from __future__ import annotations

import ast
import importlib.resources
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_rollout"

#: Bottom to top: a module may import from its own layer or one below it.
LAYERS = (
    ("errors",),
    ("safety", "format"),
    ("diff",),
    ("replay",),
    ("sdk",),
    ("analysis", "otel"),
    ("session",),
    ("view",),
    ("plugin", "cli"),
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module of the package and the package modules it imports (any import, at any
    level of the file, ``TYPE_CHECKING`` ones included)."""
    modules = {_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        graph[name] = {m for m in found if m in modules and m not in (name, "pytest_rollout")}
    return graph


def _layer(module: str) -> int:
    top = module.split(".")[1]
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_no_layer_imports_a_layer_above_it() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in _imports().items()
        if module != "pytest_rollout"
        for target in targets
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_there_is_no_import_cycle() -> None:
    graph = _imports()
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
