"""The axes page's figures, as plain dicts: caches against context on log axes (each model, or one model's layer
kinds), and the four axes' cuts at one length."""

from __future__ import annotations

import math
from collections.abc import Sequence

from attn_core import PUBLISHED
from explorer.charts import in_two_lines, log_bytes_axis
from explorer.grid import narrow
from explorer.i18n import _, format_bytes
from explorer.labels import LABEL_AT, LABEL_PX, PLOT_PX, end_traces
from explorer.present import FONT_SCALE, HEIGHT_SCALE
from explorer.probes.axes import AxisCuts, ModelCurves

from .text import AXES, kind_label, sig

PALETTE = (
    "#3b6ea8", "#c4573a", "#4a9a6b", "#8a5cb8", "#d4a017", "#17a2b8",
    "#d45fa8", "#6b6b6b", "#8c564b", "#9aa01a", "#1f3b70", "#e07b00",
)  # fmt: skip
MODEL_COLORS = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(PUBLISHED)}
TOKEN_TICKS = [1024 * 4**n for n in range(6)]  # 1K … 1M


def token_label(tokens: int) -> str:
    return f"{tokens // 1048576}M" if tokens >= 1048576 else f"{tokens // 1024}K"


def context_axis() -> dict:
    """The context axis of a chart of caches against length: 1K to 1M tokens, log, ticks at powers of four."""
    return {
        "title": {"text": _("context T (tokens, log scale)")},
        "type": "log",
        "tickvals": TOKEN_TICKS,
        "ticktext": [token_label(t) for t in TOKEN_TICKS],
        "range": [math.log10(900), math.log10(1.2 * 1048576)],
    }


def _breakdown(model: ModelCurves, measure: str, i: int) -> str:
    return "<br>".join(
        _(
            "{kind} × {count}: {bytes}",
            kind=kind_label(kind.kind),
            count=kind.count,
            bytes=format_bytes(getattr(kind, measure)[i]),
        )
        for kind in model.kinds
    )


def context_figure(
    models: list[ModelCurves],
    measure: str,
    tokens: int,
    *,
    by_kind: bool = False,
    named_ends: bool = True,
    projector: bool = False,
    first: Sequence[str] = (),
) -> tuple[dict, list[dict]]:
    """Bytes held (or read by one decoding step) against context, log-log: one line per model, solid within its
    published context and dotted beyond; or, by_kind, one model's total and each kind of its layers. Markers at the
    reader's length; the hover lists the layer kinds. projector: drawn in presenter mode (explorer.present), whose
    fonts would double the names past the lines' ends: they keep PROJECTED_NAME_PX and the plot grows to hold them.
    first: the models a legend lists first, in that order (those a slide's words name: a legend of 13 models at a
    slide's size scrolls, and its last entries were out of sight)."""
    data: list[dict] = []
    csv: list[dict] = []
    for index, model in enumerate(models):
        color = PALETTE[index % len(PALETTE)] if by_kind else MODEL_COLORS.get(model.name, PALETTE[0])
        data += _model_lines(
            model, measure, color, by_kind, list(first).index(model.name) + 1 if model.name in first else None
        )
        if by_kind:
            data += _kind_traces(model, measure)
        csv += _context_rows(model)
    data += _dots(models, measure, tokens, by_kind)
    every = [v for trace in data for v in trace["y"] if v > 0]
    title = _("Cache held against context") if measure == "held" else _("Cache read by one decoding step")
    y_axis = log_bytes_axis(min(every, default=1), max(every, default=2), most_ticks=8)
    ends = _last_parts(data) if named_ends else []  # a slide's legend stands beside its plot: no room past the ends
    room = _named_ends_room(ends, projector)
    data += end_traces(
        [(t["name"], t["line"]["color"], t["x"][-1], t["y"][-1]) for t in ends],
        y_axis["range"],
        **(_PROJECTED_NAMES if projector else {}),
    )
    layout = _context_layout(title, models[0].batch, tokens, y_axis, room)
    # on a phone the legend takes several rows: a taller chart, the legend lower below its axis title; no room for
    # the names at the lines' ends (the legend names the lines)
    # the context axis ends at the lines' last length: the leaders to the names (left out) start there, and drew a
    # stub at the plot's right edge
    phone = layout | {
        "showlegend": True,
        "height": 760,
        "legend": {"orientation": "h", "y": -0.22, "x": 0, "yanchor": "top"},
        "xaxis": context_axis() | ({"range": [math.log10(900), math.log10(TOKEN_TICKS[-1])]} if ends else {}),
        "margin": {"t": 60, "b": 60, "l": 80, "r": 20},
    }
    # narrower than NAMES_NEED_PX (a projector's 1024 px with the sidebar open leaves ~560), the names' column would
    # squeeze the plot to a third of the chart: the legend's layout, unlabelled, as on a phone
    return {"data": data, "layout": layout, "narrow": narrow(phone, below=NAMES_NEED_PX, unlabelled=True)}, csv


def _model_lines(model: ModelCurves, measure: str, color: str, by_kind: bool, rank: int | None) -> list[dict]:
    """A model's total: solid within its published context, dotted beyond (starting where the solid part ends);
    rank: its place in the legend, if not the models' order."""
    values = getattr(model, measure)
    hover = [_breakdown(model, measure, i) for i in range(len(model.tokens))]
    template = (
        _("{model}, {tokens} tokens: {bytes} bytes", model=model.name, tokens="%{x:,}", bytes="%{y:,}")
        + "<br>%{customdata}<extra></extra>"
    )
    inside = [i for i, t in enumerate(model.tokens) if model.context is None or t <= model.context]
    beyond = [i for i in range(len(model.tokens)) if i not in inside]
    if beyond and inside:
        beyond = [inside[-1], *beyond]
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "x": [model.tokens[i] for i in part],
            "y": [values[i] for i in part],
            "customdata": [hover[i] for i in part],
            "name": model.name,
            "legendgroup": model.name,
            "showlegend": shown,
            "line": {"color": color, "dash": dash, "width": 3 if by_kind else 2},
            "hovertemplate": template,
        }
        | ({"legendrank": rank} if rank is not None else {})
        for part, dash, shown in ((inside, "solid", True), (beyond, "dot", not inside))
        if part
    ]


def _context_rows(model: ModelCurves) -> list[dict]:
    """The download's rows: a model's every kind of layer at every length."""
    return [
        {
            "model": model.name,
            "kind": kind.kind,
            "layers": kind.count,
            "tokens": t,
            "held_bytes": kind.held[i],
            "read_bytes": kind.read[i],
        }
        for kind in model.kinds
        for i, t in enumerate(model.tokens)
    ]


def _kind_traces(model: ModelCurves, measure: str) -> list[dict]:
    """Each kind of one model's layers as a dashed line, in a legend group of its own."""
    data: list[dict] = []
    for k_index, kind in enumerate(model.kinds):
        name = _("{kind} layers (× {count})", kind=kind_label(kind.kind), count=kind.count)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": list(model.tokens),
                "y": list(getattr(kind, measure)),
                "name": name,
                "legendgroup": name,
                "line": {"color": PALETTE[(k_index + 1) % len(PALETTE)], "dash": "dash", "width": 2},
                "hovertemplate": _(
                    "{kind} layers, {tokens} tokens: {bytes} bytes",
                    kind=kind_label(kind.kind),
                    tokens="%{x:,}",
                    bytes="%{y:,}",
                )
                + "<extra></extra>",
            }
        )
    return data


def _dots(models: list[ModelCurves], measure: str, tokens: int, by_kind: bool) -> list[dict]:
    """Each model's dot at the reader's length, in its legend group: hiding the model hides its dot."""
    data: list[dict] = []
    for m in models:
        value = getattr(m, measure)[m.at(tokens)]
        if value > 0:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [tokens],
                    "y": [value],
                    "text": [m.name],
                    "legendgroup": m.name,
                    "marker": {
                        "size": 10,
                        "color": PALETTE[0] if by_kind else MODEL_COLORS.get(m.name, PALETTE[0]),
                        "line": {"color": "white", "width": 1.5},
                    },
                    "showlegend": False,
                    "hovertemplate": "%{text}: %{y:,} B<extra></extra>",
                }
            )
    return data


def _context_layout(title: str, batch: int, tokens: int, y_axis: dict, room: dict | None) -> dict:
    """The chart's axes, T's dashed line, and room right of the plot for the names at the lines' ends (if any)."""
    y_title = _("bytes (batch {batch}, log scale)", batch=batch)
    return {
        "title": {"text": title},
        "xaxis": context_axis()
        | ({"range": [math.log10(900), math.log10(TOKEN_TICKS[-1] * LABEL_AT)]} if room else {}),
        # a slide's chart (the legend's layout) may be 342 px tall in a short window: one line overlapped its title
        "yaxis": {"title": {"text": y_title if room else in_two_lines(y_title)}} | y_axis,
        "shapes": [
            {
                "type": "line",
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "x0": tokens,
                "x1": tokens,
                "line": {"color": "#888", "width": 1, "dash": "dash"},
            }
        ],
        "hovermode": "closest",
    } | (room or {"height": 540, "margin": {"t": 60, "b": 60, "l": 80, "r": 20}, "legend": _LEGEND})


_LEGEND = {"orientation": "h", "y": -0.27, "x": 0, "yanchor": "top"}
NAMES_NEED_PX = 760


# In presenter mode the names keep this size (the page's chart text doubles): 19 names at 24 px needed a plot taller
# than the screen, and the legend that named them took 348 px of a 729-px chart. The plot is drawn PROJECTED_PLOT_PX
# tall, room for 19 names.
PROJECTED_NAME_PX = 16
PROJECTED_PLOT_PX = 440
_PROJECTED_NAMES = {
    "plot_px": PROJECTED_PLOT_PX,
    "label_px": LABEL_PX * PROJECTED_NAME_PX / 12,
    "font": PROJECTED_NAME_PX / FONT_SCALE,  # explorer.present.for_projector scales it back
}
_TOP, _BOTTOM = 80, 70  # the margins as Plotly grows them (the title below the toolbar, the ticks and the axis title)


def _named_ends_room(ends: list[dict], projector: bool) -> dict | None:
    """A plot PLOT_PX tall (the names at the ends are spread for that height; PROJECTED_PLOT_PX once presenter mode
    has scaled the height and margins, explorer.present.for_projector) with room on its right for the names, and no
    legend: the names are the legend. Below the plot it took four to ten rows, more in presenter mode, and squeezed 19
    names into 240 px; where the names do not fit (the narrow layout) the legend comes back. None without names."""
    if not ends:
        return None
    height = _TOP + PLOT_PX + _BOTTOM
    if projector:
        height = round((PROJECTED_PLOT_PX + _TOP * FONT_SCALE + _BOTTOM * (1 + FONT_SCALE) / 2) / HEIGHT_SCALE)
    return {
        "height": height,
        "margin": {"t": _TOP, "b": _BOTTOM, "l": 80, "r": 20 + 7 * max(len(t["name"]) for t in ends)},
        "showlegend": False,
    }


def _last_parts(data: list[dict]) -> list[dict]:
    """Each named line's last part (a model's dotted part, past its context, when it has one)."""
    last: dict[str, dict] = {}
    for trace in data:
        if trace["mode"] == "lines" and trace.get("name"):
            last[trace["name"]] = trace
    return list(last.values())


def _names_on_their_side(layout: dict) -> dict:
    """The grid's phone layout: the five column names have ~45 px each there and ran into each other ("字节" over
    "四者相乘"), so they are turned on their side, in a top margin that holds them."""
    return narrow(layout | {"xaxis": layout["xaxis"] | {"tickangle": -90}, "margin": layout["margin"] | {"t": 130}})


def axes_figure(
    cuts: list[AxisCuts], tokens: int, measure: str = "held", *, of: int | None = None
) -> tuple[dict, list[dict]]:
    """The four axes' cuts at one length as a grid: a row per model, a column per axis (and their product), each
    cell the factor by which the design keeps less than MHA keeping every token in 16 bits on every layer. With
    `of`, the grid is a choice of that many models, and its title says how many."""
    columns = ["layers", "tokens", "width", "bytes", "total"]
    rows = list(reversed(cuts))  # the first model on top
    z, text = [], []
    for cut in rows:
        factors = [getattr(cut, column) for column in columns]
        z.append([None if f is None else math.log2(max(f, 1e-9)) for f in factors])
        text.append(["—" if f is None else f"{sig(f)}×" for f in factors])
    top = max((abs(v) for line in z for v in line if v is not None), default=1.0)
    title = (
        _("What each design cuts, at {tokens} tokens", tokens=tokens)
        if measure == "held"
        else _("What each design's decoding step reads less of, at {tokens} tokens", tokens=tokens)
    )
    if of is not None:
        title = _("{title} ({shown} of {of} models)", title=title, shown=len(rows), of=of)
    figure: dict = {
        "data": [
            {
                "type": "heatmap",
                "x": [_(AXES[c]) for c in columns],
                "y": [cut.name for cut in rows],
                "z": z,
                "text": text,
                "texttemplate": "%{text}",
                "textfont": {"size": 13},
                "zmid": 0,
                "zmin": -top,
                "zmax": top,
                "colorscale": [[0, "#c4573a"], [0.5, "#f7f7f7"], [1, "#3b6ea8"]],
                "showscale": False,
                "xgap": 2,
                "ygap": 2,
                "hovertemplate": _("{model}, {axis}: {factor} smaller", model="%{y}", axis="%{x}", factor="%{text}")
                + "<extra></extra>",
            }
        ],
        "layout": {
            "title": {"text": title},
            "xaxis": {"side": "top", "title": {"text": ""}},
            "yaxis": {"automargin": True},
            "height": 110 + 30 * len(rows),
            "margin": {"t": 90, "b": 20, "l": 150, "r": 20},
        },
    }
    figure["narrow"] = _names_on_their_side(figure["layout"])
    csv = [
        {"model": cut.name, "tokens": tokens, "measure": measure, "cache_kinds": " ".join(cut.cache_kinds)}
        | {f"{column}_cut": getattr(cut, column) for column in columns}
        for cut in cuts
    ]
    return figure, csv
