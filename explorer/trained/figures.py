"""The trained model page's figures, as plain dicts: every layer's heads at a glance, one head's map, the heads sharing
a KV head, where heads look (first and previous token), and the cache growing as the model writes."""

from __future__ import annotations

import math

import numpy as np
from plotly.colors import sample_colorscale

from explorer.charts import VARIANT_COLORS, typed_array
from explorer.grid import Subplot, arrange, columns_by_width, even_rows, grid_figure, place
from explorer.heatmaps.figures import WEIGHT_COLORSCALE
from explorer.i18n import _
from explorer.probes.trained import TrainedAttention, WritingTrace, pooled_maps

OVERVIEW_SIDE = 16  # cells per side of each head's small map in the overview

# Token labels an axis shows at most (every few tokens past that; the hover names each): along a slanted axis a
# phone's ~190-px plot holds ~16 before they run together, an upright one of ~400 px 32.
SLANTED_TOKEN_LABELS, UPRIGHT_TOKEN_LABELS = 16, 32

_STEPS = np.linspace(0.0, 1.0, 9)
LINEAR_BLUES = [[float(s), c] for s, c in zip(_STEPS, sample_colorscale("Blues", _STEPS.tolist()), strict=True)]


def overview_figure(result: TrainedAttention) -> dict:
    """All layers x heads as small maps in one heatmap: a row per layer, heads side by side, a wider gap between the
    heads of different KV groups (each run of group_size heads shares one KV head)."""
    pooled = pooled_maps(result.maps, OVERVIEW_SIDE)  # [layers, H, s, s]
    layers, heads, side = pooled.shape[:3]
    group = result.group_size
    canvas, column_starts = _overview_canvas(pooled, group)
    centers_x = [start + side / 2 for start in column_starts]
    centers_y = [layer * (side + OVERVIEW_GAP) + side / 2 for layer in range(layers)]
    return {
        "data": [
            {
                "type": "heatmap",
                "z": typed_array(canvas),
                "colorscale": WEIGHT_COLORSCALE,
                "zmin": 0,
                "zmax": 1,
                "colorbar": {"title": {"text": _("weight")}, "thickness": 12},
                "hovertemplate": _("weight %{z:.2f}") + "<extra></extra>",
            }
        ],
        "layout": {
            "height": 60 + layers * 26,
            "margin": {"l": 60, "r": 10, "t": 34, "b": 50},
            "xaxis": {
                "tickvals": centers_x,
                "ticktext": [f"h{h}<br>KV {h // group}" for h in range(heads)],  # symbols: head h, KV head
                "showgrid": False,
                "zeroline": False,
            },
            "yaxis": {
                "tickvals": centers_y,
                "ticktext": [_("layer {layer}", layer=layer) for layer in range(layers)],
                "autorange": "reversed",
                "showgrid": False,
                "zeroline": False,
                "tickfont": {"size": 9},
            },
            "shapes": _group_frames(column_starts, group, side, height=canvas.shape[0]),
        },
    }


OVERVIEW_GAP = 1  # cells between two maps; twice as many again between two KV groups


def _overview_canvas(pooled: np.ndarray, group: int) -> tuple[np.ndarray, list[int]]:
    """The small maps [layers, H, s, s] laid out on one canvas (NaN between them), and where each head's column
    starts."""
    layers, heads, side = pooled.shape[:3]
    gap = OVERVIEW_GAP
    column_starts = [h * (side + gap) + (h // group) * 2 * gap for h in range(heads)]
    canvas = np.full((layers * (side + gap), column_starts[-1] + side), np.nan, dtype=np.float32)
    for layer in range(layers):
        for head in range(heads):
            top, left = layer * (side + gap), column_starts[head]
            canvas[top : top + side, left : left + side] = pooled[layer, head]
    return canvas, column_starts


def _group_frames(column_starts: list[int], group: int, side: int, *, height: int) -> list[dict]:
    """A frame around each KV group's columns, top to bottom."""
    return [
        {
            "type": "rect",
            "xref": "x",
            "yref": "y",
            "x0": column_starts[g * group] - 0.5,
            "x1": column_starts[g * group + group - 1] + side - 0.5,
            "y0": -0.5,
            "y1": height - 0.5,
            "line": {"color": VARIANT_COLORS["gqa"], "width": 1.5},
        }
        for g in range(len(column_starts) // group)
    ]


def token_ticks(labels: list[str], most: int) -> dict:
    """Tick positions and texts for tokens 0..len(labels)-1 on a numeric axis (tokens repeat, so not a category
    axis): every token, or every few so that at most `most` are shown."""
    step = math.ceil(len(labels) / most)
    return {"tickvals": list(range(0, len(labels), step)), "ticktext": labels[::step]}


def head_figure(result: TrainedAttention, layer: int, head: int) -> dict:
    """One head's full map with token labels (numeric axes with labels as tick text: tokens repeat)."""
    weights = result.maps[layer, head].astype(np.float32)
    axis = {"tickfont": {"size": 10}, "showgrid": False, "zeroline": False}
    kv = head // result.group_size
    return {
        "data": [
            {
                "type": "heatmap",
                "z": typed_array(weights),
                "colorscale": WEIGHT_COLORSCALE,
                "zmin": 0,
                "zmax": 1,
                "colorbar": {"title": {"text": _("weight")}, "thickness": 12},
                "hovertemplate": _("query %{y} → key %{x}<br>weight %{z:.3f}") + "<extra></extra>",
            }
        ],
        "layout": {
            "title": {
                "text": _("Layer {layer}, head {head}<br>(reads KV head {kv})", layer=layer, head=head, kv=kv),
                "x": 0.0,
            },
            "height": 560,
            "margin": {"l": 90, "r": 20, "t": 80, "b": 90},
            "xaxis": axis
            | token_ticks(result.labels, SLANTED_TOKEN_LABELS)
            | {"title": {"text": _("key (attended to)")}, "tickangle": -60},
            "yaxis": axis
            | token_ticks(result.labels, UPRIGHT_TOKEN_LABELS)
            | {"title": {"text": _("query (attending)")}, "autorange": "reversed"},
        },
    }


def group_rows_figure(result: TrainedAttention, layer: int, head: int, query: int) -> dict:
    """Where query token `query` looks, in each head that shares the chosen head's KV head."""
    group = result.group_size
    kv = head // group
    members = range(kv * group, kv * group + group)
    keys = list(range(query + 1))
    palette = ["#1f5f99", "#4a9a6b", "#c4573a", "#8a5cb8"]
    traces = [
        {
            "type": "bar",
            "name": _("head {h}", h=h),
            "x": keys,
            "y": typed_array(result.maps[layer, h, query, : query + 1].astype(np.float32)),
            "marker": {"color": palette[i % len(palette)]},
            "hovertemplate": _("head {h}<br>key %{{x}}: %{{y:.3f}}", h=h) + "<extra></extra>",
        }
        for i, h in enumerate(members)
    ]
    return {
        "data": traces,
        "layout": {
            "title": {
                "text": _(
                    "Query {query} ({token}), layer {layer}:<br>the {group} heads of KV head {kv}",
                    query=query,
                    token=result.labels[query],
                    layer=layer,
                    group=group,
                    kv=kv,
                ),
                "x": 0.0,
            },
            "barmode": "group",
            "height": 360,
            "margin": {"l": 60, "r": 20, "t": 80, "b": 90},
            "xaxis": token_ticks(result.labels[: query + 1], SLANTED_TOKEN_LABELS)
            | {"tickangle": -60, "title": {"text": _("key")}},
            "yaxis": {"title": {"text": _("weight")}, "range": [0, 1]},
            "legend": {"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
        },
    }


def shares_figure(result: TrainedAttention) -> dict:
    """Two layer x head grids: each head's mean share on the first token and on the previous token."""
    _layers, heads = result.first_token_share.shape
    common = {"type": "heatmap", "zmin": 0, "zmax": 1, "colorscale": LINEAR_BLUES}
    head_ticks = {"tickvals": list(range(heads)), "ticktext": [f"h{h}" for h in range(heads)]}
    first = Subplot(
        [
            common
            | {
                "z": typed_array(result.first_token_share),
                "colorbar": {"title": {"text": _("share")}, "thickness": 12},
                "hovertemplate": _("layer %{y}, head %{x}: %{z:.2f} on the first token") + "<extra></extra>",
            }
        ],
        x_axis=head_ticks,
        y_axis={"title": {"text": _("layer")}, "autorange": "reversed"},
        title=_("first<br>token"),
    )
    previous = Subplot(
        [
            common
            | {
                "z": typed_array(result.previous_token_share),
                "showscale": False,
                "hovertemplate": _("layer %{y}, head %{x}: %{z:.2f} on the previous token") + "<extra></extra>",
            }
        ],
        x_axis=head_ticks,
        y_axis={"autorange": "reversed", "showticklabels": False},
        title=_("previous<br>token"),
    )
    # the colour bar stands right of the second grid: the two grids share the width left of it
    slots = place(arrange(2, 2), columns_by_width([1, 1], 0.08, span=(0.0, 0.96)), even_rows(1, 0.0))
    # the two-line column titles sit below the chart's toolbar
    layout = {"height": 550, "margin": {"l": 60, "r": 20, "t": 90, "b": 40}}
    return grid_figure(slots, [first, previous], layout=layout, title_font=12, title_raise=0.02)


def cache_growth_figure(trace: WritingTrace, step: int) -> dict:
    """The whole model's cache while it writes: measured (as trained, GQA) against what MHA and MQA would hold."""
    return {
        "data": [*_growth_lines(trace), _step_marker(trace, step)],
        "layout": {
            "title": {
                # whole: the browser breaks it at the chart's width (explorer/live_chart.js)
                "text": _("Whole-model KV cache ({layers} layers, float32) as the model writes", layers=trace.n_layers),
                "x": 0,
            },
            "height": 420,
            "margin": {"l": 70, "r": 20, "t": 60, "b": 110},
            "xaxis": {"title": {"text": _("tokens in the cache")}},
            "yaxis": {"title": {"text": _("cache size (MiB)")}, "rangemode": "tozero"},
            # below the axis title, with room for two rows of legend on a narrow screen
            "legend": {"orientation": "h", "y": -0.3, "yanchor": "top"},
        },
    }


MIB = 1024**2


def _growth_lines(trace: WritingTrace) -> list[dict]:
    """The cache measured as the model writes, then what MHA and MQA would hold by the formula."""
    tokens = [s.cached_tokens for s in trace.steps]
    lines = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": _("GQA, {n} KV heads (measured)", n=trace.n_kv_heads),
            "x": tokens,
            "y": [s.cache_bytes / MIB for s in trace.steps],
            "line": {"color": VARIANT_COLORS["gqa"]},
            "hovertemplate": _("%{x} tokens: %{y:,.2f} MiB") + "<extra>" + _("measured") + "</extra>",
        }
    ]
    names = {
        "mha": _("MHA, {n} KV heads (formula)", n=trace.n_heads),
        "mqa": _("MQA, 1 KV head (formula)"),
    }
    for variant, name in names.items():
        per_token = trace.per_token_bytes[variant]
        lines.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": tokens,
                "y": [per_token * t / MIB for t in tokens],
                "line": {"color": VARIANT_COLORS[variant], "dash": "dot"},
                "hovertemplate": _("%{x} tokens: %{y:,.2f} MiB") + "<extra>" + variant.upper() + "</extra>",
            }
        )
    return lines


def _step_marker(trace: WritingTrace, step: int) -> dict:
    """A ring on the measured line at the chosen step."""
    now = trace.steps[step - 1]
    return {
        "type": "scatter",
        "mode": "markers",
        "name": _("step {step}", step=step),
        "x": [now.cached_tokens],
        "y": [now.cache_bytes / MIB],
        "marker": {"size": 13, "color": "#222", "symbol": "circle-open", "line": {"width": 2}},
        "hoverinfo": "skip",
    }
