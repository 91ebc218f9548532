"""The layout engine: panels in a grid as one Plotly figure dict, axes placed by hand."""

from __future__ import annotations

import math

from explorer.charts import typed_array

from .panels import SHOW_VALUES_UP_TO, Panel

# Spacing, as fractions of the figure (Plotly's paper coordinates) or in pixels.
COLUMN_GAP = 0.035  # between two panels of a row
ROW_GAP_SHARED = 0.16  # between rows, split among them (room for the titles and tick labels of the row below)...
ROW_GAP_EACH = 0.04  # ...plus this much each
MARGINS = {"b": 45, "l": 60, "r": 20}  # px
TOP_MARGIN, TOP_MARGIN_TITLED = 60, 85  # px above the first row: its panel titles, and the figure's title if any
FRAME_HEIGHT = 70  # px a figure adds to its rows' heights (mostly margins)
TITLE_HEIGHT = 30  # px the figure's title adds
X_TITLE_ROOM = 20  # px more between rows whose panels each carry an x title
TICK_FONT = 9  # px
NARROW_X_TICKS = 3  # x tick labels at most under a narrow panel of a few positions
PANEL_TITLE_FONT, PANEL_TITLE_FONT_NARROW = 12, 10  # px; narrow: four panels a row or more (a phone's ~60 px each)
# A chart narrower than this (a phone: ~366 px) is drawn with PHONE_COLUMNS panels a row and its colour bars laid
# flat below the panels (explorer/live_chart.js picks the layout by the chart's width). Four 64x64 maps a row left
# ~35 px each beside a colour bar that took a quarter of the width (issue #28 item 10).
PHONE_WIDTH = 560
PHONE_COLUMNS = 2
PHONE_ROW_HEIGHT = 190  # px a row of two panels of ~135 px, their titles and tick labels
COLORBAR_ROW = 52  # px each flat colour bar takes below the panels: its title, the bar and its tick labels


def panels_figure(
    panels: list[Panel],
    ncols: int,
    *,
    coloraxes: dict[str, dict],
    row_height: int,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    layout_cols: list[list[int]] | None = None,
    share_x: bool = True,
) -> dict:
    """Heatmaps in a grid, as one figure dict with its axes laid out by hand (make_subplots is several times slower,
    and every rerun paid for it). layout_cols optionally gives, per row, the column slots used.

    Row labels are drawn on the first panel of each row only, and with share_x column labels only on the lowest panel
    of each column, so long token labels never run into the neighbouring panel; the hover names every cell anyway.
    """
    fig = _grid(
        panels,
        ncols,
        row_height=row_height,
        title=title,
        x_title=x_title,
        y_title=y_title,
        layout_cols=layout_cols,
        share_x=share_x,
    )
    for name, axis in coloraxes.items():
        fig["layout"][name] = axis
    if ncols > PHONE_COLUMNS:
        narrow = _grid(
            panels,
            PHONE_COLUMNS,
            row_height=PHONE_ROW_HEIGHT,
            title=title,
            x_title=x_title,
            y_title=y_title,
            layout_cols=None,
            share_x=share_x,
        )["layout"]
        fig["narrow"] = {"below": PHONE_WIDTH, "layout": with_flat_colorbars(narrow, coloraxes)}
    return fig


def with_flat_colorbars(layout: dict, coloraxes: dict[str, dict]) -> dict:
    """The layout with each colour axis's bar laid flat under the panels, one below the other, the whole width: on a
    phone a standing bar beside the panels took a quarter of the width. The bottom margin grows to hold them."""
    bars = len(coloraxes)
    room = COLORBAR_ROW * bars
    height = layout["height"] + room
    margin = {**layout["margin"], "b": layout["margin"]["b"] + room}
    flat = {}
    for index, (name, axis) in enumerate(coloraxes.items()):
        colorbar = {
            key: value
            for key, value in (axis.get("colorbar") or {}).items()
            if key not in ("x", "y", "len", "lenmode", "yanchor", "xanchor", "ypad")
        }
        title = dict(colorbar.get("title") or {})
        title["side"] = "top"
        flat[name] = {
            **axis,
            "colorbar": {
                **colorbar,
                "title": title,
                "orientation": "h",
                "thickness": 10,
                "x": 0.5,
                "xanchor": "center",
                "len": 1,
                "lenmode": "fraction",
                "yref": "container",
                "y": (bars - 1 - index) * COLORBAR_ROW / height + 4 / height,
                "yanchor": "bottom",
                "ypad": 0,
            },
        }
    return {**layout, **flat, "height": height, "margin": margin}


def _grid(
    panels: list[Panel],
    ncols: int,
    *,
    row_height: int,
    title: str,
    x_title: str,
    y_title: str,
    layout_cols: list[list[int]] | None,
    share_x: bool,
) -> dict:
    """panels_figure's grid at ncols panels a row, without colour axes."""
    slots = layout_cols or [list(range(ncols))] * math.ceil(len(panels) / ncols)
    placed: list[tuple[int, int]] = []  # (row, column) of each panel
    for r, cols in enumerate(slots):
        placed.extend((r, c) for c in cols)
    placed = placed[: len(panels)]
    lowest = {c: max(r for r, cc in placed if cc == c) for _, c in placed}
    nrows = placed[-1][0] + 1 if placed else 1
    # Three or more panels a row leave ~30-60 px each on a phone: one x title and tick labels per column ran into their
    # neighbours, so with shared columns these are drawn once, under the first column (as row labels are drawn once, on
    # the first panel of a row); the hover names every cell.
    titled = range(ncols) if ncols < 3 or not share_x else (0,)
    # Rows that each carry their own x titles (not share_x) need that much more room under them, in pixels: a title
    # under one row ran into the next row's panel titles at a projector's width
    own_titles = 0 if share_x else X_TITLE_ROOM * (nrows - 1)
    height = row_height * nrows + FRAME_HEIGHT + (TITLE_HEIGHT if title else 0) + own_titles
    gap_x, gap_y = COLUMN_GAP, ROW_GAP_SHARED / nrows + ROW_GAP_EACH + (0 if share_x else X_TITLE_ROOM / height)
    layout: dict = {
        "annotations": [],
        "height": height,
        "margin": {"t": TOP_MARGIN_TITLED if title else TOP_MARGIN, **MARGINS},
    }
    if title:
        layout["title"] = {"text": title, "font": {"size": 14}}
    data = []
    # placed holds every slot of the grid's rows: the last row may have more slots than panels left
    for index, (panel, (r, c)) in enumerate(zip(panels, placed, strict=False)):
        suffix = "" if index == 0 else str(index + 1)
        x0, x1 = c / ncols + gap_x / 2, (c + 1) / ncols - gap_x / 2
        y1 = 1 - r / nrows - (gap_y / 2 if r else 0)
        y0 = 1 - (r + 1) / nrows + (gap_y / 2 if r < nrows - 1 else 0)
        first_in_row = c == slots[r][0]
        bottom = r == lowest[c] or not share_x
        layout[f"xaxis{suffix}"] = {
            "domain": [x0, x1],
            "anchor": f"y{suffix}",
            "tickfont": {"size": TICK_FONT},
            "showticklabels": bottom and c in titled,
            "title": {"text": x_title if r == lowest[c] and c in titled else ""},
        }
        layout[f"yaxis{suffix}"] = {
            "domain": [y0, y1],
            "anchor": f"x{suffix}",
            "autorange": "reversed",
            "tickfont": {"size": TICK_FONT},
            "showticklabels": first_in_row,
            "title": {"text": y_title if first_in_row else ""},
        }
        for axis, labels in ((f"xaxis{suffix}", panel.x), (f"yaxis{suffix}", panel.y)):
            if 0 < len(labels) <= SHOW_VALUES_UP_TO and isinstance(labels[0], int):
                # a tick on every position (Plotly's own would put -0.4 … 0.4 around a single token); across narrow
                # panels (three or more a row: ~30 px each on a phone) every few positions, or the labels run together
                every = math.ceil(len(labels) / NARROW_X_TICKS) if axis.startswith("x") and ncols >= 3 else 1
                layout[axis]["dtick"] = (labels[1] - labels[0] if len(labels) > 1 else 1) * every
        layout["annotations"].append(
            {
                "text": _two_lines(panel.title) if ncols >= 3 else panel.title,
                "x": (x0 + x1) / 2,
                "y": y1,
                "xref": "paper",
                "yref": "paper",
                "showarrow": False,
                "xanchor": "center",  # Plotly's "auto" anchors a title left of x in the left third, right in the last
                "yanchor": "bottom",
                "font": {"size": PANEL_TITLE_FONT if ncols <= 3 else PANEL_TITLE_FONT_NARROW},
            }
        )
        trace = {
            "type": "heatmap",
            "z": typed_array(panel.z),
            "x": panel.x,
            "y": panel.y,
            "coloraxis": panel.coloraxis,
            "hovertemplate": panel.hover,
            "xaxis": f"x{suffix}",
            "yaxis": f"y{suffix}",
            "hoverongaps": False,
        }
        if panel.show_values:
            # No font size: Plotly fits the numbers to the cells (12 px at most), so on a phone's narrow panels they
            # shrink instead of running into each other
            trace["texttemplate"] = "%{z:.2f}"
        data.append(trace)
    return {"data": data, "layout": layout}


def _two_lines(title: str) -> str:
    """A panel title on two lines: three or more panels a row leave ~150 px each on a projector's half width or a
    phone, and one-line titles ran into each other ("MHA · head 0MQA · head 0")."""
    if "<br>" in title or title.partition(" ")[2].isdigit():
        return title  # "head 3" / "头 3" is short, and a number alone on a line reads as nothing
    for separator in (" · ", " "):
        if separator in title:
            return title.replace(separator, "<br>", 1)
    return title
