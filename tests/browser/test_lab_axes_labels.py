"""The lab's every-axis chart numbers every frontier design in the real browser at a laptop's 1400 px and on a
phone's 400 px (its narrow layout), in English and Chinese (the caption names them by number, "as on the chart"):
each number drawn clear of the other numbers, of every point, and of the frontier's line (issue 47: names struck
through by the line or lying on points; no numbers on a phone); the budget is drawn as a line."""

from __future__ import annotations

import itertools

import pytest

from explorer.lab import link
from explorer.lab.axes_points import frontier, load_points
from explorer.labels import PAD_PX

# The chart whose first trace is the frontier: its names' boxes, every point's box, and the line's vertices in px
GEOMETRY = """() => {
    const plot = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(g => g.closest('[data-testid="stMain"]') && g._fullLayout && g._fullLayout.shapes
            && g._fullLayout.shapes.some(s => s.type === 'rect' && s.xref === 'x'));
    if (!plot) return null;
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const traces = Array.from(plot.querySelectorAll('.scatterlayer .trace'));
    const names = Array.from(traces[0].querySelectorAll('.textpoint text'))
        .filter(e => (e.textContent || '').trim())
        .map(e => ({text: e.textContent, box: box(e)}));
    const points = traces.slice(1).flatMap(t => Array.from(t.querySelectorAll('.points path')).map(box));
    const origin = plot.querySelector('.draglayer .xy .nsewdrag').getBoundingClientRect();
    const xa = plot._fullLayout.xaxis, ya = plot._fullLayout.yaxis, line = plot._fullData[0];
    const vertices = line.x.map((x, i) => [origin.left + xa.l2p(Math.log10(x)), origin.top + ya.l2p(Math.log10(line.y[i]))]);
    return {names, points, vertices, left: origin.left, budget: plot._fullLayout.shapes.length};
}"""


def crosses(box, a, b) -> bool:
    """Whether the segment a-b passes through the box (sampled finely: a segment is a few hundred px at most)."""
    steps = 200
    for k in range(steps + 1):
        x, y = a[0] + (b[0] - a[0]) * k / steps, a[1] + (b[1] - a[1]) * k / steps
        if box[0] + 1 < x < box[2] - 1 and box[1] + 1 < y < box[3] - 1:
            return True
    return False


def overlap(a, b, slack: float = 1.0) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [1400, 400])  # 400: the narrow layout, its numbers placed for it
def test_every_frontier_design_is_named_clear_of_names_points_and_the_line(views, width, lang):
    found = views.read(f"lab?lang={lang}", (width, 900)).evaluate(GEOMETRY)
    assert found is not None, "the lab draws its every-axis chart with its budget line"
    names, points, vertices = found["names"], found["points"], found["vertices"]
    # every frontier design is numbered: two on one spot share one number (hence at least half as many)
    line = frontier(load_points(), link.AXES_CONTEXT.default)
    assert len(vertices) == len(line)
    assert len(line) / 2 <= len(names) <= len(line), [n["text"] for n in names]
    problems = []
    for i, name in enumerate(names):
        problems += [f"{name['text']!r} covers {o['text']!r}" for o in names[i + 1 :] if overlap(name["box"], o["box"])]
        problems += [f"{name['text']!r} lies on a point" for p in points if overlap(name["box"], p)]
        # left of the plot it runs into the y axis's tick labels ("1.5" and "2" read "1.52")
        problems += [f"{name['text']!r} is left of the plot"] if name["box"][0] < found["left"] - PAD_PX else []
        problems += [
            f"{name['text']!r} is crossed by the frontier"
            for a, b in itertools.pairwise(vertices)
            if crosses(name["box"], a, b)
        ]
    assert not problems, (width, lang, problems)


# The every-axis chart's legend entry for its first trace (the frontier): the opacity of each marker it draws (fill
# and outline, as the browser paints them) and whether it draws the line.
FRONTIER_LEGEND = """() => {
    const plot = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(g => g.closest('[data-testid="stMain"]') && g._fullLayout && g._fullLayout.shapes
            && g._fullLayout.shapes.some(s => s.type === 'rect' && s.xref === 'x'));
    if (!plot) return null;
    const entry = Array.from(plot.querySelectorAll('.legend .traces'))
        .find(e => e.querySelector('.legendtext').textContent === plot._fullData[0].name);
    const seen = e => { const s = getComputedStyle(e); const o = parseFloat(s.opacity);
        return Math.max(o * parseFloat(s.fillOpacity) * (s.fill === 'none' ? 0 : 1),
            o * parseFloat(s.strokeOpacity) * (s.stroke === 'none' ? 0 : parseFloat(s.strokeWidth) || 0)); };
    return {markers: Array.from(entry.querySelectorAll('.legendpoints path.scatterpts')).map(seen),
        line: entry.querySelectorAll('.legendlines path').length};
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_frontiers_legend_entry_is_a_line_only(views, lang):
    """Issue 47: the frontier's unseen markers (they set its names off its points) showed in the legend as a faint
    circle: Plotly draws a legend marker at least 0.2 opaque. The entry shows the line and no marker."""
    tab = views.read(f"lab?lang={lang}", (1400, 900))  # the view the test above reads
    tab.wait_for_function(f"({FRONTIER_LEGEND})() !== null", polling=100)
    legend = tab.evaluate(FRONTIER_LEGEND)
    assert legend["line"] >= 1, "the frontier's line is in the legend"
    assert all(seen < 0.01 for seen in legend["markers"]), f"markers drawn at {legend['markers']}"
