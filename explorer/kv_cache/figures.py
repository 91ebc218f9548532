"""The KV cache page's figures, as plain dicts (a go.Figure would be validated when built and again when sent): bytes
held step by step, the difference from a full recompute, and whole models' caches against a memory budget."""

from __future__ import annotations

from typing import Any

import numpy as np

from attn_core import PRESETS, ModelPreset
from explorer.charts import VARIANT_COLORS, count_axis, log_bytes_axis, unit_axis
from explorer.glossary import design_name
from explorer.i18n import _, format_bytes, n_
from explorer.kinds.registry import KINDS
from explorer.labels import apart
from explorer.probes import FLOAT32_TOLERANCE
from explorer.probes.kv_cache import (
    DecodeTrace,
    DesignTrace,
    MemoryBudget,
    ModelRow,
    model_bytes,
    sequences_that_fit,
    token_grid,
    what_fits,
    what_if_configs,
)

from .text import row_label, shown_name

DIFF_FLOOR = 1e-10  # where an exact zero is drawn on the log axis
PITFALL_COLOR = "#d4a017"  # whole-model rows: the published layer cached with repeated heads


def color_of(name: str) -> str:
    """A cache's color is its variant's; the pitfall's line is dotted in the same color."""
    return VARIANT_COLORS[name.split()[0].lower()]


def cache_size_figure(traces: dict[str, DecodeTrace], step: int, *, preallocated: bool = True) -> dict:
    """Bytes held vs tokens generated: measured (markers), closed form (wide pale line under them), preallocated
    capacity (step line; `preallocated=False` leaves it out where nothing explains it, as on a lesson's slide), and
    markers at the chosen step (the page's ▶ Play moves the step, and with it the log and the table: no browser-side
    animation that would move the markers alone).

    A plain dict, as every figure here: a go.Figure would be validated when built and again when sent (with one frame
    per step, that alone was most of a rerun).
    """
    data = [line for name, trace in traces.items() for line in _bytes_lines(name, trace)[: 3 if preallocated else 2]]
    layout = _cache_size_layout(traces, preallocated)
    data.append(_markers_at(traces, step, layout["yaxis"]["range"]))
    return {"data": data, "layout": layout}


def _bytes_lines(name: str, trace: DecodeTrace) -> list[dict]:
    """One cache's three lines: its closed form, its measured bytes and what it has preallocated."""
    color = color_of(name)
    common = {"type": "scatter", "x": list(range(len(trace.nbytes))), "legendgroup": name}
    shown = shown_name(name)
    repeated = name.endswith("repeated")
    # A repeated-heads cache lands exactly on MHA's line: drawn as open rings over it, so MHA stays visible.
    formula_line = {"color": color, "width": 1, "dash": "dot"} if repeated else {"color": color, "width": 9}
    return [
        common
        | {
            "y": trace.formula_nbytes,
            "mode": "lines",
            "name": _("{name} formula", name=shown),
            "showlegend": False,
            "opacity": 0.8 if repeated else 0.25,
            "line": formula_line,
            "hovertemplate": _("{name} formula: {bytes} bytes", name=shown, bytes="%{y:,}") + "<extra></extra>",
        },
        common
        | {
            "y": trace.nbytes,
            "name": shown,
            "customdata": trace.tokens_held,
            "mode": "markers" if repeated else "lines+markers",
            # rings wide and thick enough to be seen around MHA's points from the back of a room
            "marker": {"size": 13, "symbol": "circle-open", "line": {"width": 2.5}} if repeated else {"size": 5},
            "line": {"color": color, "width": 2},
            "hovertemplate": _(
                "{name}, step {step} ({held} tokens held): {bytes} bytes",
                name=shown,
                step="%{x}",
                held="%{customdata}",
                bytes="%{y:,}",
            )
            + "<extra></extra>",
        },
        common
        | {
            "y": trace.capacity_nbytes,
            "mode": "lines",
            "name": _("{name} preallocated", name=shown),
            "showlegend": False,
            "line": {"color": color, "width": 1, "shape": "hv", "dash": "dash"},
            "hovertemplate": _("{name} preallocated: {bytes} bytes", name=shown, bytes="%{y:,}") + "<extra></extra>",
        },
    ]


def _markers_at(traces: dict[str, DecodeTrace], step: int, y_range: list[float]) -> dict:
    """One trace holding every cache's point at the step, each named on the chart (not only in the legend): left of
    it, where its rising line leaves room, above or below as the other names allow; caches holding the same bytes
    (the repeated heads on MHA's line) share one name."""
    names = list(traces)
    held = [traces[name].nbytes[step] for name in names]
    labels: dict[int, list[str]] = {}
    for name, nbytes in zip(names, held, strict=True):
        labels.setdefault(nbytes, []).append(shown_name(name))
    first = {nbytes: names[held.index(nbytes)] for nbytes in labels}
    text = [" = ".join(labels[n]) if first[n] == name else "" for name, n in zip(names, held, strict=True)]
    steps = len(next(iter(traces.values())).nbytes) - 1
    # from the largest cache down: each name above its point unless the one above took that room
    order = sorted(range(len(names)), key=lambda i: -held[i])
    sides = apart(
        [(step, held[i], text[i]) for i in order],
        (-0.05 * steps, 1.05 * steps),
        (y_range[0], y_range[1]),
        ("top left", "bottom right", "bottom left", "middle left"),
    )
    position = dict(zip(order, sides, strict=True))
    return {
        "type": "scatter",
        "x": [step] * len(names),
        "y": held,
        "customdata": [shown_name(name) for name in names],
        "text": text,
        "mode": "markers+text",
        "textposition": [position[i] for i in range(len(names))],
        "textfont": {"color": [color_of(name) for name in names], "size": 12},
        "cliponaxis": False,
        "name": _("at the step"),
        "showlegend": False,
        "marker": {"color": [color_of(name) for name in names], "size": 14, "line": {"color": "white", "width": 2}},
        "hovertemplate": _("{name}, step {step}: {bytes} bytes", name="%{customdata}", step="%{x}", bytes="%{y:,}")
        + "<extra></extra>",
    }


def _cache_size_layout(traces: dict[str, DecodeTrace], preallocated: bool) -> dict:
    any_trace = next(iter(traces.values()))
    highest = max(max(t.capacity_nbytes + t.nbytes if preallocated else t.nbytes) for t in traces.values())
    return {
        "title": {"text": _("Bytes held after each step (batch {batch})", batch=any_trace.batch)},
        "xaxis": {"title": {"text": _("tokens generated after a prompt of {n}", n=any_trace.prompt_len)}}
        | count_axis(any_trace.steps),
        "yaxis": {"title": {"text": _("cache held ({dtype}, one layer)", dtype=any_trace.storage_dtype)}}
        | unit_axis(1.05 * highest),
        "height": 500,
        "margin": {"t": 60, "b": 50, "l": 70, "r": 20},
        "legend": {"groupclick": "togglegroup"},
    }


def design_size_figure(designs: dict[str, DesignTrace], variants: dict[str, DecodeTrace], step: int) -> dict:
    """The designs' caches step by step: bytes held (solid, dots) and bytes the step's query read (dashed, rings),
    each over its closed form (a wide pale line), beside the variants' held bytes (thin dotted lines) for scale; log
    bytes, so a window's plateau, a state's flat line and a quantised cache's fraction all show."""
    data: list[dict] = []
    for name, trace in variants.items():
        if name.endswith("repeated"):
            continue
        data.append(
            {
                "type": "scatter",
                "x": list(range(len(trace.nbytes))),
                "y": trace.nbytes,
                "mode": "lines",
                "name": name,
                "legendgroup": name,
                "line": {"color": color_of(name), "width": 1.5, "dash": "dot"},
                "hovertemplate": _("{name} held, step {step}: {bytes} bytes", name=name, step="%{x}", bytes="%{y:,}")
                + "<extra></extra>",
            }
        )
    for name, design_trace in designs.items():
        data += _design_lines(name, design_trace)
    values = [v for t in designs.values() for v in t.nbytes + t.read_nbytes if v > 0]
    values += [v for n, t in variants.items() if not n.endswith("repeated") for v in t.nbytes if v > 0]
    any_trace = next(iter(designs.values()))
    layout = {
        "title": {"text": _("Held and read after each step (batch {batch}, one layer)", batch=any_trace.batch)},
        "xaxis": {"title": {"text": _("tokens generated after a prompt of {n}", n=any_trace.prompt_len)}}
        | count_axis(any_trace.steps),
        "yaxis": {"title": {"text": _("bytes ({dtype}, log scale)", dtype=any_trace.storage_dtype)}}
        | log_bytes_axis(min(values, default=1), max(values, default=2)),
        "shapes": [_step_line(step)],
        "height": 500,
        "margin": {"t": 60, "b": 50, "l": 70, "r": 20},
        # one entry a design (its held and read lines toggle together) and one a variant, below the plot: fourteen
        # entries beside it scrolled, and took most of a phone's width
        "legend": _legend_below()
        | {"groupclick": "togglegroup", "title": {"text": _("solid: held · dashed: read · dotted: a variant's held")}},
    }
    return {"data": data, "layout": layout}


def _design_lines(name: str, trace: DesignTrace) -> list[dict]:
    """One design's four lines: held and read, each measured over its closed form."""
    color, shown = KINDS[name].color, design_name(name)
    common = {"type": "scatter", "x": list(range(len(trace.nbytes))), "legendgroup": name}
    lines = []
    for values, formula, what, dash, marker, in_legend in (
        (trace.nbytes, trace.formula_nbytes, _("held"), "solid", {"size": 5}, True),
        (trace.read_nbytes, trace.formula_read_nbytes, _("read"), "dash", {"size": 7, "symbol": "circle-open"}, False),
    ):
        label = _("{name} {what}", name=shown, what=what)
        lines.append(
            common
            | {
                "y": formula,
                "mode": "lines",
                "name": _("{name} formula", name=label),
                "showlegend": False,
                "opacity": 0.25,
                "line": {"color": color, "width": 9},
                "hoverinfo": "skip",
            }
        )
        lines.append(
            common
            | {
                "y": values,
                "mode": "lines+markers",
                "name": shown,
                "showlegend": in_legend,  # the design's one entry: the legend's title tells held from read
                "marker": marker,
                "line": {"color": color, "width": 2, "dash": dash},
                "hovertemplate": _("{name}, step {step}: {bytes} bytes", name=label, step="%{x}", bytes="%{y:,}")
                + "<extra></extra>",
            }
        )
    return lines


def diff_figure(traces: dict[str, DecodeTrace], step: int) -> dict:
    """Each cache's largest difference from a full recompute, step by step, on a log axis with the float32 budget."""
    data = [_diff_line(name, trace) for name, trace in traces.items()]
    layout = {
        "title": {"text": _("Largest difference from a full recompute without cache (float32)")},
        "xaxis": {"title": {"text": _("tokens generated (0 = the prefilled prompt)")}}
        | count_axis(max(len(t.max_abs_diff) for t in traces.values()) - 1),
        # Powers of ten (10⁻⁶), as the tolerance reads: Plotly's SI prefixes (1µ, 100n) read as units
        "yaxis": {
            "title": {"text": _("max |cached − full|")},
            "type": "log",
            "range": [-10.5, -3.5],
            "exponentformat": "power",
        },
        "shapes": [_tolerance_line(), _step_line(step)],
        "annotations": [
            {
                "text": _("{tolerance} budget", tolerance=f"{FLOAT32_TOLERANCE:.0e}"),
                "xref": "paper",
                "x": 0,
                "y": -5,
                "yanchor": "bottom",
                "xanchor": "left",
                "showarrow": False,
            },
        ],
        "height": 360,
        "margin": {"t": 60, "b": 50, "l": 70, "r": 20},
    }
    return {"data": data, "layout": layout}


def _diff_line(name: str, trace: DecodeTrace) -> dict:
    return {
        "type": "scatter",
        "x": list(range(len(trace.max_abs_diff))),
        "y": [max(d, DIFF_FLOOR) for d in trace.max_abs_diff],
        "customdata": trace.max_abs_diff,
        "mode": "lines+markers",
        "name": shown_name(name),
        "marker": {"size": 5},
        "line": {"color": color_of(name), "dash": "dot" if name.endswith("repeated") else "solid"},
        "hovertemplate": _(
            "{name}, step {step}: max |Δ| = {diff}", name=shown_name(name), step="%{x}", diff="%{customdata:.2e}"
        )
        + "<extra></extra>",
    }


def _tolerance_line() -> dict:
    """The float32 tolerance across the plot."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": FLOAT32_TOLERANCE,
        "y1": FLOAT32_TOLERANCE,
        "line": {"color": "#b03030", "dash": "dash"},
    }


def _step_line(step: int) -> dict:
    """A thin upright line at the chosen step."""
    return {
        "type": "line",
        "yref": "paper",
        "y0": 0,
        "y1": 1,
        "x0": step,
        "x1": step,
        "line": {"color": "#888", "width": 1},
    }


def row_line(row: ModelRow) -> dict:
    """A model row's line: the published layer solid, what-ifs dashed, the repeated-heads pitfall dotted."""
    color = PITFALL_COLOR if row.repeated_heads else VARIANT_COLORS[row.variant]
    dash = "solid" if row.key == "published" else ("dot" if row.repeated_heads else "dash")
    return {"color": color, "dash": dash, "width": 3 if row.key == "published" else 2}


def scale_figure(
    preset_name: str, rows: list[ModelRow], what_if: dict, *, batch: int, dtype: str, budget: MemoryBudget
) -> tuple[dict, list[dict]]:
    """Whole-model cache vs tokens per sequence for `batch` sequences, one line per way of keeping it, with the memory
    left after the weights. Lines: closed form on a grid (exact bytes); diamonds: measured on the meta device at the
    full context. The bytes are on a log axis: the ways of keeping the cache differ by factors (MHA's cache is h times
    MQA's), and one sequence's cache is a small fraction of a GPU's memory — on a linear axis against the budget
    they would all lie flat along zero, one on another; on a log axis each sits a constant ratio from the others."""
    preset = PRESETS[preset_name]
    data, csv = _cache_lines(preset, rows, what_if_configs(preset, **what_if), batch=batch, dtype=dtype)
    shapes, annotations = [], []
    lowest = min(min(trace["y"]) for trace in data)
    highest = max(max(trace["y"]) for trace in data)
    if budget.left > 0:
        # The budget line always inside the plot, with room above it so that neither it nor its label (under it)
        # meets the title; lines leaving the top ran out long before.
        highest = min(max(highest, 4 * budget.left), 8 * budget.left)
        data += _running_out(preset, rows, budget.left, batch)
        shapes.append(_budget_line(budget.left))
        annotations.append(_budget_label(budget.left))
    layout = {
        "title": {
            "text": n_(
                "{model}: KV cache of {n} sequence × {layers} layers ({dtype})",
                "{model}: KV cache of {n} sequences × {layers} layers ({dtype})",
                batch,
                model=preset.name,
                layers=preset.n_layers,
                dtype=dtype,
            )
        },
        "xaxis": {"title": {"text": _("tokens per sequence")}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": _("KV cache, whole model (log scale)")}} | log_bytes_axis(lowest, highest),
        "shapes": shapes,
        "annotations": annotations,
        "height": 540,
        "margin": {"t": 60, "b": 50, "l": 80, "r": 20},
        "legend": _legend_below(),
    }
    return {"data": data, "layout": layout}, csv


def _legend_below() -> dict:
    """Below the plot: beside it, five long names took half a phone's width and ran over the budget's label."""
    return {"font": {"size": 11}, "orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"}


def _budget_line(left: int) -> dict:
    """The memory left after the weights, across the plot."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": left,
        "y1": left,
        "line": {"color": "#b03030", "width": 2},
    }


def _budget_label(left: int) -> dict:
    return {
        "text": _("memory left after the weights: {size}", size=format_bytes(left)),
        "xref": "paper",
        "x": 0.02,
        "y": float(np.log10(left)),  # a log axis places annotations by the exponent
        "yanchor": "top",  # under the line, inside the plot: the line may sit at its top, by the title
        "xanchor": "left",
        "showarrow": False,
        "font": {"color": "#b03030"},
    }


def _cache_lines(
    preset: ModelPreset, rows: list[ModelRow], configs: dict, *, batch: int, dtype: str
) -> tuple[list[dict[str, Any]], list[dict[str, object]]]:
    """Each way of keeping the cache: its closed-form line over the token grid and its measured diamond at the full
    context, and the line's points for the CSV."""
    grid = [t for t in token_grid(preset) if t > 0]  # a log axis has no 0 bytes (the CSV has the whole grid)
    data: list[dict[str, Any]] = []
    csv: list[dict[str, object]] = []
    for row in rows:
        cfg = preset.attention if row.key == "published_repeated" else configs[row.key]
        exact = [
            model_bytes(preset, cfg, batch=batch, tokens=t, dtype=dtype, repeated_heads=row.repeated_heads)
            for t in grid
        ]
        data.append(
            {
                "type": "scatter",
                "x": grid,
                "y": exact,
                "customdata": exact,
                "text": [format_bytes(b) for b in exact],
                "mode": "lines",
                "name": row_label(row),
                "legendgroup": row.key,
                "line": row_line(row),
                "hovertemplate": _(
                    "{label}<br>{tokens} tokens: {size} ({bytes} bytes)",
                    label=row_label(row),
                    tokens="%{x:,}",
                    size="%{text}",
                    bytes="%{customdata:,}",
                )
                + "<extra></extra>",
            }
        )
        measured = row.model_bytes_batch_measured
        data.append(
            {
                "type": "scatter",
                "x": [preset.context_len],
                "y": [measured],
                "customdata": [measured],
                "mode": "markers",
                "name": _("{label} (measured)", label=row_label(row)),
                "legendgroup": row.key,
                "showlegend": False,
                "marker": {"color": row_line(row)["color"], "size": 10, "symbol": "diamond"},
                "hovertemplate": _("measured on the meta device: {bytes} bytes", bytes="%{customdata:,}")
                + f"<extra>{row_label(row)}</extra>",
            }
        )
        csv += [
            {"cache": row_label(row), "tokens": t, "batch": batch, "bytes": b}
            for t, b in zip([0, *grid], [0, *exact], strict=True)
        ]
    return data, csv


def _running_out(preset: ModelPreset, rows: list[ModelRow], left: int, batch: int) -> list[dict[str, Any]]:
    """A cross where each way of keeping the cache fills the memory left, if it does before the full context."""
    marks: list[dict[str, Any]] = []
    for row in rows:
        fit = what_fits(preset, row, budget_left=left, batch=batch)
        if fit.tokens_per_sequence < preset.context_len and not fit.window_bound:
            marks.append(
                {
                    "type": "scatter",
                    "x": [fit.tokens_per_sequence],
                    "y": [left],
                    "mode": "markers",
                    "name": _("{label} runs out", label=row_label(row)),
                    "legendgroup": row.key,
                    "showlegend": False,
                    "marker": {"color": row_line(row)["color"], "size": 12, "symbol": "x"},
                    "hovertemplate": _(
                        "{label}: memory full at {tokens} tokens per sequence", label=row_label(row), tokens="%{x:,}"
                    )
                    + "<extra></extra>",
                }
            )
    return marks


def users_figure(
    preset_name: str, rows: list[ModelRow], *, budget: MemoryBudget, dtype: str
) -> tuple[dict, list[dict]]:
    """Sequences whose caches fit beside the weights, vs the tokens each holds (log scale): concurrent users."""
    preset = PRESETS[preset_name]
    grid = [t for t in token_grid(preset) if t > 0]
    data, csv = [], []
    for row in rows:
        fits = [sequences_that_fit(preset, row.bytes_per_token_model, budget_left=budget.left, tokens=t) for t in grid]
        data.append(
            {
                "type": "scatter",
                "x": grid,
                "y": fits,
                "mode": "lines",
                "name": row_label(row),
                "line": row_line(row) | {"shape": "hv"},
                "hovertemplate": _(
                    "{label}<br>{n} sequences of {tokens} tokens", label=row_label(row), n="%{y:,}", tokens="%{x:,}"
                )
                + "<extra></extra>",
            }
        )
        csv += [
            {"cache": row_label(row), "tokens_per_sequence": t, "sequences_that_fit": n}
            for t, n in zip(grid, fits, strict=True)
        ]
    layout = {
        "title": {
            "text": _("How many sequences fit in {size} ({dtype})", size=format_bytes(max(budget.left, 0)), dtype=dtype)
        },
        "xaxis": {"title": {"text": _("tokens per sequence")}},
        "yaxis": {"title": {"text": _("sequences served at once")}, "type": "log", "dtick": 1},
        "height": 500,
        "margin": {"t": 60, "b": 50, "l": 70, "r": 20},
        "legend": _legend_below(),
    }
    return {"data": data, "layout": layout}, csv
