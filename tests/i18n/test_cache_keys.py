"""The language is an explicit cache key: a cached function reads every argument it takes (so none is a key only,
with its words coming from elsewhere), a cached figure speaks the language it is given, and the probes never see a
language."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from explorer import i18n
from tests.i18n.visible import CJK

EXPLORER = Path(__file__).parents[2] / "explorer"
SOURCES = {path: ast.parse(path.read_text()) for path in sorted(EXPLORER.rglob("*.py"))}
FUNCTIONS = {
    node.name: node for tree in SOURCES.values() for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
}


def cached_functions() -> dict[str, ast.FunctionDef]:
    """Every function cached for the server: decorated with st.cache_data, or a probe passed to work.cached_probe."""
    found = {}
    for path, tree in SOURCES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any("cache_data" in ast.unparse(d) for d in node.decorator_list):
                found[f"{path.relative_to(EXPLORER)}:{node.name}"] = node
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "cached_probe":
                probe = ast.unparse(node.args[0])
                found[f"{path.relative_to(EXPLORER)}:cached_probe({probe})"] = FUNCTIONS[probe]
    return found


def unread_arguments(function: ast.FunctionDef) -> list[str]:
    arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
    read = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    return [argument.arg for argument in arguments if argument.arg not in read]


def test_the_scan_finds_the_cached_functions():
    names = cached_functions()
    assert "heatmaps/figures.py:heads_chart" in names
    assert "kv_cache/computed.py:cached_probe(decode_trace)" in names


@pytest.mark.parametrize(("name", "function"), cached_functions().items(), ids=list(cached_functions()))
def test_no_cached_function_takes_an_argument_it_does_not_read(name, function):
    assert unread_arguments(function) == [], f"{name} is keyed by arguments it never reads"


def test_the_probes_import_nothing_from_i18n():
    for path, tree in SOURCES.items():
        if path.parent.name != "probes":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "explorer.i18n", f"{path.name} imports the language"
                assert not (node.module == "explorer" and any(a.name == "i18n" for a in node.names)), path.name


def test_speaking_sets_the_language_for_the_block_only():
    i18n.set_language("en")
    with i18n.speaking("zh"):
        assert i18n.language() == "zh"
    assert i18n.language() == "en"


def test_a_cached_figure_speaks_the_language_it_is_given_not_the_runs():
    from explorer.mapping.fused import fused_chart
    from explorer.settings import Settings

    i18n.set_language("en")
    cfg = Settings().config("gqa")
    chinese, _rows = fused_chart(cfg, 0, 1, 4, "zh")
    english, _rows = fused_chart(cfg, 0, 1, 4, "en")
    assert CJK.search(str(chinese["layout"])) is not None
    assert CJK.search(str(english["layout"])) is None
