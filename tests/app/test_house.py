"""The app's shape: inside a page's package no module imports back a module that imports it (directly or through
others), so following a chart from its probe to the browser crosses each module once; and a package's __init__ holds
no names the pages read (they import the module that defines a name)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EXPLORER = Path(__file__).parents[2] / "explorer"
# The pages' packages (probes serve every page; locales is the catalog)
PACKAGES = sorted(
    path.parent for path in EXPLORER.glob("*/__init__.py") if path.parent.name not in ("locales", "probes")
)


def sibling_imports(package: Path) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (anywhere in its source)."""
    modules = {path.stem for path in package.glob("*.py")} - {"__init__"}
    graph: dict[str, set[str]] = {}
    for name in modules:
        tree = ast.parse((package / f"{name}.py").read_text())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                absolute = node.module == f"explorer.{package.name}"
                if node.level == 1 and node.module in modules:
                    found.add(node.module)
                elif node.module and node.module.startswith(f"explorer.{package.name}."):
                    found.add(node.module.rsplit(".", 1)[1])
                elif (node.level == 1 and node.module is None) or absolute:
                    found |= {alias.name for alias in node.names if alias.name in modules}
        graph[name] = found - {name}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A chain of imports that comes back to where it started, or None."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        for imported in sorted(graph.get(name, ())):
            if found := visit(imported, [*path, name]):
                return found
        done.add(name)
        return None

    for start in sorted(graph):
        if found := visit(start, []):
            return found
    return None


def test_the_scan_sees_a_package_s_imports():
    graph = sibling_imports(EXPLORER / "heatmaps")
    assert "panels" in graph["figures"]
    assert "computed" in graph["figures"]


def test_the_cycle_check_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("package", PACKAGES, ids=[package.name for package in PACKAGES])
def test_no_module_of_a_page_imports_one_that_imports_it(package):
    assert cycle(sibling_imports(package)) is None


def test_a_heatmap_s_route_from_its_probe_to_the_browser_crosses_each_module_once():
    """Each heatmaps module is imported by one sibling at most: the page's chart goes figures -> computed (the probe)
    and figures -> panels (-> explorer/grid.py), and no module is reached twice along the way."""
    graph = sibling_imports(EXPLORER / "heatmaps")
    importers = {name: sorted(other for other, imported in graph.items() if name in imported) for name in graph}
    assert {name: found for name, found in importers.items() if len(found) > 1} == {}


@pytest.mark.parametrize("package", PACKAGES, ids=[package.name for package in PACKAGES])
def test_a_page_package_s_init_re_exports_nothing_the_pages_read(package):
    """lab's __init__ keeps the names benchmarks/heal.py and lab_table.py read; the pages do not read them there."""
    for page in (EXPLORER.parent / "pages").glob("*.py"):
        tree = ast.parse(page.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == f"explorer.{package.name}":
                defined = {path.stem for path in package.glob("*.py")}
                assert {alias.name for alias in node.names} <= defined, f"{page.name} reads {package.name}'s __init__"
            if isinstance(node, ast.ImportFrom) and node.module == "explorer":
                assert package.name not in {alias.name for alias in node.names}, f"{page.name} imports the package"
