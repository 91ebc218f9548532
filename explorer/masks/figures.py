"""The page's figures: mask and weight heatmaps side by side on the shared grid (explorer/grid.py)."""

from __future__ import annotations

from explorer.charts import typed_array
from explorer.grid import Subplot, arrange, columns_by_width, even_rows, grid_figure, place
from explorer.i18n import _

MASK_SCALE = [[0.0, "#d9d9d9"], [1.0, "#2c7fb8"]]  # grey = blocked, blue = may attend

# Spacing of a figure's panels (paper coordinates) and its margins (px)
PANEL_GAP = 0.12  # room for the next panel's tick labels: at 0.08 they ran into the panel before on a phone
MARGIN = {"t": 90, "b": 40, "l": 60, "r": 20}  # the top: room for two-line panel titles under the toolbar
PANEL_TITLE_FONT = 14  # px


def heatmaps_figure(panels: list[dict], *, height: int = 360) -> dict:
    """Heatmaps side by side, each as wide as its key count. Each panel: title (in the page's language), z [rows,
    cols], x (key) and y (query) labels, kind "mask" or "weight". Laid out on the shared grid (explorer/grid.py) as a
    figure dict, shown as it is by explorer.charts.show_chart: make_subplots is much slower
    (benchmarks/MEASUREMENTS.md), and a head change redraws three of them."""
    columns = columns_by_width([max(len(p["x"]), 1) for p in panels], PANEL_GAP)
    slots = place(arrange(len(panels), len(panels)), columns, even_rows(1, 0.0))
    layout = {
        "height": height,
        "margin": dict(MARGIN),
        "coloraxis": {"colorscale": "Viridis", "cmin": 0, "colorbar": {"title": {"text": _("weight")}, "len": 0.9}},
    }
    subplots = [_mask_subplot(panel, first=index == 0) for index, panel in enumerate(panels)]
    return grid_figure(slots, subplots, layout=layout, title_font=PANEL_TITLE_FONT)


def _mask_subplot(panel: dict, *, first: bool) -> Subplot:
    """One panel: its heatmap on category axes (positions as labels), titled on two lines (side by side on a phone, a
    panel is ~150 px wide and one-line titles ran together)."""
    axis = {"type": "category", "tickfont": {"size": 9}}
    return Subplot(
        [_mask_trace(panel)],
        x_axis={**axis, "title": {"text": _("key position")}},
        # Only the first panel names its rows: on a phone a second title ran into the first panel.
        y_axis={**axis, "autorange": "reversed", "title": {"text": _("query position") if first else ""}},
        title=two_lines(panel["title"]),
    )


def _mask_trace(panel: dict) -> dict:
    """A panel's heatmap: masks in fixed grey (0, blocked) and blue (1, may attend) without a colour bar; weights on
    the figure's one colour axis, shared by its weight panels."""
    is_mask = panel["kind"] == "mask"
    hover = (
        _("query %{y}<br>key %{x}<br>%{z:.0f} (1 = may attend)")
        if is_mask
        else _("query %{y}<br>key %{x}<br>weight %{z:.4g}")
    )
    colours = (
        {"zmin": 0, "zmax": 1, "colorscale": MASK_SCALE, "showscale": False} if is_mask else {"coloraxis": "coloraxis"}
    )
    return {
        "type": "heatmap",
        "z": typed_array(panel["z"]),
        "x": [str(v) for v in panel["x"]],
        "y": [str(v) for v in panel["y"]],
        "xgap": 1,
        "ygap": 1,
        "hovertemplate": hover + f"<extra>{panel['title']}</extra>",
        **colours,
    }


def two_lines(title: str) -> str:
    """A panel title on up to two lines, broken before its parenthesis, else after its first comma, else after its
    colon (English or Chinese punctuation): side by side on a phone, a panel is ~150 px wide and one-line titles ran together."""
    for before, after in (
        (" (", "<br>("),
        ("（", "<br>（"),
        (", ", ",<br>"),
        ("，", "，<br>"),
        (": ", ":<br>"),
        ("：", "：<br>"),
    ):
        if before in title:
            return title.replace(before, after, 1)
    return title
