"""The URL is the view: a link reproduces its settings, the sidebar writes back to the URL, bad links are repaired."""

from __future__ import annotations

from dataclasses import replace

import pytest

from explorer.axes import link as axes_link
from explorer.heatmaps import link as heatmaps_link
from explorer.lab import link as lab_link
from explorer.pages import PAGES
from explorer.settings import LINK_NAMES, LINK_VERSION, VERSION_NAME, Settings, version_note
from explorer.trained import link as trained_link
from tests.app.helpers import no_exception

from .helpers import is_valid, link_warnings, open_page, sidebar_settings

LINKED = Settings(
    variants=("mqa", "mla"),
    d_model=1024,
    heads=16,
    groups=4,
    latent=256,
    rope_dim=16,
    seq_len=128,
    batch=2,
    dtype="float16",
    seed=7,
)
SMALL = Settings(d_model=64, heads=4, groups=2, latent=16, rope_dim=8, seq_len=8)  # quick to render on every page


def shared_params(at) -> dict[str, str]:
    return {name: at.query_params.get(name) for name in (*LINK_NAMES, VERSION_NAME)}


@pytest.mark.parametrize("page", PAGES)
def test_a_link_reproduces_its_settings_in_the_sidebar_and_the_url(page):
    at = open_page(page, LINKED.to_link())
    no_exception(at)
    assert link_warnings(at) == []
    assert sidebar_settings(at) == LINKED
    assert shared_params(at) == LINKED.to_link()


@pytest.mark.parametrize("page", [name for name, entry in PAGES.items() if entry.uses])  # the others draw none
def test_moving_a_sidebar_slider_updates_the_url(page):
    at = open_page(page, SMALL.to_link())
    at.sidebar.select_slider(key="setting_seq_len").set_value(16).run()
    no_exception(at)
    assert at.query_params["seq_len"] == "16"
    assert shared_params(at) == replace(SMALL, seq_len=16).to_link()


CHANGES = {  # widget kind, key, new value, the settings field it sets
    "d_model": ("select_slider", "setting_d_model", 128, {"d_model": 128}),
    "heads": ("select_slider", "setting_heads", 8, {"heads": 8}),
    "groups": ("select_slider", "setting_groups", 4, {"groups": 4}),
    "latent": ("select_slider", "setting_latent", 32, {"latent": 32}),
    "rope_dim": ("select_slider", "setting_rope_dim", 4, {"rope_dim": 4}),
    "batch": ("select_slider", "setting_batch", 8, {"batch": 8}),
    "variants": ("button_group", "setting_variants", ["gqa", "mla"], {"variants": ("gqa", "mla")}),
    "dtype": ("radio", "setting_dtype", "float32", {"dtype": "float32"}),
    "seed": ("number_input", "setting_seed", 12345, {"seed": 12345}),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_sidebar_control_writes_its_value_to_the_url(change):
    kind, key, value, fields = CHANGES[change]
    at = open_page("overview", SMALL.to_link())
    getattr(at.sidebar, kind)(key=key).set_value(value).run()
    expected = replace(SMALL, **fields)
    no_exception(at)
    assert sidebar_settings(at) == expected
    assert shared_params(at) == expected.to_link()
    assert not at.sidebar.info, "nothing else had to move"


ADJUSTMENTS = {
    # start, control moved, value, what must follow, the sentence's start
    "narrower d_model drops the head count": (
        Settings(d_model=512, heads=64, groups=2, rope_dim=8),
        "setting_d_model",
        64,
        {"d_model": 64, "heads": 32, "rope_dim": 2},
        "heads 64 → 32",
    ),
    "fewer heads drop the KV groups": (Settings(), "setting_heads", 1, {"heads": 1, "groups": 1}, "groups 2 → 1"),
    "more heads shrink the rotary width": (
        Settings(d_model=256, heads=4, rope_dim=64),
        "setting_heads",
        32,
        {"heads": 32, "rope_dim": 8},
        "rope_dim 64 → 8",
    ),
}


@pytest.mark.parametrize("case", ADJUSTMENTS)
def test_a_control_that_makes_another_invalid_moves_it_to_the_nearest_valid_value_and_says_so(case):
    start, key, value, follows, sentence = ADJUSTMENTS[case]
    at = open_page("overview", start.to_link())
    at.sidebar.select_slider(key=key).set_value(value).run()
    no_exception(at)
    expected = replace(start, **follows)
    assert sidebar_settings(at) == expected
    assert is_valid(expected)
    assert shared_params(at) == expected.to_link()
    notes = [info.value for info in at.sidebar.info]
    assert any(note.startswith(sentence) for note in notes), notes
    at.run()  # told once: the note does not linger on the next rerun
    assert not at.sidebar.info


def test_deselecting_every_variant_shows_all_four_and_says_so():
    at = open_page("overview", SMALL.to_link())
    at.sidebar.button_group(key="setting_variants").set_value([]).run()
    no_exception(at)
    assert sidebar_settings(at).variants == ("mha", "mqa", "gqa", "mla")
    assert any("No variant chosen" in info.value for info in at.sidebar.info)


GARBLED = {
    "non-number": {"d_model": "abc"},
    "decimal": {"seq_len": "12.5"},
    "too large": {"d_model": "100000"},
    "zero heads": {"heads": "0"},
    "negative seed": {"seed": "-3"},
    "huge number": {"batch": "9" * 40},
    "too many digits for int()": {"latent": "9" * 5000},
    "heads do not divide d_model": {"d_model": "64", "heads": "48"},
    "groups do not divide heads": {"heads": "8", "groups": "3"},
    "rotary wider than a head": {"d_model": "16", "heads": "8", "rope_dim": "256"},
    "unknown variant": {"variant": "mha,flash,GQA"},
    "only unknown variants": {"variant": "bert"},
    "unknown dtype": {"dtype": "int8"},
    "script tag": {"variant": "<script>alert(1)</script>", "d_model": "<img src=x onerror=alert(1)>"},
    "markdown": {"seq_len": "**64** [x](javascript:alert(1))"},
    "empty values": {"d_model": "", "variant": "", "dtype": ""},
    "repeated keys": {"d_model": ["512", "1024"]},
    "repeated keys, last one bad": {"heads": ["8", "eight"]},
    "everything at once": {
        "variant": "x,,y",
        "d_model": "-1",
        "heads": "1e9",
        "groups": " ",
        "latent": "nan",
        "rope_dim": "∞",
        "seq_len": "0x40",
        "batch": "½",
        "dtype": "<b>",
        "seed": "seed",
    },
}


@pytest.mark.parametrize("query", GARBLED.values(), ids=GARBLED.keys())
@pytest.mark.parametrize("page", PAGES)
def test_a_garbled_link_gives_one_warning_and_valid_settings(page, query):
    at = open_page(page, query)
    no_exception(at)
    assert not at.error
    warnings = link_warnings(at)
    assert len(warnings) == 1, warnings
    for markup in ("<", ">", "](", "javascript:", "**"):  # link text is echoed as plain words, never as markup
        assert markup not in warnings[0], warnings[0]
    shown = sidebar_settings(at)
    assert is_valid(shown)
    assert shared_params(at) == shown.to_link(), "the URL is repaired to what is shown"


@pytest.mark.parametrize("page", PAGES)
def test_the_repaired_link_reopens_the_same_view_without_a_warning(page):
    first = open_page(page, GARBLED["everything at once"])
    again = open_page(page, dict(first.query_params))
    assert link_warnings(again) == []
    assert sidebar_settings(again) == sidebar_settings(first)
    assert dict(again.query_params) == dict(first.query_params)


FREE_TEXT = {
    param.name
    for param in (
        trained_link.TEXT,
        trained_link.PROMPT,
        heatmaps_link.TEXT,
        lab_link.PROMPT,
        lab_link.TEXT,
        axes_link.CONFIG,
    )
}


@pytest.mark.parametrize("page", PAGES)
def test_garbled_page_controls_in_a_link_are_repaired_without_an_exception(page):
    """Whatever view controls a page binds to the link (found from its URL), garbage in them is repaired."""
    view_names = [name for name in open_page(page, SMALL.to_link()).query_params if name not in LINK_NAMES]
    query = SMALL.to_link() | {name: "<script>alert(1)</script>" for name in view_names}
    at = open_page(page, query)
    no_exception(at)
    assert len([w for w in at.warning if "<script" not in w.value]) == len(at.warning)
    repaired = dict(at.query_params)
    # free text (what a user may type, markup included) is kept as typed and shown as text; every other control
    # is repaired to one of its values
    assert all("<" not in repaired[name] for name in view_names if name not in FREE_TEXT)
    again = open_page(page, repaired)
    assert not again.warning, [w.value for w in again.warning]
    assert dict(again.query_params) == repaired


@pytest.mark.parametrize("page", [name for name in PAGES if name != "overview"])
def test_settings_carry_from_the_overview_to_each_page(page):
    """Streamlit keeps a widget's value per page; the shell must carry the sidebar over when the user changes page."""
    at = open_page("overview", LINKED.to_link())
    at.sidebar.select_slider(key="setting_seq_len").set_value(256).run()
    at.switch_page(PAGES[page].path).run()
    no_exception(at)
    assert sidebar_settings(at) == replace(LINKED, seq_len=256)
    assert shared_params(at) == replace(LINKED, seq_len=256).to_link()


# --- links made by another version --------------------------------------------------------------------------------
def infos(at) -> str:
    return " ".join(i.value for i in at.info)


def test_a_link_of_this_version_says_nothing_about_versions():
    at = open_page("overview", SMALL.to_link())
    assert at.query_params[VERSION_NAME] == str(LINK_VERSION)
    assert "version of the explorer" not in infos(at)


@pytest.mark.parametrize("page", PAGES)
def test_a_hand_written_link_without_a_version_gets_todays_numbers_and_no_note(page):
    """A teacher typing ?heads=16: no `v` is no older link (only a link carrying an older `v` is one)."""
    at = open_page(page, {"heads": "16"})
    no_exception(at)
    assert "version of the explorer" not in infos(at)
    assert sidebar_settings(at).heads == 16
    assert at.query_params[VERSION_NAME] == str(LINK_VERSION)


@pytest.mark.parametrize(("version", "said"), [("1", "an earlier version"), (str(LINK_VERSION + 1), "a newer version")])
def test_a_link_of_another_version_says_its_numbers_are_not_the_senders(version, said):
    link = {name: value for name, value in SMALL.to_link().items() if name != VERSION_NAME}
    link[VERSION_NAME] = version
    at = open_page("overview", link)
    no_exception(at)
    assert said in infos(at)
    assert "the numbers are not the ones its sender saw" in infos(at)
    assert sidebar_settings(at) == SMALL  # the settings are used as linked
    assert at.query_params[VERSION_NAME] == str(LINK_VERSION)  # and the link now shown is this version's


def test_version_notes_need_settings_in_the_link_and_survive_garbage():
    assert version_note({}) is None  # a bare address is not an old link
    assert version_note({"hm_head": ["3"]}) is None
    assert version_note({"heads": ["16"]}) is None  # typed by hand: no version, no note
    assert "is not a link version" in version_note({"seed": ["1"], VERSION_NAME: ["<b>x"]})


def test_the_switch_at_the_top_of_the_page_changes_the_language_too():
    """Phones see this one (the sidebar starts folded there); it and the sidebar's always agree."""
    at = open_page("overview", {"lang": "en"})
    at.button_group(key="setting_lang_phone").set_value("zh").run()
    no_exception(at)
    assert at.query_params["lang"] == "zh"
    assert at.title[0].value != "Overview"
    assert at.sidebar.button_group(key="setting_lang").value == "zh"
    assert at.button_group(key="setting_lang_phone").value == "zh"
