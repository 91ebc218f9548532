"""The lab's figures: perplexity against cache per token for every stored point (healed ones as stars), and the live
heal's loss."""

from __future__ import annotations

import copy
import math

import plotly.graph_objects as go

from explorer.i18n import _, percent
from explorer.labels import DRAWN_AT, apart
from explorer.probes.lab import WINDOW

from .stored import HealedRow, LabRow, healed_as_rows, pareto_frontier
from .text import label_shown, point_name, settings_shown


def _legend_name(variant: str, group: list[LabRow]) -> str:
    """The variant's abbreviation; GQA with one KV head is MQA (the lab's "gqa" rows all have n_kv_heads=1); MLA's
    points are named by their latent width d_c, so the legend says so (and the rotary width, when they share one)."""
    if variant == "gqa" and all(r.options.get("n_kv_heads") == 1 for r in group):
        return "MQA"
    if variant == "mla":
        rope_dims = {r.options["qk_rope_head_dim"] for r in group}
        if len(rope_dims) == 1:
            return _("MLA, named by its latent width (+ rotary key {d_r})", d_r=rope_dims.pop())
        return _("MLA, named by its latent width")
    return variant.upper()


def _add_healed(fig: go.Figure, rows: list[LabRow], healed: dict[str, HealedRow]) -> None:
    """Each healed point as a star, with an arrow from the conversion it was healed from (same cache, lower
    perplexity: straight down)."""
    twins = [(row, healed[row.key]) for row in rows if row.key in healed]
    if not twins:
        return
    fig.add_trace(
        go.Scatter(
            x=[twin.cache_bytes_per_token / 1024 for _row, twin in twins],
            y=[twin.perplexity for _row, twin in twins],
            mode="markers",
            marker={"symbol": "star", "size": 14, "color": "#2f8f5b", "line": {"width": 1, "color": "white"}},
            name=_("healed"),
            customdata=[
                [
                    _("{model}, healed", model=point_name(row)),
                    _("{share} of the gap closed.", share=percent(twin.gap_closed)),
                ]
                for row, twin in twins
            ],
            hovertemplate="%{customdata[0]}<br>%{y:,.2f}<br>%{customdata[1]}" + "<extra></extra>",
        )
    )
    for row, twin in twins:
        fig.add_annotation(
            # annotations on a log axis are placed by the log of the value (both axes are log)
            x=math.log10(twin.cache_bytes_per_token / 1024),
            y=math.log10(twin.perplexity),
            ax=math.log10(row.cache_bytes_per_token / 1024),
            ay=math.log10(row.perplexity),
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            showarrow=True,
            arrowhead=2,
            arrowsize=1.2,
            arrowwidth=1.5,
            arrowcolor="#2f8f5b",
            standoff=7,
            startstandoff=6,
            text="",
        )


NAMES_FIT_PX = 560  # narrower than this (a phone), the chart takes its phone layout and its names their own places
# A phone's plot (px, font px): the lab's charts at 400 px draw theirs ~300 x 265-272 px (measured); names placed for a
# laptop's plot ran into each other there, so a phone's are placed apart for it alone
PHONE_PLOT = ((300, 265, 12),)


# Where a point's name may go, in order of preference: beside it, above or below it, then at a corner.
PLACES = (
    "middle right",
    "top center",
    "bottom center",
    "middle left",
    "top right",
    "bottom right",
    "top left",
    "bottom left",
)


def label_positions(
    named: list[tuple[str, float, float, str]],
    others: list[tuple[float, float]],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    sizes: tuple[tuple[int, int, int], ...] = DRAWN_AT,
) -> dict[str, str]:
    """Where each named point's name goes (key, x, y, name; on a log axis x or y is the value's log10), so that no
    name covers another name or any point, named or not (`others`: the healed stars), at every size the chart is
    drawn at (explorer.labels.apart), or at `sizes`."""
    sides = apart(
        [(x, y, name) for _key, x, y, name in named] + [(x, y, "") for x, y in others], x_range, y_range, PLACES, sizes
    )
    return {key: side for (key, *_rest), side in zip(named, sides, strict=False)}


def _variant_traces(
    fig: go.Figure,
    rows: list[LabRow],
    names: dict[str, str],
    sides: tuple[dict[str, str], dict[str, str]],
    chosen: str | None,
    context_length: int,
) -> list[list[str] | None]:
    """One trace of named points per variant, the chosen one ringed; returns each trace's name sides on a phone
    (the frontier's line first, which has none). sides: where each point's name goes at full width and on a phone."""
    positions, on_phone = sides
    colors = {"original": "#4a9a6b", "mha": "#3b6ea8", "gqa": "#c4573a", "mla": "#8a5cb8"}
    phone_sides: list[list[str] | None] = [None]  # per trace: the frontier's line has no names
    for variant in ("original", "mha", "gqa", "mla"):
        group = [r for r in rows if r.variant == variant]
        if not group:
            continue
        phone_sides.append([on_phone[r.key] for r in group])
        fig.add_trace(
            go.Scatter(
                x=[r.cache_bytes_per_token / 1024 for r in group],
                y=[r.perplexity for r in group],
                mode="markers+text",
                text=[names[r.key] for r in group],
                textposition=[positions[r.key] for r in group],
                textfont={"color": colors[variant]},
                marker={
                    "size": [16 if r.key == chosen else 10 for r in group],
                    "color": colors[variant],
                    "line": {"width": [3 if r.key == chosen else 0 for r in group], "color": "black"},
                },
                customdata=[
                    [label_shown(r), settings_shown(r), r.cache_bytes_per_token * context_length / 2**20] for r in group
                ],
                hovertemplate=_(
                    "%{{customdata[0]}}<br>%{{customdata[1]}}<br>perplexity %{{y:,.2f}}<br>cache %{{x:.2f}} KiB per "
                    "token<br>%{{customdata[2]:,.1f}} MiB at {context} tokens",
                    context=context_length,
                )
                + "<extra></extra>",
                name=_("original") if variant == "original" else _legend_name(variant, group),
            )
        )
    return phone_sides


def _pareto_axes(fig: go.Figure, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
    fig.update_layout(
        # log: caches a few times apart (MQA's 15 KiB, the MLA widths, GQA's 45, MHA's 135) spread evenly, so the
        # MLA points' names no longer pile up at the left beside their healed twins
        xaxis_title=_("KV cache per token, whole model (KiB, float32, log scale)"),
        xaxis_type="log",
        xaxis_tickvals=[10, 15, 20, 30, 45, 70, 100, 150],  # Plotly's own put bare 2s and 5s between the powers of ten
        xaxis_range=list(x_range),
        yaxis_title=_("perplexity (log scale; lower is better)"),
        yaxis_type="log",
        yaxis_range=list(y_range),
        yaxis_dtick=1,  # a label at each power of ten (10, 100, 1000): Plotly's own puts bare 2s and 5s between
        height=480,
        margin={"t": 30},
        legend={"orientation": "h", "y": -0.2},
    )


def pareto_figure(
    rows: list[LabRow], *, context_length: int, chosen: str | None = None, healed: dict[str, HealedRow] | None = None
) -> dict:
    """Perplexity (log) against KV cache per token (KiB, whole model, float32), every point named beside it; the
    frontier as a line; hover adds the settings and the whole-model cache at context_length tokens."""
    frontier = pareto_frontier(rows)
    # MLA points are named by their latent width alone: on a log axis their widths sit ~30 px apart at a laptop's
    # width, room for "256" but not for "MLA 256+32"
    names = {r.key: str(r.options["kv_lora_rank"]) if r.variant == "mla" else point_name(r) for r in rows}
    # every point, the healed stars after the conversions: (cache per token, perplexity)
    measured = [(r.cache_bytes_per_token, r.perplexity) for r in rows]
    measured += [(h.cache_bytes_per_token, h.perplexity) for h in (healed or {}).values()]
    log_x = [math.log10(nbytes / 1024) for nbytes, _perplexity in measured]
    log_y = [math.log10(perplexity) for _nbytes, perplexity in measured]
    # explicit ranges: the names are placed against the same axes Plotly draws
    x_range, y_range = (min(log_x) - 0.08, max(log_x) + 0.08), (min(log_y) - 0.15, max(log_y) + 0.15)
    named = [(r.key, x, y, names[r.key]) for r, x, y in zip(rows, log_x, log_y, strict=False)]
    stars = list(zip(log_x[len(rows) :], log_y[len(rows) :], strict=True))
    positions = label_positions(named, stars, x_range, y_range)
    on_phone = label_positions(named, stars, x_range, y_range, PHONE_PLOT)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[r.cache_bytes_per_token / 1024 for r in frontier],
            y=[r.perplexity for r in frontier],
            mode="lines",
            line={"dash": "dot", "color": "#888"},
            name=_("Pareto frontier"),
            hoverinfo="skip",
        )
    )
    phone_sides = _variant_traces(fig, rows, names, (positions, on_phone), chosen, context_length)
    _add_healed(fig, rows, healed or {})
    _pareto_axes(fig, x_range, y_range)
    return _with_phone_layout(fig.to_dict(), phone_sides)


def _with_phone_layout(figure: dict, sides: list[list[str] | None]) -> dict:
    """On a phone the points' names take the places found for a phone's plot (`sides`, per trace; None: the
    trace's own) and the cache axis a shorter title: the whole one ran past a 400 px chart's edge."""
    phone = copy.deepcopy(figure["layout"])
    phone["xaxis"]["title"]["text"] = _("KV cache per token (KiB, float32, log)")
    return {**figure, "narrow": {"below": NAMES_FIT_PX, "layout": phone, "textposition": sides}}


HEALED_VIEW_TOP = 1.6  # x the original's perplexity: the healed view's top; a point above it is drawn at the edge


def _healed_trace(
    group: list[LabRow], shown: str, color: str, positions: dict[str, str], top: float, original: LabRow
) -> go.Scatter:
    """One group's points, each named: a star per healed conversion, a triangle at the top edge past `top`."""
    return go.Scatter(
        x=[r.cache_bytes_per_token / 1024 for r in group],
        y=[min(r.perplexity, top) for r in group],
        mode="markers+text",
        text=[_healed_name(r, top) for r in group],
        textposition=[positions[r.key] for r in group],
        marker={
            "symbol": [
                "circle" if r.key == "original" else "triangle-up" if r.perplexity > top else "star" for r in group
            ],
            "size": 14,
            "color": color,
        },
        textfont={"color": color},
        customdata=[
            [label_shown(r), r.perplexity, r.cache_bytes_per_token / original.cache_bytes_per_token] for r in group
        ],
        hovertemplate=_(
            "%{{customdata[0]}}<br>perplexity %{{customdata[1]:,.2f}}<br>%{{customdata[2]:.0%}} of the original's cache"
        )
        + "<extra></extra>",
        cliponaxis=False,
        name=shown,
    )


def healed_figure(rows: list[LabRow], healed: dict[str, HealedRow]) -> dict:
    """After healing, up close: the original and every healed conversion, perplexity against cache per token, each
    named beside its point (a projector has no hover), and the frontier they make. A point above HEALED_VIEW_TOP x
    the original's perplexity is drawn at the top edge as a triangle, its perplexity in its name."""
    points = healed_as_rows(rows, healed)
    original = next(row for row in points if row.key == "original")
    top = HEALED_VIEW_TOP * original.perplexity
    frontier = pareto_frontier(points)
    x_range = (0.0, 1.45 * max(r.cache_bytes_per_token for r in points) / 1024)
    y_range = (original.perplexity * 0.92, top * 1.02)  # room below the lowest points for names
    # the original (rightmost, lowest) named to its right first: the x axis leaves room there for it
    named = [
        (r.key, r.cache_bytes_per_token / 1024, min(r.perplexity, top), _healed_name(r, top))
        for r in sorted(points, key=lambda r: r.key != "original")
    ]
    positions = label_positions(named, [], x_range, y_range)
    on_phone = label_positions(named, [], x_range, y_range, PHONE_PLOT)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[r.cache_bytes_per_token / 1024 for r in frontier],
            y=[min(r.perplexity, top) for r in frontier],
            mode="lines",
            line={"dash": "dot", "color": "#888"},
            name=_("frontier after healing"),
            hoverinfo="skip",
        )
    )
    twins = sorted((r for r in points if r != original), key=lambda r: r.perplexity)  # a star first: the legend's
    groups = ((_("original"), "#4a9a6b", [original]), (_("healed (MLA named by its latent width)"), "#2f8f5b", twins))
    for shown, color, group in groups:
        fig.add_trace(_healed_trace(group, shown, color, positions, top, original))
    fig.update_layout(
        xaxis_title=_("KV cache per token, whole model (KiB, float32)"),
        # room right of the original for its name, in presenter mode's doubled font too (a 1024 px projector)
        xaxis_range=list(x_range),
        yaxis_title=_("perplexity after healing (lower is better)"),
        yaxis_range=list(y_range),
        height=420,
        margin={"t": 30},
        legend={"orientation": "h", "y": -0.22},
    )
    # on a phone, the names where they fit a phone's plot (the frontier's line has none)
    sides = [None] + [[on_phone[r.key] for r in group] for _shown, _color, group in groups]
    return {**fig.to_dict(), "narrow": {"below": NAMES_FIT_PX, "textposition": sides}}


def _healed_name(row: LabRow, top: float) -> str:
    """A point's name on the healed close-up: its model (an MLA point by its latent width alone, as on the lab's
    Pareto chart: "MLA 256+32" beside each point left no room between them) and perplexity, an arrow where it is
    drawn at the top edge."""
    name = str(row.options["kv_lora_rank"]) if row.variant == "mla" else point_name(row)
    return f"{name}: {row.perplexity:,.2f}" + (" ↑" if row.perplexity > top else "")


def heal_loss_figure(step_losses: list[float], first_loss: float | None, seconds: float) -> go.Figure:
    """The live heal's loss, per step (log): how far the converted layers' outputs are from the original's."""
    steps = list(range(1, len(step_losses) + 1))
    fig = go.Figure(
        go.Scatter(
            x=steps,
            y=step_losses,
            mode="lines+markers",
            line={"color": "#8a5cb8"},
            marker={"size": 4},
            name=_("mean over layers"),
            hovertemplate=_("step %{{x}}: %{{y:.4f}}") + "<extra></extra>",
        )
    )
    # The axis spans the curve and the loss before healing, no more: Plotly's add_hline placed its label on a log axis
    # at the value itself rather than its log, far from the line, and stretched the axis to reach it.
    values = [*step_losses, *([first_loss] if first_loss is not None else [])]
    low, high = math.log10(min(values)), math.log10(max(values))
    pad = max(high - low, 0.2) * 0.08
    if first_loss is not None:
        fig.add_shape(
            type="line",
            xref="paper",
            x0=0,
            x1=1,
            y0=first_loss,
            y1=first_loss,
            line={"dash": "dot", "color": "#888"},
        )
        fig.add_annotation(
            text=_("before healing"),
            xref="paper",
            x=1,
            y=math.log10(first_loss),  # annotations on a log axis are placed by the log of the value
            xanchor="right",
            yanchor="bottom",
            showarrow=False,
        )
    fig.update_layout(
        title=_("Healing: error of the converted layers, {seconds} s of training", seconds=f"{seconds:.0f}"),
        xaxis_title=_("training step (one window of {window} tokens)", window=WINDOW),
        yaxis_title=_("|out − original|² / |original|² (log)"),
        yaxis_type="log",
        yaxis_range=[low - pad, high + 2 * pad],  # room above the top line for its label
        height=360,
        showlegend=False,
    )
    return fig
