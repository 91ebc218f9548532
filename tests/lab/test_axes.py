"""The trade-off across every axis: the points are the stored tables' rows, the frontier and the budget's claim are
recomputed by brute force from the points drawn, and a window's saving grows with the context as its table says."""

from __future__ import annotations

import json
import math

import pytest

from explorer.lab import axes_figures, axes_points, axes_text
from explorer.lab import link as lab_link
from explorer.labels import TEXT_OFFSETS
from tests.app.helpers import chart_specs, no_exception, open_page


@pytest.fixture(scope="module")
def points():
    return axes_points.load_points()


def beaten(point, points, context):
    """Some other design has a cache as small or smaller and is less hurt, or is as hurt with a smaller cache."""
    size, hurt = point.bytes_per_token(context), point.times_original
    return any(
        (other.bytes_per_token(context) <= size and other.times_original < hurt)
        or (other.bytes_per_token(context) < size and other.times_original <= hurt)
        for other in points
        if other is not point
    )


def test_every_axis_has_stored_designs(points):
    assert {p.axis for p in points} == set(axes_points.AXES)
    assert len({p.key for p in points}) == len(points)  # each design once


@pytest.mark.parametrize("context", lab_link.AXES_CONTEXT.options)
def test_the_frontier_is_exactly_the_designs_nothing_beats(points, context):
    line = axes_points.frontier(points, context)
    assert {p.key for p in line} == {p.key for p in points if not beaten(p, points, context)}


@pytest.mark.parametrize("context", lab_link.AXES_CONTEXT.options)
@pytest.mark.parametrize("share", lab_link.AXES_BUDGET.options)
def test_the_budgets_least_hurt_cut_is_the_least_hurt_design_that_fits(points, context, share):
    limit = share / 100 * axes_points.original_point(points).bytes_per_token(context)
    fits = [p for p in points if p.bytes_per_token(context) <= limit]
    budget = axes_points.within_budget(points, context, share / 100)
    if not fits:
        assert budget.best is None
        return
    assert budget.best.times_original == min(p.times_original for p in fits)
    for axis, best in budget.best_by_axis.items():
        assert best.times_original == min(p.times_original for p in fits if p.axis == axis)
    claim = axes_text.budget_findings(points, budget)[0]
    assert axes_text.point_name(budget.best) in claim
    assert f"×{budget.best.times_original:,.2f}" in claim


def test_a_windows_share_of_the_cache_falls_with_the_context_as_its_table_says(points):
    """Window 128 without sinks holds its last 127 tokens: about a quarter of a full cache at 512 tokens, under 1 %
    at 32k; the original's cache per token is the same at every context."""
    window = next(p for p in points if p.key == "w128-s0-every")
    original = axes_points.original_point(points)
    assert window.bytes_per_token(512) / original.bytes_per_token(512) == pytest.approx(127 / 512)
    assert window.bytes_per_token(32768) / original.bytes_per_token(32768) < 0.01
    assert original.bytes_per_token(512) == original.bytes_per_token(32768)


def test_each_point_is_against_the_original_on_its_own_pieces(points):
    tables = {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in (axes_points.WINDOW_TABLE_PATH, axes_points.CACHE_BITS_TABLE_PATH)
    }
    for point in points:
        if point.table in tables:
            table = tables[point.table]
            assert point.piece == table["evaluation"]["window"]
            assert point.original_perplexity == next(r for r in table["rows"] if r["key"] == "original")["perplexity"]
    note = axes_text.evaluation_note(points)
    for piece in {p.piece for p in points}:
        assert f"{piece:,}" in note


def test_the_chart_draws_every_design_and_names_the_frontier(points):
    at = open_page("lab", {lab_link.AXES_CONTEXT.name: "32768", lab_link.AXES_BUDGET.name: "10"})
    no_exception(at, nor_error=True)
    spec = next(s for s in chart_specs(at) if s["data"][0].get("name") == "frontier")
    designs = [t for t in spec["data"][1:] if t["mode"] == "markers"]  # not the budget's line
    drawn = [(x, y) for trace in designs for x, y in zip(trace["x"], trace["y"], strict=True)]
    assert sorted(drawn) == pytest.approx(
        sorted((p.bytes_per_token(32768) / 1024, min(p.times_original, axes_figures.TOP)) for p in points)
    )
    line = axes_points.frontier(points, 32768)
    assert spec["data"][0]["x"] == pytest.approx([p.bytes_per_token(32768) / 1024 for p in line])
    # every frontier design numbered, from the smallest cache; two on one spot (a window with 1 or 4 sinks) share
    # the first's number, and the caption names each design after its number
    numbers = axes_figures.frontier_numbers(line, 32768)
    spots = [(math.log10(p.bytes_per_token(32768)), math.log10(min(p.times_original, axes_figures.TOP))) for p in line]
    for i, (x, y) in enumerate(spots):
        shared = [j for j in range(i) if abs(x - spots[j][0]) < 0.08 and abs(y - spots[j][1]) < 0.03]
        assert numbers[i] == (numbers[shared[0]] if shared else max(numbers[:i], default=0) + 1)
    drawn_numbers = [t.removeprefix("<b>").removesuffix("</b>") for t in spec["data"][0]["text"]]
    assert [t for t in drawn_numbers if t] == [str(n) for n in sorted(set(numbers))]
    (key,) = [c.value for c in at.caption if "numbered as on the chart" in c.value]
    listed = key[key.index("numbered as on the chart") :]
    for number in sorted(set(numbers)):
        after = listed[listed.index(f"**{number}**: ") :]
        for point, n in zip(line, numbers, strict=True):
            if n == number:  # named after its number, before the next number
                assert axes_text.point_name(point) in after.split(f"**{number + 1}**: ")[0], point.key
    budget = axes_points.within_budget(points, 32768, 0.10)
    # the budget drawn: a line at its cache per token, the designs past it shaded
    (mark,) = [t for t in spec["data"] if t.get("name") == "budget 10%"]
    assert mark["x"] == pytest.approx([budget.bytes_per_token / 1024] * 2)
    (shade,) = spec["layout"]["shapes"]
    assert shade["x0"] == pytest.approx(budget.bytes_per_token / 1024)
    assert budget.bytes_per_token == pytest.approx(0.10 * axes_points.original_point(points).bytes_per_token(32768))
    assert any(axes_text.budget_findings(points, budget)[0] in c.value for c in at.caption)


@pytest.mark.parametrize("context", [512, 8192, 32768])
def test_the_narrow_layout_numbers_the_frontier_as_the_caption_says(points, context):
    """Issue 47: the caption says "numbered as on the chart" at every width, and the chart's narrow layout (a phone,
    a laptop's column under NAMES_FIT_PX) drew no numbers. It keeps them, each placed for the narrow plots."""
    line = axes_points.frontier(points, context)
    numbers = axes_figures.frontier_numbers(line, context)
    spec = axes_figures.axes_figure(points, context, numbers)
    narrow = spec["narrow"]
    assert not narrow.get("unlabelled")
    drawn = [t.removeprefix("<b>").removesuffix("</b>") for t in spec["data"][0]["text"]]
    assert [t for t in drawn if t] == [str(n) for n in sorted(set(numbers))]
    (places, *rest) = narrow["textposition"]
    assert len(places) == len(line)
    assert all(p in TEXT_OFFSETS for p in places)
    assert rest == [None] * (len(spec["data"]) - 1)  # the points' traces have no text to place
    assert "numbered as on the chart" in axes_text.frontier_findings(points, context, numbers)[0]


def test_a_rerun_numbers_the_frontier_once_for_the_chart_and_its_caption(monkeypatch):
    """The chart's numbers and the caption's are one computation, passed to both (it ran once for each)."""
    calls = []
    numbered = axes_figures.frontier_numbers

    def counted(*args, **kwargs):
        calls.append(args)
        return numbered(*args, **kwargs)

    monkeypatch.setattr(axes_figures, "frontier_numbers", counted)
    at = open_page("lab", {lab_link.AXES_CONTEXT.name: "8192"})
    no_exception(at, nor_error=True)
    assert len(calls) == 1


def test_the_budget_slider_grows_to_the_right_and_the_log_axis_shows_major_ticks_only(points):
    assert list(lab_link.AXES_BUDGET.options) == sorted(lab_link.AXES_BUDGET.options)
    spec = axes_figures.axes_figure(
        points, 8192, axes_figures.frontier_numbers(axes_points.frontier(points, 8192), 8192)
    )
    ticks = spec["layout"]["xaxis"]["tickvals"]
    assert all(math.log2(t).is_integer() for t in ticks)  # powers of two of KiB, labelled as numbers
    assert spec["layout"]["xaxis"]["ticktext"] == [f"{t:g}" for t in ticks]
    low, high = spec["layout"]["xaxis"]["range"]
    assert all(low <= math.log10(t) <= high for t in ticks)
    assert len(ticks) >= 3
