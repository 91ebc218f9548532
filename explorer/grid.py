"""The subplot grid every page shares: panels in rows and columns as one Plotly figure dict, axes placed by hand.

make_subplots is several times slower than placing the axes ourselves, and every rerun paid for it. A grid is made in
three steps, each a function here, so a page chooses its own sizes between them:

    cells = arrange(len(panels), ncols)                         # (row, column) of each panel
    slots = place(cells, even_columns(ncols, 0.035), even_rows(rows_of(cells), 0.1))
    fig = grid_figure(slots, [Subplot([trace], x_axis={...}, y_axis={...}, title="...") ...], layout={...})

A figure may also carry a phone's layout: fig["narrow"] = narrow(phone_layout), which explorer/live_chart.js draws
where the chart is narrower than PHONE_WIDTH px (see explorer.charts.show_chart).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

# A chart narrower than this (a phone: ~366 px) is drawn with its narrow layout, when the figure has one
PHONE_WIDTH = 560
PHONE_COLUMNS = 2  # panels a row in a phone's layout: four 64x64 maps a row left ~35 px each
COLORBAR_ROW = 52  # px each flat colour bar takes below the panels: its title, the bar and its tick labels

Span = tuple[float, float]  # from, to: a domain in paper coordinates (0 at the left or bottom, 1 at the right or top)


@dataclass(frozen=True)
class Slot:
    """Where one panel of a grid sits: its row and column, its domain, and where it is among its neighbours (the
    axes name their rows once a row and their columns once a column)."""

    row: int
    col: int
    x: Span
    y: Span
    first_in_row: bool
    lowest_in_col: bool


@dataclass
class Subplot:
    """What a panel draws: its traces (put on the panel's axes by grid_figure), its axes' own settings (domain and
    anchor are added) and the title above it."""

    traces: list[dict]
    x_axis: dict = field(default_factory=dict)
    y_axis: dict = field(default_factory=dict)
    title: str = ""


def arrange(n: int, ncols: int, slots: Sequence[Sequence[int]] | None = None) -> list[tuple[int, int]]:
    """(row, column) of each of n panels: ncols a row, or as `slots` says (per row, the column slots it uses)."""
    if not n:
        return []
    rows = slots or [list(range(ncols))] * math.ceil(n / ncols)
    cells = [(r, c) for r, cols in enumerate(rows) for c in cols]
    return cells[:n]  # the last row may have more slots than panels left


def rows_of(cells: Sequence[tuple[int, int]]) -> int:
    """Rows the cells take (one for none: an empty figure still has its frame)."""
    return cells[-1][0] + 1 if cells else 1


def even_columns(ncols: int, gap: float) -> list[Span]:
    """ncols columns of one width, each inset by half the gap on both sides (a gap between two, half one at the
    edges)."""
    return [(c / ncols + gap / 2, (c + 1) / ncols - gap / 2) for c in range(ncols)]


def columns_by_width(widths: Sequence[float], gap: float, span: Span = (0.0, 1.0)) -> list[Span]:
    """Columns as wide as their share of `widths`, a gap between two, filling span: a panel of more keys is wider."""
    usable = (span[1] - span[0]) - gap * (len(widths) - 1)
    columns = []
    left = span[0]
    for width in widths:
        right = left + usable * width / sum(widths)
        columns.append((left, right))
        left = right + gap
    return columns


def even_rows(nrows: int, gap: float) -> list[Span]:
    """nrows rows of one height from the top down, a gap between two (none above the first or below the last)."""
    height = (1 - gap * (nrows - 1)) / nrows
    # the lowest row ends at 0 exactly: Plotly refuses a domain a rounding error below it
    return [(max(0.0, 1 - r * (height + gap) - height), 1 - r * (height + gap)) for r in range(nrows)]


def place(cells: Sequence[tuple[int, int]], columns: Sequence[Span], rows: Sequence[Span]) -> list[Slot]:
    """Each cell's domain, with whether it starts its row and is the lowest of its column."""
    lowest = {c: max(r for r, cc in cells if cc == c) for _, c in cells}
    first: dict[int, int] = {}
    for r, c in cells:
        first.setdefault(r, c)
    return [Slot(r, c, columns[c], rows[r], c == first[r], r == lowest[c]) for r, c in cells]


def axis_suffix(index: int) -> str:
    """Plotly's name for the index-th panel's axes: x, y for the first, then x2, y2 and on."""
    return "" if index == 0 else str(index + 1)


def panel_title(text: str, slot: Slot, font_size: int, raise_by: float = 0.0) -> dict:
    """A panel's title, centred above it (Plotly's "auto" anchor put a title left of x in the left third of the
    figure and right of it in the last)."""
    return {
        "text": text,
        "x": (slot.x[0] + slot.x[1]) / 2,
        "y": slot.y[1] + raise_by,
        "xref": "paper",
        "yref": "paper",
        "showarrow": False,
        "xanchor": "center",
        "yanchor": "bottom",
        "font": {"size": font_size},
    }


def grid_figure(
    slots: Sequence[Slot], subplots: Sequence[Subplot], *, layout: dict, title_font: int, title_raise: float = 0.0
) -> dict:
    """One figure dict of the subplots at their slots: each one's axes, its traces on them, its title above it
    (title_raise: that much higher, in paper units). layout holds the rest (height, margin, colour axes...)."""
    layout = {**layout, "annotations": list(layout.get("annotations", []))}
    data: list[dict] = []
    for index, (slot, subplot) in enumerate(zip(slots, subplots, strict=True)):
        suffix = axis_suffix(index)
        layout[f"xaxis{suffix}"] = {"domain": list(slot.x), "anchor": f"y{suffix}", **subplot.x_axis}
        layout[f"yaxis{suffix}"] = {"domain": list(slot.y), "anchor": f"x{suffix}", **subplot.y_axis}
        layout["annotations"].append(panel_title(subplot.title, slot, title_font, title_raise))
        data.extend(trace | {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"} for trace in subplot.traces)
    return {"data": data, "layout": layout}


def narrow(layout: dict, *, below: int = PHONE_WIDTH, unlabelled: bool = False) -> dict:
    """A figure's "narrow" entry: where the chart is narrower than `below` px, explorer/live_chart.js draws it with
    this layout (and, unlabelled, without its points' text labels)."""
    spec: dict = {"below": below, "layout": layout}
    if unlabelled:
        spec["unlabelled"] = True
    return spec


def with_flat_colorbars(layout: dict, coloraxes: dict[str, dict]) -> dict:
    """The layout with each colour axis's bar laid flat under the panels, one below the other, the whole width: on a
    phone a standing bar beside the panels took a quarter of the width. The bottom margin grows to hold them."""
    bars = len(coloraxes)
    room = COLORBAR_ROW * bars
    height = layout["height"] + room
    margin = {**layout["margin"], "b": layout["margin"]["b"] + room}
    flat = {
        name: {**axis, "colorbar": _flat_colorbar(axis.get("colorbar") or {}, below=bars - 1 - index, height=height)}
        for index, (name, axis) in enumerate(coloraxes.items())
    }
    return {**layout, **flat, "height": height, "margin": margin}


# A standing colour bar's placement, which a flat one sets anew
STANDING_PLACEMENT = ("x", "y", "len", "lenmode", "yanchor", "xanchor", "ypad")


def _flat_colorbar(colorbar: dict, *, below: int, height: int) -> dict:
    """colorbar laid flat across the figure, its title above it, with `below` flat bars under it (height: px). Plotly
    misplaces a flat bar's top title by the plot's height, known only in the browser: live_chart.js lifts it clear."""
    kept = {key: value for key, value in colorbar.items() if key not in STANDING_PLACEMENT}
    return {
        **kept,
        "title": {**(kept.get("title") or {}), "side": "top"},
        "orientation": "h",
        "thickness": 10,
        "x": 0.5,
        "xanchor": "center",
        "len": 1,
        "lenmode": "fraction",
        "yref": "container",
        "y": below * COLORBAR_ROW / height + 4 / height,  # from the container's bottom, 4 px clear of it
        "yanchor": "bottom",
        "ypad": 0,
    }
