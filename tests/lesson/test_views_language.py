"""Every lesson view and numbers function is given its language and reads it: its words are in the language it is
called with, not whichever the calling thread happens to speak (a GIF drawn on a download's click, a test, a
cached value keyed by the language)."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from explorer.i18n import speaking
from explorer.lesson import after_mla_views, chapters

CALLED = {f"view {key}": view for key, view in chapters.STEP_VIEWS.items()} | {
    f"numbers {key}": numbers for key, numbers in chapters.STEP_NUMBERS.items()
}


def reads_its_language(function) -> bool:
    """Its first parameter is `lang` and its body uses that name."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    (definition,) = tree.body
    assert isinstance(definition, ast.FunctionDef)
    first = definition.args.args[0].arg if definition.args.args else None
    used = {node.id for statement in definition.body for node in ast.walk(statement) if isinstance(node, ast.Name)}
    return first == "lang" and "lang" in used


def test_the_scan_tells_a_view_that_reads_its_language_from_one_that_does_not():
    def reads(lang: str) -> str:
        return lang

    def ignores(lang: str) -> str:
        return "en"

    assert reads_its_language(reads)
    assert not reads_its_language(ignores)


@pytest.mark.parametrize("name", sorted(CALLED))
def test_every_view_reads_the_language_it_is_given(name):
    assert reads_its_language(CALLED[name]), f"{name}: {CALLED[name].__qualname__} does not read its lang"


def test_a_view_speaks_the_language_it_is_given_whatever_the_thread_speaks():
    """The second chapter's closing view, asked for Chinese from an English thread, captions in Chinese: the same
    caption as the thread speaking Chinese itself, and not the English one."""
    view = after_mla_views.published_caches
    with speaking("zh"):
        native = view("zh")
    with speaking("en"):
        english = view("en")
        asked = view("zh")
    assert asked.caption == native.caption != english.caption
