"""A key press never moves a chart or a control: a sidebar setting one step on, every keyed element of the page (each
chart, CSV button and view control) is where it was. Streamlit hides a keyed element that a rerun has moved until the
rerun reaches it (the chart vanishes for a moment, the page jumps, and the chart is laid out anew), so what a run may
or may not show goes into one place of the page (explorer.charts.fixed_place)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from explorer.pages import PAGES
from explorer.settings import BATCH_CHOICES, D_MODEL_CHOICES, LATENT_CHOICES, SEQ_LEN_CHOICES, Settings

from .helpers import open_page

DEFAULT = Settings()


def one_step(name: str, choices: tuple) -> Settings:
    value = getattr(DEFAULT, name)
    return replace(DEFAULT, **{name: choices[choices.index(value) + 1]})


# One press on each sidebar slider that can change what a page shows (at 96 tokens the heatmaps page pools its cells
# and says so; at 16 heads it shows a page of them and says so).
PRESSES = {
    "seq_len": one_step("seq_len", SEQ_LEN_CHOICES),
    "d_model": one_step("d_model", D_MODEL_CHOICES),
    "latent": one_step("latent", LATENT_CHOICES),
    "batch": one_step("batch", BATCH_CHOICES),
    "heads": replace(DEFAULT, heads=2 * DEFAULT.heads),
}


def keyed_places(at) -> dict[str, tuple[int, ...]]:
    """Element id -> its place (indices down the page's blocks), for every element the script gave a key."""
    places = {}

    def walk(node, path: tuple[int, ...]) -> None:
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for index, child in children.items():
                walk(child, (*path, index))
            return
        element_id = getattr(getattr(node, "proto", None), "id", "")
        if element_id and not element_id.endswith("-None"):  # Streamlit's id ends with the key, or "None"
            places[element_id.split("-", 2)[-1]] = path  # "$$ID-<hash>-<key>"

    walk(at.main, ())
    return places


@pytest.mark.parametrize(
    ("page", "setting"),
    [(page, setting) for page, entry in PAGES.items() for setting in PRESSES if setting in entry.uses],
)
def test_a_press_on_a_sidebar_slider_keeps_every_chart_and_control_in_its_place(page, setting):
    before = keyed_places(open_page(page, DEFAULT.to_link()))
    after = keyed_places(open_page(page, PRESSES[setting].to_link()))
    assert any(key.startswith("chart_") for key in before), "the page's charts are keyed"
    moved = {key: (before[key], after[key]) for key in before.keys() & after.keys() if before[key] != after[key]}
    assert not moved, f"moved by a press on {setting}: {moved}"
