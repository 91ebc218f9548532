"""Chart layouts the browser draws without measuring every tick label (explorer.charts.with_unmeasured_tick_labels);
the browser side of it, that no text falls outside a chart, is tests/browser/test_layout.py."""

from __future__ import annotations

import copy

from explorer.charts import with_unmeasured_tick_labels


def test_every_axis_gets_unmeasured_tick_labels_unless_the_chart_says_otherwise():
    layout = {"xaxis": {"title": {"text": "x"}}, "yaxis3": {"ticklabeloverflow": "hide past domain"}, "height": 300}
    before = copy.deepcopy(layout)
    shown = with_unmeasured_tick_labels(layout)
    assert layout == before  # figures are cached: the input is never changed
    assert shown["xaxis"]["ticklabeloverflow"] == shown["yaxis"]["ticklabeloverflow"] == "allow"
    assert shown["yaxis3"]["ticklabeloverflow"] == "hide past domain"  # a chart's own choice stays
    assert shown["xaxis"]["title"] == {"text": "x"} and shown["height"] == 300
