"""A slide's heatmap grids name every token row with room for its name (issue 47's walk: at a 1024x680 window two
rows of panels left ~12 px a row under 14 px names). The rows' heights are read off the figure as the slide draws it
(explorer.present.for_projector) and held against a name's box; tests/browser/test_layout.py checks the drawn names."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.heatmaps.figures import grid_figure, steps_figure
from explorer.heatmaps.panels import NAME_BOX, TICK_FONT
from explorer.present import MIN_TEXT_PX, SLIDE_FONT_SCALE, for_projector
from explorer.probes.heatmaps import VariantPass
from tests.heatmaps.test_page import _head_steps

TOKENS = ["cats", "eat", "fish", "dogs", "eat", "meat"]
NAME_PX = 19  # the box Chinese and English names take at 14 px, as Chromium draws them (tests/browser)
SLIDES = (342, 430)  # px: steps 1 and 2's charts at a 1024x680 window and at 1024x768


def _variant_pass(heads: int = 8, length: int = 6) -> VariantPass:
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((heads, length, length))
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    none = np.zeros((heads, length, 4), np.float32)
    return VariantPass(
        weights.astype(np.float32), none, none, none, list(range(heads)), [h // 4 for h in range(heads)],
        [0, 1], 0.5, 0.0, 1.0, None,  # no decode step: the grid reads none
    )  # fmt: skip


def _rows_px(spec: dict) -> list[float]:
    """Each panel's row height in px on the slide: its y domain's share of the plot between the margins."""
    layout = spec["layout"]
    plot = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    rows = []
    for trace, name in zip(spec["data"], sorted((k for k in layout if k.startswith("yaxis")), key=len), strict=False):
        low, high = layout[name]["domain"]
        rows.append((high - low) * plot / len(trace["y"]))
    return rows


def _figures(height: int | None) -> list[dict]:
    steps, _, _ = steps_figure(_head_steps(16), causal=True, pool="mean", tokens=TOKENS, d_k=16, slide_height=height)
    grid, _, _ = grid_figure(_variant_pass(), "gqa", 4, pool="mean", tokens=TOKENS, slide_height=height)
    return [steps, grid]


@pytest.mark.parametrize("height", SLIDES)
def test_a_slides_token_rows_are_taller_than_their_names(height):
    for figure in _figures(height):
        spec = for_projector(figure, SLIDE_FONT_SCALE, height=height)
        assert spec["layout"]["yaxis"]["tickfont"]["size"] >= MIN_TEXT_PX
        rows = _rows_px(spec)
        assert min(rows) >= NAME_PX, f"{height} px: rows of {min(rows):.1f} px under {NAME_PX} px names"


def test_a_short_slide_draws_its_panels_in_one_row_a_tall_one_in_two():
    short, tall = (_figures(height) for height in SLIDES)
    for figure in short:
        domains = {tuple(v["domain"]) for k, v in figure["layout"].items() if k.startswith("yaxis")}
        assert domains == {(0, 1)}, "one row at 1024x680"
    grid = tall[1]["layout"]
    assert len({tuple(v["domain"]) for k, v in grid.items() if k.startswith("yaxis")}) == 2, "step 2: two rows"


def test_a_pages_grid_keeps_its_layout_off_a_slide():
    """Off a slide the tick names stay Plotly's and the rows as before: three rows of steps, two of heads."""
    steps, grid = _figures(None)
    assert len({tuple(v["domain"]) for k, v in steps["layout"].items() if k.startswith("yaxis")}) == 3
    assert len({tuple(v["domain"]) for k, v in grid["layout"].items() if k.startswith("yaxis")}) == 2
    assert "ticktext" not in grid["layout"]["xaxis5"]


# A head grid a slide keeps in rows: four a row (wide panels) and eight (narrow ones, whose top margin and gaps are a
# page's). Before slide_columns read the layout panels_figure draws, it took eight a row for the wide rows' margins,
# and 16 heads on a 413 px slide drew rows of 19.6 px under a 21 px name's box.
KEPT_IN_ROWS = [(8, 4), (16, 8)]


@pytest.mark.parametrize(("heads", "group"), KEPT_IN_ROWS)
def test_a_slide_keeps_rows_only_where_its_drawn_rows_hold_a_name(heads, group):
    """slide_columns's estimate is the layout as drawn: wherever it keeps a grid in rows, every token row of the
    slide (explorer.present.for_projector) holds a name's box, to rounding."""
    name_px = max(TICK_FONT * SLIDE_FONT_SCALE, MIN_TEXT_PX) * NAME_BOX
    kept = 0
    for height in range(290, 700, 3):
        grid, _, _ = grid_figure(_variant_pass(heads), "gqa", group, pool="mean", tokens=TOKENS, slide_height=height)
        rows = {tuple(v["domain"]) for k, v in grid["layout"].items() if k.startswith("yaxis")}
        if len(rows) > 1:
            kept += 1
            drawn = min(_rows_px(for_projector(grid, SLIDE_FONT_SCALE, height=height)))
            assert drawn >= name_px - 0.5, f"{heads} heads at {height} px: rows of {drawn:.1f} px"
    assert kept, "some height keeps the rows"
