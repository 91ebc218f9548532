"""The app's shape: inside a page's package no module imports back a module that imports it (directly or through
others), so following a chart from its probe to the browser crosses each module once; and a package's __init__ holds
no names the pages read (they import the module that defines a name)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from attn_core import ConfigWarning

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


# --- a kind of layer is asked, not tested for (explorer/kinds/) ----------------------------------------------------
KINDS_ROOM = EXPLORER / "kinds"


def worded(module: str, name: str) -> bool:
    """attn_core's typed values that the app words rather than a kind of layer: its config warnings and errors."""
    value = getattr(importlib.import_module(module), name, None)
    return isinstance(value, type) and issubclass(value, ConfigWarning | BaseException)


def core_names(tree: ast.AST) -> set[str]:
    """Names a module binds to attn_core's layers, configs and caches (not its warnings and errors, nor
    attn_core.pretrained's missing-model values, which the app words): `from attn_core(.x) import Name`, and
    `attn_core` itself for `attn_core.Name`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "attn_core":
            if not node.module.startswith("attn_core.pretrained"):
                names |= {alias.asname or alias.name for alias in node.names if not worded(node.module, alias.name)}
        elif isinstance(node, ast.Import):
            names |= {alias.asname or alias.name for alias in node.names if alias.name == "attn_core"}
    return names


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(
        (isinstance(part, ast.Name) and part.id in names)
        or (isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id in names)
        for part in ast.walk(node)
    )


def type_tests(source: str) -> list[int]:
    """Lines that test a value against one of the core's classes: isinstance / issubclass, type(x) compared or used
    as a key, a match on a class pattern, a table keyed by the core's classes."""
    tree = ast.parse(source)
    names = core_names(tree)
    found = []
    for node in ast.walk(tree):
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        if call and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:  # type: ignore[union-attr]
            hit = _mentions(node.args[1], names)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.Is | ast.Eq | ast.In) for op in node.ops):
            typed = [p for p in (node.left, *node.comparators) if isinstance(p, ast.Call)]
            hit = any(isinstance(p.func, ast.Name) and p.func.id == "type" for p in typed) and _mentions(node, names)
        elif isinstance(node, ast.MatchClass):
            hit = _mentions(node.cls, names)
        elif isinstance(node, ast.Dict):
            hit = any(key is not None and _mentions(key, names) for key in node.keys)
        else:
            hit = False
        if hit:
            found.append(node.lineno)  # type: ignore[attr-defined]
    return found


def test_the_type_test_scan_finds_each_form():
    source = (
        "from attn_core import DSAConfig, GroupedQueryAttention as G\nimport attn_core\n"
        "isinstance(a, DSAConfig)\nisinstance(a, (int, G))\ntype(a) is attn_core.DSAConfig\n"
        "{DSAConfig: 1}[type(a)]\nmatch a:\n    case G():\n        pass\n"
        "isinstance(a, int)\ntype(a) is int\n"
        "from attn_core import LatentCompressesNothing\nisinstance(a, LatentCompressesNothing)\n"
    )
    assert type_tests(source) == [3, 4, 5, 6, 8]


def test_no_page_or_app_module_tests_a_value_against_the_core_s_classes():
    """What differs between kinds of layer is asked of the kind (explorer/kinds/: KINDS, a Design's .kind), so a new
    kind is a module there and its registry line, not a branch in every page."""
    found = {}
    for path in [*EXPLORER.rglob("*.py"), *(EXPLORER.parent / "pages").glob("*.py")]:
        if KINDS_ROOM in path.parents:
            continue
        if lines := type_tests(path.read_text()):
            found[str(path.relative_to(EXPLORER.parent))] = lines
    assert found == {}


# --- short functions ---------------------------------------------------------------------------------------------
MOST_LINES = 60


def long_functions() -> dict[str, int]:
    found = {}
    root = EXPLORER.parent
    for path in [*EXPLORER.rglob("*.py"), *(root / "pages").glob("*.py"), root / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MOST_LINES:
                    found[f"{path.relative_to(root)}:{node.name}"] = lines
    return found


def test_no_function_in_the_app_is_over_60_lines():
    assert long_functions() == {}


# --- the lesson reaches other pages through their public faces ----------------------------------------------------
def reached_modules(source: str, package: str) -> set[str]:
    """The modules of explorer.<package> a source imports: `from explorer.<package> import module` and
    `from explorer.<package>.module import name` (names from the package itself are its __init__: its face)."""
    modules = {path.stem for path in (EXPLORER / package).glob("*.py")} - {"__init__"}
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == f"explorer.{package}":
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"explorer.{package}."):
            found.add(node.module.split(".")[2])
    return found


def test_the_reach_scan_sees_both_import_forms():
    source = "from explorer.mapping import geometry as g, PUBLIC\nfrom explorer.mapping.hover import cache_text\n"
    assert reached_modules(source, "mapping") == {"geometry", "hover"}


# The packages of pages other than the lesson (explorer/kinds/ serves every page, as the probes do)
OTHER_PAGES = [p for p in PACKAGES if (EXPLORER.parent / "pages" / f"{p.name}.py").exists() and p.name != "lesson"]


@pytest.mark.parametrize("package", OTHER_PAGES, ids=lambda p: p.name)
def test_the_lesson_reaches_a_page_only_through_its_public_modules(package):
    """Each page package names its public face (PUBLIC in its __init__); the lesson (explorer/lesson/, pages/lesson.py)
    imports no other module of it, so a page's own helpers can change without the lesson noticing."""
    public = importlib.import_module(f"explorer.{package.name}").PUBLIC
    assert set(public) <= {path.stem for path in package.glob("*.py")}, "PUBLIC names a module that is not there"
    lesson = [*(EXPLORER / "lesson").glob("*.py"), EXPLORER.parent / "pages" / "lesson.py"]
    reached = {path.name: reached_modules(path.read_text(), package.name) - set(public) for path in lesson}
    assert {name: sorted(found) for name, found in reached.items() if found} == {}
