"""The trade-off across every axis as a chart: each stored design a point, perplexity against the original's on the
same pieces (log) against its whole cache per token at the reader's context (log), coloured by the axis it cuts,
healed designs as stars, the frontier drawn and its designs named; and its numbers as CSV rows."""

from __future__ import annotations

import copy
import math

import plotly.graph_objects as go

from explorer.i18n import _
from explorer.labels import apart, kept_names

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
TOP = 8.0  # x the original's perplexity: the chart's top; a design above it is drawn at the edge as a triangle
NEAR_DECADES = (0.08, 0.03)  # cache, x the original: points this close are one spot on the chart at any width
NAMES_FIT_PX = 640  # narrower than this the frontier's names run into each other: the caption and the CSV name them


def _y(point: AxisPoint) -> float:
    return min(point.times_original, TOP)


def _symbol(point: AxisPoint) -> str:
    if point.times_original > TOP:
        return "triangle-up"
    return "star" if point.healed else "circle"


def frontier_labels(
    line: list[AxisPoint], others: list[AxisPoint], context: int, x_range: tuple[float, float]
) -> tuple[list[str], list[str]]:
    """Each frontier design's name and where it goes (explorer.labels.apart: clear of the other names and of every
    point drawn, `others` too, at each size the chart is drawn at); a name that would still cover one already kept
    is not drawn (""): the caption and the CSV name every one."""
    y_range = (math.log10(0.95), math.log10(TOP * 1.1))
    spots = [(math.log10(p.bytes_per_token(context) / 1024), math.log10(_y(p)), point_name(p)) for p in line]
    # Two designs on nearly one spot (a window with one or four kept first tokens): the line draws no marker to keep
    # their names apart, so only the first is named, and the other is only a point its neighbours' names avoid; the
    # caption and the CSV name both
    first = [
        not any(abs(x - sx) < NEAR_DECADES[0] and abs(y - sy) < NEAR_DECADES[1] for sx, sy, _name in spots[:i])
        for i, (x, y, _name) in enumerate(spots)
    ]
    named = [spot for spot, keep in zip(spots, first, strict=True) if keep]
    obstacles = [(x, y, "") for (x, y, _name), keep in zip(spots, first, strict=True) if not keep]
    obstacles += [(math.log10(p.bytes_per_token(context) / 1024), math.log10(_y(p)), "") for p in others]
    placed = apart([*named, *obstacles], x_range, y_range)[: len(named)]
    kept = iter(kept_names(named, placed, x_range, y_range))
    where = iter(placed)
    labels, positions = [], []
    for (*_place, name), keep in zip(spots, first, strict=True):
        shown = keep and next(kept)
        positions.append(next(where) if keep else "top center")
        labels.append(name if shown else "")
    return labels, positions


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


def axes_figure(points: list[AxisPoint], context: int) -> dict:
    """Every design at `context` tokens; the frontier as a line through its designs, each named beside its point."""
    line = frontier(points, context)
    x_values = [p.bytes_per_token(context) / 1024 for p in points]
    # room right of the original for its name
    x_range = (math.log10(min(x_values)) - 0.1, math.log10(max(x_values)) + 0.25)
    labels, positions = frontier_labels(line, [p for p in points if p not in line], context, x_range)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[p.bytes_per_token(context) / 1024 for p in line],
            y=[_y(p) for p in line],
            mode="lines+text",
            line={"dash": "dot", "color": "#888"},
            text=labels,
            textposition=positions,
            textfont={"size": 11},
            name=_("frontier"),
            hoverinfo="skip",
            cliponaxis=False,
        )
    )
    original = [p for p in points if p.key == "original"]
    groups = [(_("original"), ORIGINAL_COLOR, original)] + [
        (axis_name(axis), AXIS_COLORS[axis], [p for p in points if p.axis == axis and p.key != "original"])
        for axis in AXES
    ]
    for shown, color, group in groups:
        if group:
            fig.add_trace(_axis_trace(shown, color, group, context))
    fig.update_layout(
        xaxis_title=_("KV cache per token at {context} tokens, whole model (KiB, float32, log)", context=context),
        xaxis_type="log",
        xaxis_range=list(x_range),
        yaxis_title=_("perplexity ÷ the original's (log; lower is better)"),
        yaxis_type="log",
        yaxis_range=[math.log10(0.95), math.log10(TOP * 1.1)],
        yaxis_tickvals=[1, 1.1, 1.25, 1.5, 2, 3, 5, 8],
        yaxis_ticktext=["1", "1.1", "1.25", "1.5", "2", "3", "5", "≥ 8"],
        height=520,
        margin={"t": 30},
        legend={"orientation": "h", "y": -0.2},
    )
    figure = fig.to_dict()
    phone = copy.deepcopy(figure["layout"])
    phone["xaxis"]["title"]["text"] = _("KV cache per token (KiB, log)")
    phone["yaxis"]["title"]["text"] = _("× the original (log)")
    return {**figure, "narrow": {"below": NAMES_FIT_PX, "unlabelled": True, "layout": phone}}


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
