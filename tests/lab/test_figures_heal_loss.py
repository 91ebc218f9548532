"""The live heal's loss chart: the curve fills the axis, and "before healing" sits on its line (issue #37, item 5:
Plotly's add_hline put that label, on a log axis, at the value rather than its log: far from the line, and the axis
stretched to reach it squeezed the curve to its floor)."""

from __future__ import annotations

import math

from explorer.i18n import set_language
from explorer.lab.figures import heal_loss_figure

LOSSES = [0.42, 0.2, 0.12, 0.09, 0.08, 0.075]  # a heal's mean relative error per step
FIRST = 0.9  # before any step


def layout() -> dict:
    set_language("en")
    return heal_loss_figure(LOSSES, FIRST, 61.0).to_dict()["layout"]


def test_the_before_healing_label_sits_on_its_line():
    (label,) = layout()["annotations"]
    assert label["text"] == "before healing"
    assert label["y"] == math.log10(FIRST)
    (line,) = layout()["shapes"]
    assert line["y0"] == line["y1"] == FIRST


def test_the_axis_spans_the_curve_and_the_line_and_little_more():
    low, high = layout()["yaxis"]["range"]
    assert low <= math.log10(min(LOSSES)) < math.log10(FIRST) <= high
    spanned = math.log10(FIRST) - math.log10(min(LOSSES))
    assert (high - low) <= 1.5 * spanned, "the curve takes most of the axis"
