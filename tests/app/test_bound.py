"""explorer.link.bound: a page's own controls live in the link; a bad link value gives a warning and a valid fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.settings import Settings
from tests.app import bound_params
from tests.app.helpers import no_exception

from .helpers import LINK_WARNING, open_script, sidebar_settings

PAGE = Path(__file__).with_name("bound_page.py")
VIEW_NAMES = ("t_mode", "t_variant", "t_mask", "t_head")


def shown_values(at) -> dict[str, str]:
    """What the fixture page says it used, from its captions 't_x = value'."""
    pairs = (caption.value.split(" = ", 1) for caption in at.caption if " = " in caption.value)
    return {name: value for name, value in pairs if name in VIEW_NAMES}


def view_warnings(at) -> list[str]:
    return [w.value for w in at.warning if not w.value.startswith(LINK_WARNING)]


def test_without_view_params_the_defaults_are_used_and_written_to_the_link():
    at = open_script(PAGE)
    no_exception(at)
    assert shown_values(at) == {"t_mode": "weights", "t_variant": "gqa", "t_mask": "True", "t_head": "0"}
    assert {name: at.query_params[name] for name in VIEW_NAMES} == {
        "t_mode": "weights",
        "t_variant": "gqa",
        "t_mask": "1",
        "t_head": "0",
    }
    assert view_warnings(at) == []


def test_valid_view_params_are_reproduced_without_a_warning():
    link = {"t_mode": "scores", "t_variant": "mla", "t_mask": "0", "t_head": "5"}
    at = open_script(PAGE, link)
    no_exception(at)
    assert view_warnings(at) == []
    assert shown_values(at) == {"t_mode": "scores", "t_variant": "mla", "t_mask": "False", "t_head": "5"}
    assert {name: at.query_params[name] for name in VIEW_NAMES} == link


BAD_VALUES = {
    # name: (link text, value the page falls back to)
    "t_mode": ("heatmap", "weights"),  # Choice: not an option -> default
    "t_variant": ("mla", "gqa"),  # Choice narrowed by the settings (variants mha,gqa here): mla is not shown -> default
    "t_mask": ("maybe", "True"),  # Flag: not on/off -> default
    "t_head": ("99", "7"),  # IntRange narrowed to 0..heads-1 = 0..7: clamped
}


@pytest.mark.parametrize("name", BAD_VALUES)
def test_a_bad_view_value_gives_one_warning_and_the_fallback(name):
    text, fallback = BAD_VALUES[name]
    at = open_script(PAGE, {"variant": "mha,gqa", "heads": "8", name: text})
    no_exception(at)
    warnings = view_warnings(at)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"{name}:"), warnings
    assert shown_values(at)[name] == fallback
    assert at.query_params[name] == {"True": "1", "False": "0"}.get(fallback, fallback), "the URL holds the fallback"


@pytest.mark.parametrize(
    "text",
    ["", "   ", "<script>alert(1)</script>", "**bold** [x](javascript:alert(1))", "1e3", "-1", "٣", "0x10", "9" * 5000],
    ids=["empty", "blank", "script", "markdown", "float", "negative", "arabic-digit", "hex", "huge"],
)
def test_garbled_view_values_never_raise_and_never_echo_markup(text):
    at = open_script(PAGE, {name: text for name in VIEW_NAMES})
    no_exception(at)
    values = shown_values(at)
    assert values["t_mode"] in ("weights", "scores", "output")
    assert values["t_mask"] in ("True", "False")
    assert 0 <= int(values["t_head"]) <= Settings().heads - 1
    for warning in view_warnings(at):
        assert not set("<>[]()*`") & set(warning.split(":", 1)[1].split(" is ")[0]), warning


def test_a_repeated_view_key_is_read_once_with_a_warning_and_collapsed_in_the_url():
    at = open_script(PAGE, {"t_head": ["2", "3"]})
    no_exception(at)
    warnings = view_warnings(at)
    assert len(warnings) == 1
    assert "t_head appears 2 times" in warnings[0]
    assert shown_values(at)["t_head"] == "3"
    assert at.query_params["t_head"] == "3"  # one value, not a list


def test_changing_a_view_control_writes_the_link():
    at = open_script(PAGE)
    at.radio(key=bound_params.MODE.key).set_value("output")
    at.number_input(key=bound_params.HEAD.key).set_value(4)
    at.toggle(key=bound_params.SHOW_MASK.key).set_value(False)
    at.run()
    no_exception(at)
    assert {name: at.query_params[name] for name in ("t_mode", "t_head", "t_mask")} == {
        "t_mode": "output",
        "t_head": "4",
        "t_mask": "0",
    }


def test_a_view_value_made_invalid_by_the_settings_moves_into_range():
    """Head 7 of 8, then the sidebar goes to 2 heads: the page must not fail, and the head moves into 0..1."""
    at = open_script(PAGE, {"t_head": "7", "t_variant": "mla"})
    assert shown_values(at)["t_head"] == "7"
    at.sidebar.select_slider(key="setting_heads").set_value(2).run()
    no_exception(at)
    assert shown_values(at)["t_head"] == "1"
    assert at.query_params["t_head"] == "1"
    assert any(info.value.startswith("t_head: 7 is not available") for info in at.info), "the user is told"
    at.sidebar.button_group(key="setting_variants").set_value(["mha"]).run()
    no_exception(at)
    assert shown_values(at)["t_variant"] == "mha"
    assert at.query_params["t_variant"] == "mha"


def test_the_link_after_any_run_reopens_the_same_view_without_a_warning():
    first = open_script(PAGE, {"t_mode": "nope", "t_head": "-4", "heads": "4", "seq_len": "abc"})
    link = dict(first.query_params)
    again = open_script(PAGE, link)
    assert view_warnings(again) == []
    assert not [w for w in again.warning if w.value.startswith(LINK_WARNING)]
    assert shown_values(again) == shown_values(first)
    assert sidebar_settings(again) == sidebar_settings(first)
    assert dict(again.query_params) == link


def notes(at) -> str:
    return " ".join(info.value for info in at.info)


def test_a_default_that_does_not_fit_the_settings_moves_quietly():
    """t_variant's default (gqa) with only MHA chosen: nobody set gqa, so nobody is told it moved."""
    at = open_script(PAGE, {"variant": "mha"})
    no_exception(at)
    assert shown_values(at)["t_variant"] == "mha"
    assert "is not available" not in notes(at)
    at.sidebar.select_slider(key="setting_heads").set_value(2).run()  # head 0 (the default) is still valid
    assert "is not available" not in notes(at)


def test_a_default_made_unavailable_by_the_sidebar_moves_quietly():
    at = open_script(PAGE)
    at.sidebar.button_group(key="setting_variants").set_value(["mla"]).run()
    assert shown_values(at)["t_variant"] == "mla"
    assert "is not available" not in notes(at)


def test_a_value_the_link_carried_is_reported_when_it_moves():
    at = open_script(PAGE, {"variant": "mha", "t_variant": "gqa"})
    assert shown_values(at)["t_variant"] == "mha"
    assert any("t_variant" in warning and "gqa" in warning for warning in view_warnings(at))
