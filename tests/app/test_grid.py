"""The shared subplot grid (explorer/grid.py): panels placed in rows and columns, inside the figure, never on top of
each other, each with its own axes, traces and title."""

from __future__ import annotations

import itertools
import math

import plotly.graph_objects as go
import pytest

from explorer.grid import (
    COLORBAR_ROW,
    PHONE_WIDTH,
    Subplot,
    arrange,
    columns_by_width,
    even_columns,
    even_rows,
    grid_figure,
    narrow,
    place,
    rows_of,
    with_flat_colorbars,
)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return min(a[1], b[1]) - max(a[0], b[0]) > 1e-12


def grid_slots(n: int, ncols: int, slots: list[list[int]] | None = None):
    cells = arrange(n, ncols, slots)
    return place(cells, even_columns(ncols, 0.035), even_rows(rows_of(cells), 0.1))


@pytest.mark.parametrize(("n", "ncols"), [(1, 1), (2, 2), (3, 2), (5, 4), (8, 3), (16, 8), (7, 1), (9, 9)])
def test_n_panels_in_c_columns_take_ceil_n_over_c_rows(n, ncols):
    cells = arrange(n, ncols)
    assert len(cells) == n
    assert rows_of(cells) == math.ceil(n / ncols)
    assert all(0 <= c < ncols for _, c in cells)
    assert len(set(cells)) == n


@pytest.mark.parametrize(("n", "ncols"), [(1, 1), (2, 2), (3, 2), (5, 4), (8, 3), (16, 8), (7, 1)])
def test_panel_domains_stay_within_the_figure_and_do_not_overlap(n, ncols):
    slots = grid_slots(n, ncols)
    for slot in slots:
        for low, high in (slot.x, slot.y):
            assert 0 <= low < high <= 1
    for i, a in enumerate(slots):
        for b in slots[i + 1 :]:
            assert not (overlap(a.x, b.x) and overlap(a.y, b.y)), (a, b)


def test_rows_run_from_the_top_down_and_columns_from_the_left():
    slots = grid_slots(6, 3)
    assert [s.y[1] for s in slots[:3]] == [1.0] * 3
    assert slots[3].y[1] < slots[0].y[0]
    assert slots[0].x[1] < slots[1].x[0] < slots[1].x[1] < slots[2].x[0]


def test_slots_know_the_first_of_their_row_and_the_lowest_of_their_column():
    slots = grid_slots(5, 3)  # a row of 3, then 2
    assert [s.first_in_row for s in slots] == [True, False, False, True, False]
    assert [s.lowest_in_col for s in slots] == [False, False, True, True, True]


def test_a_grid_may_use_some_column_slots_of_a_row():
    cells = arrange(8, 3, [[0, 1, 2], [0, 1, 2], [0, 1]])
    assert cells[-2:] == [(2, 0), (2, 1)]
    assert rows_of(cells) == 3
    assert arrange(0, 3) == []


def test_columns_by_width_share_the_span_in_proportion():
    columns = columns_by_width([1, 3], 0.1)
    assert columns[0][0] == 0.0
    assert columns[1][1] == pytest.approx(1.0)
    assert columns[1][0] - columns[0][1] == pytest.approx(0.1)
    assert (columns[1][1] - columns[1][0]) == pytest.approx(3 * (columns[0][1] - columns[0][0]))
    inside = columns_by_width([1, 1], 0.08, span=(0.0, 0.96))
    assert inside[1][1] == pytest.approx(0.96)
    assert not overlap(*inside)


def test_a_figure_gives_each_subplot_its_axes_traces_and_title():
    slots = grid_slots(3, 2)
    subplots = [
        Subplot([{"type": "heatmap", "z": [[i, 1], [2, 3]]}], x_axis={"title": {"text": "key"}}, title=f"panel {i}")
        for i in range(3)
    ]
    fig = grid_figure(slots, subplots, layout={"height": 300, "annotations": [{"text": "kept"}]}, title_font=12)
    layout = fig["layout"]
    assert [t["xaxis"] for t in fig["data"]] == ["x", "x2", "x3"]
    assert [t["yaxis"] for t in fig["data"]] == ["y", "y2", "y3"]
    assert layout["xaxis2"]["anchor"] == "y2"
    assert layout["yaxis3"]["anchor"] == "x3"
    assert layout["xaxis3"]["domain"] == list(slots[2].x)
    assert layout["xaxis"]["title"] == {"text": "key"}
    assert [a["text"] for a in layout["annotations"]] == ["kept", "panel 0", "panel 1", "panel 2"]
    assert layout["annotations"][1]["y"] == slots[0].y[1]
    go.Figure(fig)  # valid for Plotly


def test_a_phone_layout_lays_colour_bars_flat_below_the_panels():
    layout = {"height": 400, "margin": {"t": 60, "b": 45}}
    axes = {
        "coloraxis": {"colorscale": "Blues", "colorbar": {"title": {"text": "w"}, "x": 1.02, "len": 90}},
        "coloraxis2": {"colorscale": "RdBu"},
    }
    flat = with_flat_colorbars(layout, axes)
    assert flat["height"] == 400 + 2 * COLORBAR_ROW
    assert flat["margin"]["b"] == 45 + 2 * COLORBAR_ROW
    first, second = flat["coloraxis"]["colorbar"], flat["coloraxis2"]["colorbar"]
    assert first["orientation"] == second["orientation"] == "h"
    assert first["title"] == {"text": "w", "side": "top"}
    assert first["x"] == 0.5
    assert first["len"] == 1
    assert first["y"] > second["y"] > 0  # the first above the second, both above the figure's bottom
    spec = narrow(flat)
    assert spec == {"below": PHONE_WIDTH, "layout": flat}
    assert narrow(flat, below=400, unlabelled=True)["unlabelled"] is True


@pytest.mark.parametrize("nrows", [1, 2, 3, 8])
def test_rows_are_equally_tall_and_fill_the_figure_between_their_gaps(nrows):
    rows = even_rows(nrows, 0.05)
    heights = [top - bottom for bottom, top in rows]
    assert max(heights) - min(heights) < 1e-12
    assert rows[0][1] == pytest.approx(1.0)
    assert rows[-1][0] == pytest.approx(0.0, abs=1e-12)
    assert all(upper[0] - lower[1] == pytest.approx(0.05) for upper, lower in itertools.pairwise(rows))
