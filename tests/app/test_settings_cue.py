"""Sidebar settings that do nothing on a page are named under the sidebar, from the page's own declaration."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.pages import ALL_SETTINGS, DESIGN_SETTINGS, PAGES
from explorer.settings import Settings
from explorer.state import SETTING_LABELS, settings_cue

from .helpers import open_page


def test_every_page_declares_settings_the_sidebar_has():
    assert set(ALL_SETTINGS) | set(DESIGN_SETTINGS) == set(Settings().as_dict())
    assert set(ALL_SETTINGS) == set(SETTING_LABELS)
    for name, page in PAGES.items():
        assert set(page.uses) <= set(ALL_SETTINGS) | set(DESIGN_SETTINGS), name


def test_the_cue_names_what_is_used_and_what_is_not():
    assert settings_cue(ALL_SETTINGS) == ""  # a page that reads them all needs no cue
    assert settings_cue(()) == "This page uses none of these settings: they shape the other pages."
    cue = settings_cue(("d_model", "seed"))
    assert cue.startswith("This page uses d_model, Seed. Not used here: Variants, Query heads,")
    assert cue.endswith("Batch, Cache dtype.")


@pytest.mark.parametrize("page", ["heatmaps", "masks", "mapping"])
def test_the_sidebar_shows_the_pages_cue(page):
    at = open_page(page, Settings(d_model=64, heads=4, groups=2).to_link())
    captions = [c.value for c in at.sidebar.caption]
    cue = settings_cue(PAGES[page].uses)
    assert (cue in captions) if cue else not any(c.startswith("This page uses") for c in captions), captions


def test_each_page_names_itself_to_the_sidebar():
    """A page's cue comes from its PAGES entry, found by the key the page passes: each passes its own."""
    for name, page in PAGES.items():
        assert f'page_settings("{name}")' in (Path(__file__).resolve().parents[2] / page.path).read_text(), name


def test_the_designs_and_their_chosen_knobs_show_only_on_a_page_that_reads_them():
    link = Settings(d_model=64, heads=4, groups=2, designs=("sliding", "linear")).to_link()
    kv = open_page("kv_cache", link)
    drawn = {w.key for w in kv.sidebar.select_slider} | {w.key for w in kv.sidebar.button_group}
    assert {"setting_designs", "setting_window", "setting_sinks", "setting_state_dim"} <= drawn
    assert not {"setting_topk", "setting_rate", "setting_bits"} & drawn  # no chosen design reads them
    masks = open_page("masks", link)
    assert not any(w.key == "setting_designs" for w in masks.sidebar.button_group)
    assert not any(w.key == "setting_window" for w in masks.sidebar.select_slider)


def test_a_knob_a_page_does_not_draw_keeps_its_value_for_the_next_page():
    link = Settings(d_model=64, heads=4, groups=2, designs=("sliding",), window=64).to_link()
    at = open_page("masks", link)
    at.sidebar.select_slider(key="setting_d_model").set_value(128).run()
    assert at.query_params["window"] == "64"
    assert at.query_params["design"] == "sliding"
    assert at.query_params["d_model"] == "128"
