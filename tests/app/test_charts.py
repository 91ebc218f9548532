"""Chart layouts: the template every chart is drawn in (explorer.charts.PLOTLY_TEMPLATE), and tick labels the browser
draws without measuring them (with_unmeasured_tick_labels); the browser side, that no text falls outside a chart, is
tests/browser/test_layout.py."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import plotly
import pytest

from explorer import i18n
from explorer.charts import chart_description, in_two_lines, with_unmeasured_tick_labels
from explorer.labels import DRAWN_AT, apart


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


def _name_box(point, position, x_range, y_range, size):
    """Where a name of `point` sits at `position`, in px, measured generously (0.6 of the font a letter)."""
    width, height, font = size
    x, y, text = point
    px = (x - x_range[0]) / (x_range[1] - x_range[0]) * width
    py = (y - y_range[0]) / (y_range[1] - y_range[0]) * height
    w, h = 0.6 * font * len(text), 1.2 * font
    ox = {"left": -1, "center": 0, "right": 1}[position.split()[1]]
    oy = {"top": 1, "middle": 0, "bottom": -1}[position.split()[0]]
    cx, cy = px + ox * (w / 2 + 9), py + oy * (h / 2 + 9)
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


def test_apart_keeps_a_lone_points_first_choice():
    assert apart([(5.0, 5.0, "MHA")], (0.0, 10.0), (0.0, 10.0), ("top left", "bottom right")) == ["top left"]


def test_apart_sets_the_names_of_close_points_where_they_do_not_meet_at_any_size():
    """Two caches a few pixels apart at the right edge (MQA and MLA at the last step): their names, both wanting the
    room above and left, end on different sides and apart at every size the charts are drawn at."""
    points = [(24.0, 10240.0, "MLA"), (24.0, 8192.0, "MQA")]
    x_range, y_range = (-1.2, 25.2), (0.0, 70000.0)
    sides = apart(points, x_range, y_range, ("top left", "bottom right", "bottom left", "middle left"))
    assert sides[0] != sides[1]
    for size in DRAWN_AT:
        a, b = (_name_box(p, s, x_range, y_range, size) for p, s in zip(points, sides, strict=True))
        assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (size, sides)


def test_apart_places_names_for_the_sizes_asked_alone():
    """A phone's plot (the lab's names at 400 px): five names in a row ~16 px apart there, which names placed for
    every size at once ran into, placed for that size alone meet no other name at it."""
    phone = (300, 260, 12)
    points = [(1.2 + 0.06 * i, 1.3, name) for i, name in enumerate(["96", "128", "192", "256", "288"])]
    x_range, y_range = (1.1, 2.2), (1.0, 4.4)
    sides = apart(points, x_range, y_range, sizes=(phone,))
    boxes = [_name_box(p, s, x_range, y_range, phone) for p, s in zip(points, sides, strict=True)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), sides


@pytest.mark.parametrize(
    ("title", "lines"),
    [
        ("整个模型的 KV 缓存（对数刻度）", "整个模型的 KV 缓存<br>（对数刻度）"),
        ("KV cache, whole model (log scale)", "KV cache, whole model<br>(log scale)"),
    ],
)
def test_a_title_breaks_before_a_bracket_rather_than_inside_a_word(title, lines):
    """Issue #47: step 8's Chinese y title broke 缓存 ("cache") in two."""
    assert in_two_lines(title) == lines
