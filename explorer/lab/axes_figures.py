"""The trade-off across every axis as a chart: each stored design a point, perplexity against the original's on the
same pieces (log) against its whole cache per token at the reader's context (log), coloured by the axis it cuts,
healed designs as stars, the frontier drawn and its designs named; and its numbers as CSV rows."""

from __future__ import annotations

import copy
import itertools
import math

import plotly.graph_objects as go

from explorer.i18n import _, percent
from explorer.labels import DRAWN_AT, MARKER_PX, apart

from .axes_points import AXES, AxisPoint, frontier
from .axes_text import axis_name, point_name

AXIS_COLORS = {
    "heads": "#c4573a",
    "latent": "#8a5cb8",
    "window": "#3b6ea8",
    "layers": "#2a9d8f",
    "bits": "#c48a00",
    "combined": "#333333",
}
ORIGINAL_COLOR = "#4a9a6b"
AT_1400_PX = (876, 368, 12)  # this chart's plot at 1400 px: taller than DRAWN_AT's page (its legend a row less)
TOP = 8.0  # x the original's perplexity: the chart's top; a design above it is drawn at the edge as a triangle
BOTTOM = 0.85  # x the original's perplexity at the chart's foot: room below the designs near 1 for their names
NEAR_DECADES = (0.08, 0.03)  # cache, x the original: points this close are one spot on the chart at any width
NAMES_FIT_PX = 640  # narrower than this the chart takes its narrow layout, its numbers placed for NARROW_AT
# The plots (px, font px) the narrow layout is drawn in: a phone's (400 px: ~280 x 265) and a laptop column's under
# NAMES_FIT_PX (1024 px with the sidebar open): the numbers are placed apart for them alone, as the lab's own chart's
# names are (explorer.lab.figures.PHONE_PLOT), so the caption's "numbered as on the chart" holds at every width
NARROW_AT = ((280, 265, 12), (500, 330, 12))
# decades more of cache left of the smallest design in the narrow layout: a number left of it then lies inside the
# plot (at 280 px its number ran against the y axis's tick labels: "1.5" and "2" read "1.52")
NARROW_LEFT_ROOM = 0.25


def _y(point: AxisPoint) -> float:
    return min(point.times_original, TOP)


def _symbol(point: AxisPoint) -> str:
    if point.times_original > TOP:
        return "triangle-up"
    return "star" if point.healed else "circle"


LINE_STEP = 0.04  # decades between the frontier line's stand-in points (a marker's width): a name off them is off it
NEAR = (1.0, 0.25)  # decades (x, y) from a named point beyond which nothing can touch its name: left out, for speed


def frontier_numbers(line: list[AxisPoint], context: int) -> list[int]:
    """Each frontier design's number on the chart, from the smallest cache: two designs on nearly one spot (a window
    with one or four kept first tokens) share the first's number."""
    spots = [(math.log10(p.bytes_per_token(context) / 1024), math.log10(_y(p))) for p in line]
    numbers: list[int] = []
    for i, (x, y) in enumerate(spots):
        near = [
            j for j in range(i) if abs(x - spots[j][0]) < NEAR_DECADES[0] and abs(y - spots[j][1]) < NEAR_DECADES[1]
        ]
        numbers.append(numbers[near[0]] if near else max(numbers, default=0) + 1)
    return numbers


def _line_points(spots: list[tuple[float, float]]) -> list[tuple[float, float, str]]:
    """Stand-ins along the frontier's segments, LINE_STEP apart: names placed clear of them are clear of the line."""
    out = []
    for (x0, y0), (x1, y1) in itertools.pairwise(spots):
        steps = max(1, int(math.hypot(x1 - x0, y1 - y0) / LINE_STEP))
        out += [(x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps, "") for k in range(1, steps)]
    return out


def frontier_labels(
    line: list[AxisPoint],
    others: list[AxisPoint],
    context: int,
    numbers: list[int],
    x_range: tuple[float, float],
    sizes: tuple[tuple[int, int, int], ...] = DRAWN_AT,
) -> tuple[list[str], list[str]]:
    """Each frontier design's number (`numbers`: frontier_numbers) and where it goes (explorer.labels.apart: clear
    of the other numbers, of every point drawn, `others` too, and of the frontier's line, at each of `sizes`); a
    design sharing its spot's number is left unlabelled. Numbers, not names: in the crowded corner near ×1 no name
    of 20-odd letters has a clear place beside its point, a number always has; the caption lists them by number."""
    y_range = (math.log10(BOTTOM), math.log10(TOP * 1.1))
    spots = [(math.log10(p.bytes_per_token(context) / 1024), math.log10(_y(p))) for p in line]
    first = [numbers.index(n) == i for i, n in enumerate(numbers)]
    named = [(x, y, str(n)) for (x, y), n, lead in zip(spots, numbers, first, strict=True) if lead]
    obstacles = [(x, y, "") for (x, y), lead in zip(spots, first, strict=True) if not lead]
    obstacles += [(math.log10(p.bytes_per_token(context) / 1024), math.log10(_y(p)), "") for p in others]
    obstacles += _line_points(spots)
    obstacles = [o for o in obstacles if any(abs(o[0] - x) < NEAR[0] and abs(o[1] - y) < NEAR[1] for x, y, _n in named)]
    where = iter(apart([*named, *obstacles], x_range, y_range, sizes=sizes)[: len(named)])
    positions = [next(where) if lead else "top center" for lead in first]
    return [f"<b>{n}</b>" if lead else "" for n, lead in zip(numbers, first, strict=True)], positions


def _axis_trace(shown: str, color: str, group: list[AxisPoint], context: int) -> go.Scatter:
    """One axis's designs as points in its colour (a healed one larger), named on hover."""
    return go.Scatter(
        x=[p.bytes_per_token(context) / 1024 for p in group],
        y=[_y(p) for p in group],
        mode="markers",
        marker={
            "symbol": [_symbol(p) for p in group],
            "size": [14 if p.healed else 10 for p in group],
            "color": color,
            "line": {"width": 1, "color": "white"},
        },
        customdata=[[point_name(p), p.times_original, p.perplexity, p.piece] for p in group],
        hovertemplate=_(
            "%{{customdata[0]}}<br>×%{{customdata[1]:,.2f}} the original (perplexity %{{customdata[2]:,.2f}} "
            "on pieces of %{{customdata[3]}})<br>cache %{{x:,.2f}} KiB per token at {context} tokens",
            context=context,
        )
        + "<extra></extra>",
        name=shown,
        cliponaxis=False,
    )


def kib_ticks(x_range: tuple[float, float]) -> tuple[list[float], list[str]]:
    """Powers of two of KiB inside the range (log10 of KiB), every second one when they are many: major ticks only,
    labelled as numbers, never Plotly's minor digits."""
    first, last = math.ceil(x_range[0] / math.log10(2)), math.floor(x_range[1] / math.log10(2))
    stride = 1 if last - first < 9 else 2
    values = [2.0**k for k in range(first, last + 1) if k % stride == 0]
    return values, [f"{v:g}" for v in values]


def _budget_marks(limit_kib: float, share: float, x_range: tuple[float, float]) -> tuple[dict, dict]:
    """The budget as a dashed line at its cache per token, named in the legend, and what lies past it shaded."""
    y_range = (BOTTOM, TOP * 1.1)
    line = {
        "type": "scatter",
        "mode": "lines",
        "x": [limit_kib, limit_kib],
        "y": list(y_range),
        "line": {"color": "#555", "width": 2, "dash": "dash"},
        "name": _("budget {share}", share=percent(share)),
        "hoverinfo": "skip",
    }
    shade = {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": limit_kib,
        "x1": 10 ** x_range[1],
        "y0": 0,
        "y1": 1,
        "fillcolor": "#888",
        "opacity": 0.12,
        "line": {"width": 0},
        "layer": "below",
    }
    return line, shade


def axes_figure(
    points: list[AxisPoint],
    context: int,
    numbers: list[int],
    limit: float | None = None,
    share: float | None = None,
) -> dict:
    """Every design at `context` tokens; the frontier as a line through its designs, each numbered beside its point
    (`numbers`: frontier_numbers, which the caption names them by) at every width; the budget (`limit` bytes per
    token, `share` of the original's) as a line, what it excludes shaded."""
    line = frontier(points, context)
    x_values = [p.bytes_per_token(context) / 1024 for p in points]
    # room right of the original for its name
    x_range = (math.log10(min(x_values)) - 0.1, math.log10(max(x_values)) + 0.25)
    others = [p for p in points if p not in line]
    labels, positions = frontier_labels(line, others, context, numbers, x_range, (*DRAWN_AT, AT_1400_PX))
    narrow_range = (x_range[0] - NARROW_LEFT_ROOM, x_range[1])
    _labels, narrow_positions = frontier_labels(line, others, context, numbers, narrow_range, NARROW_AT)
    fig = go.Figure()
    fig.add_trace(_frontier_trace(line, context, labels, positions))
    original = [p for p in points if p.key == "original"]
    groups = [(_("original"), ORIGINAL_COLOR, original)] + [
        (axis_name(axis), AXIS_COLORS[axis], [p for p in points if p.axis == axis and p.key != "original"])
        for axis in AXES
    ]
    for shown, color, group in groups:
        if group:
            fig.add_trace(_axis_trace(shown, color, group, context))
    tickvals, ticktext = kib_ticks(x_range)
    fig.update_layout(
        xaxis_title=_("KV cache per token at {context} tokens, whole model (KiB, float32, log)", context=context),
        xaxis_type="log",
        xaxis_range=list(x_range),
        xaxis_tickvals=tickvals,
        xaxis_ticktext=ticktext,
        yaxis_title=_("perplexity ÷ the original's (log; lower is better)"),
        yaxis_type="log",
        yaxis_range=[math.log10(BOTTOM), math.log10(TOP * 1.1)],
        yaxis_tickvals=[1, 1.1, 1.25, 1.5, 2, 3, 5, 8],
        yaxis_ticktext=["1", "1.1", "1.25", "1.5", "2", "3", "5", "≥ 8"],
        height=520,
        margin={"t": 30},
        legend={"orientation": "h", "y": -0.2},
    )
    if limit is not None and share is not None:
        line_trace, shade = _budget_marks(limit / 1024, share, x_range)
        fig.add_trace(go.Scatter(line_trace))
        fig.update_layout(shapes=[shade])
    return _with_narrow(fig.to_dict(), narrow_range, narrow_positions)


def _frontier_trace(line: list[AxisPoint], context: int, labels: list[str], positions: list[str]) -> go.Scatter:
    """The frontier as a dotted line through its designs, their numbers beside them (`labels` at `positions`)."""
    return go.Scatter(
        x=[p.bytes_per_token(context) / 1024 for p in line],
        y=[_y(p) for p in line],
        mode="lines+markers+text",  # unseen markers: Plotly sets a name off its point by the marker's size
        # clear, not opacity 0: the legend draws a marker at least 0.2 opaque (a faint circle), a clear one not
        marker={"size": MARKER_PX, "color": "rgba(0, 0, 0, 0)"},
        line={"dash": "dot", "color": "#888"},
        text=labels,
        textposition=positions,
        textfont={"size": 13, "color": "#333"},
        name=_("frontier"),
        hoverinfo="skip",
        cliponaxis=False,
    )


def _with_narrow(figure: dict, x_range: tuple[float, float], positions: list[str]) -> dict:
    """The figure with its narrow layout (below NAMES_FIT_PX): shorter axis titles, the cache axis over `x_range`,
    the frontier's numbers at `positions` (placed for NARROW_AT); the other traces keep theirs (they have no text)."""
    phone = copy.deepcopy(figure["layout"])
    phone["xaxis"]["title"]["text"] = _("KV cache per token (KiB, log)")
    phone["yaxis"]["title"]["text"] = _("× the original (log)")
    phone["xaxis"]["range"] = list(x_range)
    places = [positions] + [None] * (len(figure["data"]) - 1)
    return {**figure, "narrow": {"below": NAMES_FIT_PX, "layout": phone, "textposition": places}}


def axes_csv_rows(points: list[AxisPoint], context: int) -> list[dict]:
    """Every design: its axis, its table, how it was scored, its perplexity, its cache at the context, and whether
    it is on the frontier."""
    line = frontier(points, context)
    return [
        {
            "design": point_name(p),
            "key": p.key,
            "axis": p.axis,
            "healed": p.healed,
            "table": p.table,
            "evaluation_piece_tokens": p.piece,
            "perplexity": round(p.perplexity, 4),
            "original_perplexity_same_pieces": round(p.original_perplexity, 4),
            "times_original": round(p.times_original, 4),
            f"cache_bytes_per_token_at_{context}": round(p.bytes_per_token(context), 2),
            "on_frontier": p in line,
        }
        for p in points
    ]
