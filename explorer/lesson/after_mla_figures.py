"""The second chapter's own charts, where no page draws the step's measurement as one chart: a model's cache held and
read against context (the axes page's curves), the trained model's first-token share beside the lab's measured
windows, and its real keys' quantisation error by channel. Plain figure dicts, words in this run's language."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np

from explorer.axes.figures import MODEL_COLORS, context_axis
from explorer.charts import in_two_lines, log_bytes_axis
from explorer.grid import narrow
from explorer.i18n import _
from explorer.lab.window_table import WindowTable
from explorer.present import SLIDE_FONT_SCALE, projected_margins
from explorer.probes.axes import ModelCurves
from explorer.probes.key_bits import KeyBits

SINK_COLORS = {0: "#c4573a", 1: "#3b6ea8"}  # without the first token, keeping it
LAYOUT_COLORS = {"token": "#c4573a", "channel": "#3b6ea8"}


# The axes grid on a slide. Plotly names a category row only where the row is 1.2 times its name's size tall (and
# skips names otherwise): ten rows of a chart 342 px tall (a 1024x680 window) under the page's margins had 18 px
# each, and every other row went unnamed. On a slide its top margin holds the title hung below the toolbar and the
# columns' names (117 px once explorer.present.for_projector has scaled it), nothing is below the plot, and the rows'
# names and numbers are the slide's usual size or what lets each row keep its name.
SLIDE_GRID_MARGIN = {"t": 78, "b": 4}
SLIDE_GRID_TEXT = (12, 13)  # the rows' names and the cells' numbers as the page draws them (the template's, the grid's)
# a row's height over its text's: Plotly names a row 1.2 times its text tall, but Chromium's box of a name is 1.36
# times its font (16.9 px names in 21.9 px rows at 1024x680 overlapped their neighbours), and room for rounding
ROW_PER_TEXT = 1.4


def grid_on_a_slide(figure: dict, height: int) -> dict:
    """The axes page's grid (explorer.axes.figures.axes_figure) as a slide draws it, `height` px tall: margins that
    hold their text and no more, and the rows' names and cells' numbers no larger than lets Plotly name every row
    (sizes before the slide's scale, which for_projector applies). A copy."""
    (grid,) = figure["data"]
    margin = sum(projected_margins(SLIDE_GRID_MARGIN, SLIDE_FONT_SCALE).values())  # as for_projector draws them
    fits = (height - margin) / len(grid["y"]) / ROW_PER_TEXT / SLIDE_FONT_SCALE
    names, numbers = (min(size, fits) for size in SLIDE_GRID_TEXT)
    layout = figure["layout"]
    return {
        **figure,
        "data": [{**grid, "textfont": {**grid.get("textfont", {}), "size": numbers}}],
        "layout": {
            **layout,
            "margin": {**layout["margin"], **SLIDE_GRID_MARGIN},
            "yaxis": {**layout["yaxis"], "tickfont": {"size": names}},
        },
    }


HELD_WIDTH = 9  # px: the held line, a wide pale band the read line runs inside


def held_and_read_figure(models: list[ModelCurves], tokens: int) -> tuple[dict, list[dict]]:
    """Each model's cache held (solid) and read by one decoding step (dashed) against context, log-log, with a
    marker on each at `tokens`."""
    data: list[dict] = []
    csv: list[dict] = []
    for model in models:
        color = MODEL_COLORS[model.name]
        # held as a wide pale band, read as a narrow dashed line on it: a model that reads all it holds (V3) shows
        # both, the dashes running inside the band, where two equal lines would hide one under the other
        for measure, line, name in (
            ("held", {"dash": "solid", "width": HELD_WIDTH}, _("{model}: held", model=model.name)),
            ("read", {"dash": "dash", "width": 3}, _("{model}: read by a step", model=model.name)),
        ):
            values = getattr(model, measure)
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": list(model.tokens),
                    "y": list(values),
                    "name": name,
                    "line": {"color": color} | line,
                    "opacity": 0.4 if measure == "held" else 1.0,
                    "hovertemplate": _(
                        "{name}, {tokens} tokens: {bytes} bytes", name=name, tokens="%{x:,}", bytes="%{y:,}"
                    )
                    + "<extra></extra>",
                }
            )
            i = model.at(tokens)
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [tokens],
                    "y": [values[i]],
                    "marker": {"size": 11, "color": color, "line": {"color": "white", "width": 1.5}},
                    "showlegend": False,
                    "hoverinfo": "skip",
                }
            )
        csv += [
            {"model": model.name, "tokens": t, "held_bytes": model.held[i], "read_bytes": model.read[i]}
            for i, t in enumerate(model.tokens)
        ]
    return {"data": data, "layout": _held_and_read_layout(models, data, tokens)}, csv


def _held_and_read_layout(models: list[ModelCurves], data: list[dict], tokens: int) -> dict:
    """The held-and-read chart's axes, its line at `tokens`, and the label of each model that reads all it holds."""
    every = [v for trace in data for v in trace["y"] if v > 0]
    labels = [label for model in models if (label := _reads_all_label(model, models, tokens, min(every), max(every)))]
    # a label's row under every line (or over them), left of the marked context's line, so that no line crosses it
    floor = min(every) / LABEL_ROOM if any(label["ay"] < label["y"] for label in labels) else min(every)
    ceiling = max(every) * LABEL_ROOM if any(label["ay"] > label["y"] for label in labels) else max(every)
    return {
        "title": {"text": _("Cache held, and read by one decoding step")},
        "xaxis": context_axis(),
        # two lines: one ran into the chart's title on a slide 342 px tall (a 680-px window)
        "yaxis": {"title": {"text": in_two_lines(_("bytes (batch {batch}, log scale)", batch=models[0].batch))}}
        | log_bytes_axis(floor, ceiling, most_ticks=7),
        "shapes": [_at_line(tokens)],
        "annotations": labels,
        "height": 460,
        "margin": {"t": 60, "b": 60, "l": 80, "r": 20},
        "legend": {"orientation": "h", "y": -0.25, "x": 0, "yanchor": "top"},
        "hovermode": "closest",
    }


def reads_all_it_holds(model: ModelCurves) -> bool:
    """Whether a decoding step reads every byte the model's cache holds, at every context drawn."""
    return model.read == model.held


LABEL_ROOM = 6.0  # the y scale reaches this many times under the lowest line (or over the highest): a label's row
# A pointer passing this close to another line (log10 of bytes) is taken to cross it: about a held band's half width
LINE_CLEARANCE = 0.04


def _reads_all_label(
    model: ModelCurves, models: list[ModelCurves], tokens: int, lowest: float, highest: float
) -> dict | None:
    """For a model that reads all it holds, a label in a row of its own under every line (another model's read line
    ran through it in the lower right), ending left of the marked context's line, its pointer to the point of the
    model's line nearest that context that it reaches crossing no other model's line (it crossed V3.2's read line);
    over every line where no point under them can be reached so (V3 over V4's lines). None for any other model."""
    if not reads_all_it_holds(model):
        return None
    tail_x = math.log10(tokens) - 0.08
    lines = [
        [(math.log10(t), math.log10(v)) for t, v in zip(other.tokens, values, strict=True) if v > 0]
        for other in models
        if other is not model
        for values in (other.held, other.read)
    ]
    nearest = sorted(range(len(model.tokens)), key=lambda i: abs(math.log10(model.tokens[i] / tokens)))
    rows = (math.log10(lowest / math.sqrt(LABEL_ROOM)), math.log10(highest * math.sqrt(LABEL_ROOM)))
    places = [(row, i) for row in rows for i in nearest]
    clear = (
        (row, i) for row, i in places if not any(_crosses((tail_x, row), _point(model, i), line) for line in lines)
    )
    row, i = next(clear, places[0])  # none clear (no such pair of models is drawn): as near as it gets
    x, y = _point(model, i)
    return {
        "x": x,
        "y": y,
        "ax": tail_x,
        "ay": row,
        "axref": "x",
        "ayref": "y",
        "text": _("{model}: reads all it holds", model=model.name),
        "showarrow": True,
        "arrowcolor": MODEL_COLORS[model.name],
        "standoff": HELD_WIDTH / 2,  # the head at the held band's edge, not inside it
        "xanchor": "right",
        "yanchor": "middle",
        "font": {"color": MODEL_COLORS[model.name]},
    }


def _point(model: ModelCurves, i: int) -> tuple[float, float]:
    """The model's held line at its i-th context, in the chart's log10 coordinates."""
    return math.log10(model.tokens[i]), math.log10(model.held[i])


def _crosses(tail: tuple[float, float], head: tuple[float, float], line: list[tuple[float, float]]) -> bool:
    """Whether the segment tail-head crosses the line (points joined straight, as a log-log chart draws them), or
    passes within LINE_CLEARANCE of it (the line shifted up and down by that much)."""

    def side(p: tuple[float, float], q: tuple[float, float], r: tuple[float, float]) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    def meet(a: tuple[float, float], b: tuple[float, float]) -> bool:
        return side(tail, head, a) * side(tail, head, b) < 0 and side(a, b, tail) * side(a, b, head) < 0

    return any(
        meet((a[0], a[1] + shift), (b[0], b[1] + shift))
        for shift in (-LINE_CLEARANCE, 0.0, LINE_CLEARANCE)
        for a, b in pairwise(line)
    )


def _at_line(tokens: int) -> dict:
    return {
        "type": "line",
        "yref": "paper",
        "y0": 0,
        "y1": 1,
        "x0": tokens,
        "x1": tokens,
        "line": {"color": "#888", "width": 1, "dash": "dash"},
    }


SINK_SHARE = 0.5  # a head that puts more than this of its weight on the first token counts as a sink's


def sink_heads(first_token_share: np.ndarray) -> list[int]:
    """Each layer's count of heads that put over SINK_SHARE of their weight on the first token ([layers, heads]
    shares): the left panel's bars, whose sum the step's words quote."""
    return [int(n) for n in (first_token_share > SINK_SHARE).sum(axis=1)]


def _sinks_traces(first_token_share: np.ndarray, table: WindowTable) -> list[dict]:
    """The bars of each layer's heads over half on the first token, then the window's perplexity without and with
    it."""
    windows = table.windows()
    counts = sink_heads(first_token_share)
    data: list[dict] = [
        {
            "type": "bar",
            "x": list(range(len(counts))),
            "y": counts,
            "marker": {"color": "#8a5cb8"},
            "name": _("heads over half on the first token"),
            "showlegend": False,
            "hovertemplate": _(
                "layer {layer}: {heads} of {n} heads over half on the first token",
                layer="%{x}",
                heads="%{y}",
                n=first_token_share.shape[1],
            )
            + "<extra></extra>",
            "xaxis": "x",
            "yaxis": "y",
        }
    ]
    for sinks in (0, 1):
        rows = [table.row(w, sinks) for w in windows]
        name = _("window only") if sinks == 0 else _("window + first token")
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers+text",
                "x": [str(w) for w in windows],
                "y": [r.perplexity for r in rows],
                "text": [f"{r.perplexity:.1f}" for r in rows],
                "textposition": "top center",
                "cliponaxis": False,
                "name": name,
                "line": {"color": SINK_COLORS[sinks], "width": 3},
                "marker": {"size": 9},
                "hovertemplate": _("window %{x}: perplexity %{y:.2f}") + "<extra></extra>",
                "xaxis": "x2",
                "yaxis": "y2",
            }
        )
    return data


def _sinks_layout(table: WindowTable, original: float, first_token_share: np.ndarray) -> dict:
    """The two panels side by side: the heads over half on the first token, their count over all layers written in
    the left one; the whole cache's perplexity as a dashed line on the right one, the legend in its empty top right
    corner (above the plot it sat on the chart's title)."""
    top = max(r.perplexity for r in table.rows if r.pattern == "every")
    layers, heads = first_token_share.shape
    layout: dict = {
        "title": {"text": _("SmolLM2-135M: the first token, and windows without it")},
        "xaxis": {"domain": [0, 0.4], "title": {"text": _("layer")}},
        "yaxis": {"title": {"text": _("sink heads (of {n})", n=heads)}, "range": [0, heads + 0.5], "dtick": 3},
        "xaxis2": {"domain": [0.55, 1], "type": "category", "title": {"text": _("window W (tokens)")}, "anchor": "y2"},
        "yaxis2": {
            "anchor": "x2",
            "type": "log",
            "title": {"text": _("perplexity (log)")},
            "range": [math.log10(original * 0.8), math.log10(top * 1.4)],
        },
        "shapes": [
            {
                "type": "line",
                "xref": "x2 domain",
                "x0": 0,
                "x1": 1,
                "yref": "y2",
                "y0": original,
                "y1": original,
                "line": {"color": "#6b6b6b", "width": 2, "dash": "dash"},
            }
        ],
        "annotations": [
            {
                "xref": "x2 domain",
                "x": 1,
                "yref": "y2",
                "y": math.log10(original),
                "text": _("whole cache {value}", value=f"{original:.1f}"),
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "top",
            },
            {
                "xref": "x domain",
                "x": 0.02,
                "yref": "y domain",
                "y": 0.98,
                "text": _("{sinks} of {heads} heads", sinks=sum(sink_heads(first_token_share)), heads=layers * heads),
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
            },
        ],
        "height": 460,
        "margin": {"t": 60, "b": 60, "l": 60, "r": 20},
        "legend": {"x": 1, "xanchor": "right", "y": 1, "yanchor": "top", "bgcolor": "rgba(255,255,255,0.8)"},
    }
    return layout


def _sinks_phone(layout: dict) -> dict:
    # on a phone the two panels one above the other, each the whole width, the legend under the lower one
    return layout | {
        "height": 760,
        "xaxis": {**layout["xaxis"], "domain": [0, 1], "anchor": "y"},
        "yaxis": {**layout["yaxis"], "domain": [0.62, 1]},
        "xaxis2": {**layout["xaxis2"], "domain": [0, 1]},
        "yaxis2": {**layout["yaxis2"], "domain": [0, 0.4]},
        "legend": {"orientation": "h", "x": 0, "y": -0.12, "yanchor": "top"},
        "margin": {"t": 60, "b": 110, "l": 60, "r": 20},
    }


def sinks_figure(first_token_share: np.ndarray, table: WindowTable) -> tuple[dict, list[dict]]:
    """Left: each layer's heads that put over half their weight on the first token ([layers, heads] shares). Right: the lab's measured
    perplexity against the window (every layer windowed), without and with the first token kept, and the whole
    cache's as a line."""
    layout = _sinks_layout(table, table.row(None).perplexity, first_token_share)
    csv: list[dict] = [
        {"layer": layer, "heads_over_half_on_first_token": count}
        for layer, count in enumerate(sink_heads(first_token_share))
    ]
    csv += [
        {"window": r.window, "sink_tokens": r.sink_tokens, "pattern": r.pattern, "perplexity": r.perplexity}
        for r in table.rows
        if r.pattern in (None, "every")
    ]
    return {
        "data": _sinks_traces(first_token_share, table),
        "layout": layout,
        "narrow": narrow(_sinks_phone(layout)),
    }, csv


def _key_bits_traces(result: KeyBits, head: int) -> list[dict]:
    """Each layout's error by channel (bars), and each channel's key size (a line on its own scale)."""
    channels = list(range(result.key_rms.shape[1]))
    data: list[dict] = []
    for grouping in ("token", "channel"):
        name = _("per token") if grouping == "token" else _("per channel")
        data.append(
            {
                "type": "bar",
                "x": channels,
                "y": [float(v) for v in result.error_rms[grouping][head]],
                "name": _("error, {layout}", layout=name),
                "marker": {"color": LAYOUT_COLORS[grouping]},
                "hovertemplate": _("channel %{x}: error %{y:.3f}") + "<extra></extra>",
            }
        )
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": channels,
            "y": [float(v) for v in result.key_rms[head]],
            "yaxis": "y2",
            "name": _("key size (RMS)"),
            "line": {"color": "#22252b", "width": 2},
            "hovertemplate": _("channel %{x}: key RMS %{y:.2f}") + "<extra></extra>",
        }
    )
    return data


HEADROOM = 1.4  # a scale's end over its highest value


def _key_bits_layout(result: KeyBits, head: int) -> dict:
    """The title, the grouped bars' axes, the size's hidden scale, and the largest channel named."""
    width = result.key_rms.shape[1]
    outlier = int(np.argmax(result.key_rms[head]))
    # Both scales end a third above their highest value: the band left clear on top holds the outlier's name, off
    # the bars and the line
    errors = max(float(result.error_rms[layout][head].max()) for layout in result.error_rms)
    largest = float(result.key_rms[head][outlier])
    layout = {
        "title": {
            "text": _(
                "Layer {layer}, KV head {head}: keys at {bits} bits, error by channel",
                layer=result.layer,
                head=head,
                bits=result.bits,
            )
        },
        "barmode": "group",
        "bargap": 0.1,
        "xaxis": {"title": {"text": _("channel")}, "range": [-0.6, width - 0.4]},
        "yaxis": {"title": {"text": _("error (RMS)")}, "range": [0, HEADROOM * errors]},
        # the key's size only shows where the outliers are (its hover gives the value): no second scale to read
        "yaxis2": {
            "overlaying": "y",
            "side": "right",
            "range": [0, HEADROOM * largest],
            "showticklabels": False,
            "showgrid": False,
        },
        "annotations": [
            {
                "x": outlier,
                "y": largest,
                "yref": "y2",
                "text": _("outlier channel {channel}", channel=outlier),
                "showarrow": True,
                "arrowhead": 2,
                # the label towards the middle of the plot, where it has room, in the clear band on top
                "ax": -40 if outlier > width / 2 else 40,
                "ayref": "y2",
                "ay": (1 + HEADROOM) / 2 * largest,
                "yanchor": "middle",
                "xanchor": "right" if outlier > width / 2 else "left",
            }
        ],
        "height": 460,
        "margin": {"t": 60, "b": 60, "l": 60, "r": 20},
        "legend": {"orientation": "h", "y": -0.2, "x": 0, "yanchor": "top"},
    }
    return layout


def key_bits_figure(result: KeyBits, head: int) -> tuple[dict, list[dict]]:
    """KV head `head`'s channels: the error each layout leaves (bars), and how large each channel is (a line)."""
    width = result.key_rms.shape[1]
    csv = [
        {
            "layer": result.layer,
            "kv_head": h,
            "channel": c,
            "key_rms": float(result.key_rms[h][c]),
            "error_per_token": float(result.error_rms["token"][h][c]),
            "error_per_channel": float(result.error_rms["channel"][h][c]),
        }
        for h in range(result.key_rms.shape[0])
        for c in range(width)
    ]
    return {"data": _key_bits_traces(result, head), "layout": _key_bits_layout(result, head)}, csv
