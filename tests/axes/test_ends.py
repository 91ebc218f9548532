"""The axes page's lines are named at their ends (not told apart by colour alone), and hiding a model through the
legend hides all it drew: its line, its dot at T, its leader and its name share its legend group."""

from __future__ import annotations

import itertools
import math

import pytest

from explorer.axes.figures import context_figure
from explorer.labels import LABEL_PX, PLOT_PX, spread
from explorer.probes.axes import published_curves


@pytest.fixture(scope="module")
def figure():
    models, _missing = published_curves()
    spec, _csv = context_figure(models, "held", 131072)
    return models, spec


def test_every_model_draws_its_line_dot_leader_and_name_in_its_own_group(figure):
    models, spec = figure
    for model in models:
        group = [t for t in spec["data"] if t.get("legendgroup") == model.name]
        dots = [t for t in group if t["mode"] == "markers"]
        names = [t for t in group if "text" in t["mode"]]
        assert len(dots) == 1, model.name
        assert dots[0]["y"] == [model.held[model.at(131072)]]
        assert [t["text"] for t in names] == [[model.name]]
        leader = next(t for t in group if t["mode"] == "lines" and "name" not in t)
        # the leader starts at the line's last point and ends at the name
        assert (leader["x"][0], leader["y"][0]) == (model.tokens[-1], model.held[-1])
        assert (leader["x"][-1], leader["y"][-1]) == (names[0]["x"][0], names[0]["y"][0])


def test_the_names_do_not_cover_each_other_and_stay_in_the_plot(figure):
    _models, spec = figure
    low, high = spec["layout"]["yaxis"]["range"]
    levels = sorted(math.log10(t["y"][0]) for t in spec["data"] if "text" in t["mode"] and "lines" in t["mode"])
    gap = LABEL_PX / PLOT_PX * (high - low)
    assert all(b - a >= gap * (1 - 1e-9) for a, b in itertools.pairwise(levels))
    assert low <= levels[0]
    assert levels[-1] <= high


@pytest.mark.parametrize(
    ("levels", "gap"),
    [([0.0, 0.0, 0.0], 1.0), ([5.0, 0.1, 0.2, 9.9], 1.0), ([1.0, 3.0, 5.0], 1.0), ([9.9, 9.95, 10.0], 2.0)],
)
def test_spread_keeps_the_order_the_gap_and_the_bounds(levels, gap):
    out = spread(levels, gap, 0.0, 10.0)
    order = sorted(range(len(levels)), key=levels.__getitem__)
    placed = [out[i] for i in order]
    assert all(b - a >= gap - 1e-9 for a, b in itertools.pairwise(placed))
    assert min(out) >= 0.0
    assert max(out) <= 10.0
    if levels == [1.0, 3.0, 5.0]:
        assert out == levels  # names with room stay at their lines' ends


def test_the_narrow_layout_ends_its_axis_where_the_lines_end(figure):
    """Issue 47: the narrow layout leaves the names out, and their leaders (from each line's last point onwards) drew a
    stub at the plot's right edge: its context axis ends at the lines' last length."""
    models, spec = figure
    _low, high = spec["narrow"]["layout"]["xaxis"]["range"]
    last = max(model.tokens[-1] for model in models)
    assert high == pytest.approx(math.log10(last))
    leaders = [t for t in spec["data"] if t["mode"] == "lines" and "name" not in t]
    assert leaders
    assert all(min(t["x"]) >= last for t in leaders), "every leader lies past the narrow axis's end"


def test_in_presenter_mode_the_names_are_spread_for_their_size_on_the_plot_they_get():
    """Issue 47: presenter mode drew the legend, 348 px of a 729-px chart. Its names keep 16 px (the chart's text
    doubles: they are given half), spread for the plot presenter mode draws (its height and margins scaled)."""
    from explorer.axes.figures import PROJECTED_NAME_PX, PROJECTED_PLOT_PX
    from explorer.present import for_projector

    models, _missing = published_curves()
    spec, _csv = context_figure(models, "held", 131072, projector=True)
    drawn = for_projector(spec)["layout"]
    margin = drawn["margin"]
    assert drawn["height"] - margin["t"] - margin["b"] == pytest.approx(PROJECTED_PLOT_PX, abs=2)
    assert drawn["showlegend"] is False
    names = [t for t in for_projector(spec)["data"] if "text" in t["mode"] and "lines" in t["mode"]]
    assert len(names) == len(models)
    assert {t["textfont"]["size"] for t in names} == {PROJECTED_NAME_PX}
    low, high = spec["layout"]["yaxis"]["range"]
    levels = sorted(math.log10(t["y"][0]) for t in names)
    gap = LABEL_PX * PROJECTED_NAME_PX / 12 / PROJECTED_PLOT_PX * (high - low)
    assert all(b - a >= gap * (1 - 1e-9) for a, b in itertools.pairwise(levels))
