"""Chart layouts the browser lays out in one pass (explorer.charts.laid_out_once); the browser side of it, that no
text falls outside a chart, is tests/browser/test_layout.py."""

from __future__ import annotations

import copy

from explorer.charts import laid_out_once


def test_every_axis_gets_fixed_margins_and_unmeasured_tick_labels_unless_the_chart_says_otherwise():
    layout = {"xaxis": {"title": {"text": "x"}}, "yaxis3": {"automargin": True}, "height": 300}
    before = copy.deepcopy(layout)
    shown = laid_out_once(layout)
    assert layout == before  # figures are cached: the input is never changed
    for name in ("xaxis", "yaxis", "yaxis3"):
        assert shown[name]["ticklabeloverflow"] == "allow"
    assert shown["xaxis"]["automargin"] is False and shown["yaxis"]["automargin"] is False
    assert shown["yaxis3"]["automargin"] is True  # a chart that asks for Plotly's margins keeps them
    assert shown["xaxis"]["title"] == {"text": "x"} and shown["height"] == 300
