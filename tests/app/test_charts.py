"""Chart layouts: the template every chart is drawn in (explorer.charts.PLOTLY_TEMPLATE), and tick labels the browser
draws without measuring them (with_unmeasured_tick_labels); the browser side, that no text falls outside a chart, is
tests/browser/test_layout.py."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import plotly

from explorer import i18n
from explorer.charts import chart_description, with_unmeasured_tick_labels


def test_every_axis_gets_unmeasured_tick_labels_unless_the_chart_says_otherwise():
    layout = {"xaxis": {"title": {"text": "x"}}, "yaxis3": {"ticklabeloverflow": "hide past domain"}, "height": 300}
    before = copy.deepcopy(layout)
    shown = with_unmeasured_tick_labels(layout)
    assert layout == before  # figures are cached: the input is never changed
    assert shown["xaxis"]["ticklabeloverflow"] == shown["yaxis"]["ticklabeloverflow"] == "allow"
    assert shown["yaxis3"]["ticklabeloverflow"] == "hide past domain"  # a chart's own choice stays
    assert shown["xaxis"]["title"] == {"text": "x"}
    assert shown["height"] == 300


def test_the_chart_template_is_valid_plotly_in_the_apps_theme_colours():
    import tomllib
    from pathlib import Path

    import plotly.graph_objects as go

    from explorer.charts import PLOTLY_TEMPLATE

    theme = tomllib.loads((Path(__file__).parents[2] / ".streamlit" / "config.toml").read_text())["theme"]
    template = go.layout.Template(PLOTLY_TEMPLATE)  # raises on anything Plotly does not know
    assert template.layout.paper_bgcolor == template.layout.plot_bgcolor == theme["backgroundColor"]
    assert template.layout.title.font.color == theme["textColor"]


def test_a_charts_text_alternative_is_its_title_and_caption_in_plain_text():
    title = {"title": {"text": "KV cache <b>per token</b><br>at 64 tokens"}}
    assert chart_description(title, "MQA keeps **one** pair: `k` and $v$.") == (
        "KV cache per token at 64 tokens. MQA keeps one pair: k and v."
    )
    assert chart_description({}, "") == ""
    i18n.set_language("zh")
    try:
        assert chart_description({"title": "缓存"}, "每个词元**一**对。") == "缓存。每个词元一对。"
    finally:
        i18n.set_language("en")


def test_the_served_plotly_js_is_the_version_the_figures_are_validated_against():
    """The charts load plotly.js built with only their traces (assets/plotly-build); the figures are built and
    validated with the plotly package, whose own plotly.js must be the same release (an upgrade of one without the
    other fails here: rebuild with `make plotly`)."""

    def version(path: Path) -> str:
        match = re.search(r"plotly\.js (?:\([a-z, -]+\) )?v(\d+\.\d+\.\d+)", path.read_text(encoding="utf-8")[:400])
        assert match, path
        return match.group(1)

    served = Path(__file__).resolve().parents[2] / "assets" / "plotly" / "plotly-scatter-bar-heatmap.min.js"
    assert version(served) == version(Path(plotly.__file__).parent / "package_data" / "plotly.min.js")
