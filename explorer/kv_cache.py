"""The KV cache page's view controls, cached probes, tables and figures (built from explorer.probes.decode/models)."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from attn_core import PRESETS, AttentionConfig, ModelPreset, kv_head_counts
from explorer.probes import FLOAT32_TOLERANCE
from explorer.probes.decode import (
    MAX_PROMPT_LEN,
    MAX_STEPS,
    MAX_TRACE_BATCH,
    DecodeTrace,
    TraceTooHeavy,
    check_trace_bounds,
    decode_trace,
)
from explorer.probes.models import (
    MemoryBudget,
    ModelRow,
    model_bytes,
    model_rows,
    sequences_that_fit,
    token_grid,
    what_fits,
    what_if_configs,
)

from .charts import BYTE_UNITS, VARIANT_COLORS, count_axis, format_bytes, shape_text, unit_axis
from .i18n import N_, _, fmt, n_, sentences
from .params import Choice, Flag, IntRange
from .settings import Settings
from .work import takes_turns

# --- the page's own controls, all in the link -----------------------------------------------------------------------
PROMPT = IntRange("kv_prompt", 1, MAX_PROMPT_LEN, 12)
STEPS = IntRange("kv_steps", 1, MAX_STEPS, 40)
STEP = IntRange("kv_step", 0, MAX_STEPS, STEPS.default)  # by default the last step generated
REPEAT = Flag("kv_repeat", False)
MODEL = Choice("kv_model", tuple(PRESETS), "Llama-2-7B")
GROUPS = Choice("kv_groups", tuple(range(1, 129)), 8)  # narrowed to the divisors of the model's head count
LATENT = Choice("kv_latent", (64, 128, 256, 384, 512, 768, 1024, 1536, 2048), 512)
ROPE = Choice("kv_rope", (16, 32, 64, 128, 256), 64)
GPU_GIB = Choice("kv_gpu_gib", (16, 24, 32, 40, 48, 64, 80, 96, 128, 141, 192), 80)
GPUS = Choice("kv_gpus", (1, 2, 4, 8, 16, 32, 64), 1)

# What the core's presets say they leave out (ModelPreset.not_modelled), for the catalog: the page shows
# _(preset.not_modelled), so a note not listed here stays in English (and tests/i18n says so).
PRESET_NOTES = (
    N_("Gemma 2 alternates 4096-token sliding-window layers with global ones and soft-caps logits at 50."),
    N_("YaRN context extension (rope scaling and its softmax mscale) is not applied here."),
)

DIFF_FLOOR = 1e-10  # where an exact zero is drawn on the log axis
PITFALL_COLOR = "#d4a017"  # whole-model rows: the published layer cached with repeated heads


def trace_batch(settings: Settings) -> int:
    return min(settings.batch, MAX_TRACE_BATCH)


def group_options(n_heads: int) -> tuple[int, ...]:
    """KV group counts for a what-if: divisors of the head count strictly between MQA (1) and MHA (n_heads)."""
    counts = kv_head_counts(n_heads)
    return tuple(counts[1:-1]) or tuple(counts)


def parameter_text(count: float) -> str:
    """A model's parameter count as it is usually said: 124 M, 6.74 B, 671 B."""
    return f"{count / 1e9:.3g} B" if count >= 1e9 else f"{count / 1e6:.3g} M"


def preferred_groups(preset_name: str) -> int:
    """The what-if's starting group count: the model's own KV heads if it is GQA, else the divisor nearest 8."""
    attention = PRESETS[preset_name].attention
    options = group_options(attention.n_heads)
    if attention.variant == "gqa" and attention.n_kv_heads in options:
        return attention.n_kv_heads
    return min(options, key=lambda g: (max(g, 8) / min(g, 8), g))


# --- step-by-step decode --------------------------------------------------------------------------------------------
def trace_plan(settings: Settings, *, repeated: bool) -> list[tuple[str, AttentionConfig, bool]]:
    """(name, config, repeated_heads) of every cache the decode section follows: each variant, plus the pitfall of
    each grouped variant whose query heads share KV heads (group size > 1) when asked."""
    plan = []
    for variant, cfg in settings.configs().items():
        plan.append((variant.upper(), cfg, False))
    if repeated:
        for variant, cfg in settings.configs().items():
            if variant != "mla" and cfg.group_size > 1:
                plan.append((f"{variant.upper()} repeated", cfg, True))
    return plan


def too_heavy(cfg: AttentionConfig, settings: Settings, prompt_len: int, steps: int) -> str | None:
    """Why this layer is not traced step by step (a sentence in this run's language), or None."""
    try:
        check_trace_bounds(cfg, prompt_len=prompt_len, steps=steps, batch=trace_batch(settings))
    except TraceTooHeavy as reason:
        return _(reason.message, **reason.values)
    return None


@st.cache_data(max_entries=128, show_spinner=False)  # the spinner is traces_for's, in the reader's language
@takes_turns
def cached_trace(
    cfg: AttentionConfig, prompt_len: int, steps: int, batch: int, seed: int, dtype: str, repeated: bool
) -> DecodeTrace:
    """One decode trace (cached: a rerun that only moves the step reads it back)."""
    return decode_trace(
        cfg, prompt_len=prompt_len, steps=steps, batch=batch, seed=seed, storage_dtype=dtype, repeated_heads=repeated
    )


def traces_for(
    settings: Settings, prompt_len: int, steps: int, repeated: bool
) -> tuple[dict[str, DecodeTrace], list[str]]:
    """name -> trace for every cache that can be traced, and a sentence for each one skipped as too heavy. Names are
    the plan's ("GQA repeated"): shown through shown_name()."""
    traces, skipped = {}, []
    with st.spinner(_("Decoding token by token through the real layers…")):
        for name, cfg, is_repeated in trace_plan(settings, repeated=repeated):
            reason = too_heavy(cfg, settings, prompt_len, steps)
            if reason:
                skipped.append(_("{cache}: {reason}", cache=shown_name(name), reason=reason))
                continue
            traces[name] = cached_trace(
                cfg, prompt_len, steps, trace_batch(settings), settings.seed, settings.dtype, is_repeated
            )
    return traces, skipped


def shown_name(name: str) -> str:
    """A cache's name as the page shows it: "GQA", or the pitfall "GQA repeated" in this run's language."""
    if name.endswith(" repeated"):
        return _("{variant} repeated", variant=name.removesuffix(" repeated"))
    return name


def color_of(name: str) -> str:
    """A cache's color is its variant's; the pitfall's line is dotted in the same color."""
    return VARIANT_COLORS[name.split()[0].lower()]


def cache_names(trace: DecodeTrace) -> tuple[str, str]:
    """How the textbook names the two cached tensors."""
    return ("c_kv", "k_rope") if trace.variant == "mla" else ("k", "v")


def step_log(traces: dict[str, DecodeTrace], step: int) -> str:
    """A decode loop's log line ("Step i: K cache shape ...") for every cache at this step."""
    width = max(len(name) for name in traces)
    lines = []
    for name, trace in traces.items():
        first, second = cache_names(trace)
        shapes = trace.shapes[step]
        shown = {"k": "K cache", "v": "V cache", "c_kv": "c_kv cache", "k_rope": "k_rope cache"}
        lines.append(
            f"{name:<{width}}  Step {step}: {shown[first]} shape: {shape_text(shapes[first])}, "
            f"{shown[second]} shape: {shape_text(shapes[second])}  ({trace.nbytes[step]:,} bytes)"
        )
    return "\n".join(lines)


def step_table(traces: dict[str, DecodeTrace], step: int) -> list[dict]:
    rows = []
    for name, trace in traces.items():
        first, second = cache_names(trace)
        shapes = trace.shapes[step]
        diff = trace.max_abs_diff[step]
        rows.append(
            {
                _("Cache"): shown_name(name),
                _("Agree"): "✓" if trace.nbytes[step] == trace.formula_nbytes[step] else "✗",
                _("Tokens held"): trace.tokens_held[step],
                _("Stored tensors [B, heads, tokens, width]"): (
                    f"{first} {shape_text(shapes[first])} · {second} {shape_text(shapes[second])}"
                ),
                _("Bytes held ({dtype})", dtype=trace.storage_dtype): format_bytes(trace.nbytes[step]),
                _("Formula"): format_bytes(trace.formula_nbytes[step]),
                _("Preallocated"): format_bytes(trace.capacity_nbytes[step]),
                _("max |Δ|"): f"{diff:.1e}",  # vs a full recompute: the column's help says so
            }
        )
    return rows


def cache_size_figure(traces: dict[str, DecodeTrace], step: int) -> dict:
    """Bytes held vs tokens generated: measured (markers), closed form (wide pale line under them), preallocated
    capacity (step line), and markers at the chosen step (the page's ▶ Play moves the step, and with it the log and
    the table: no browser-side animation that would move the markers alone).

    A plain dict, as every figure here: a go.Figure would be validated when built and again when sent (with one frame
    per step, that alone was most of a rerun).
    """
    data = []
    for name, trace in traces.items():
        color = color_of(name)
        steps = list(range(len(trace.nbytes)))
        common = {"type": "scatter", "x": steps, "legendgroup": name}
        shown = shown_name(name)
        repeated = name.endswith("repeated")
        # A repeated-heads cache lands exactly on MHA's line: drawn as open rings over it, so MHA stays visible.
        formula_line = {"color": color, "width": 1, "dash": "dot"} if repeated else {"color": color, "width": 9}
        data += [
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
                "marker": {"size": 9, "symbol": "circle-open"} if repeated else {"size": 5},
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
                "hovertemplate": _("{name} preallocated: {bytes} bytes", name=shown, bytes="%{y:,}")
                + "<extra></extra>",
            },
        ]
    names = list(traces)
    colors = [color_of(name) for name in names]
    labels = [shown_name(name) for name in names]

    def markers_at(s: int) -> dict:
        """One trace holding every cache's point at step s."""
        return {
            "type": "scatter",
            "x": [s] * len(names),
            "y": [traces[name].nbytes[s] for name in names],
            "text": labels,
            "mode": "markers",
            "name": _("at the step"),
            "showlegend": False,
            "marker": {"color": colors, "size": 14, "line": {"color": "white", "width": 2}},
            "hovertemplate": _("{name}, step {step}: {bytes} bytes", name="%{text}", step="%{x}", bytes="%{y:,}")
            + "<extra></extra>",
        }

    data.append(markers_at(step))
    any_trace = next(iter(traces.values()))
    layout = {
        "title": {"text": _("Bytes held after each step (batch {batch})", batch=any_trace.batch)},
        "xaxis": {"title": {"text": _("tokens generated after a prompt of {n}", n=any_trace.prompt_len)}}
        | count_axis(any_trace.steps),
        "yaxis": {"title": {"text": _("cache held ({dtype}, one layer)", dtype=any_trace.storage_dtype)}}
        | unit_axis(1.05 * max(max(t.capacity_nbytes + t.nbytes) for t in traces.values())),
        "height": 500,
        "margin": {"t": 60, "b": 50, "l": 70, "r": 20},
        "legend": {"groupclick": "togglegroup"},
    }
    return {"data": data, "layout": layout}


def cache_size_rows(traces: dict[str, DecodeTrace]) -> list[dict]:
    return [
        {
            "cache": name,
            "step": s,
            "tokens_held": trace.tokens_held[s],
            "bytes_measured": trace.nbytes[s],
            "bytes_formula": trace.formula_nbytes[s],
            "bytes_preallocated": trace.capacity_nbytes[s],
            "max_abs_diff_vs_full_recompute": trace.max_abs_diff[s],
        }
        for name, trace in traces.items()
        for s in range(len(trace.nbytes))
    ]


def diff_figure(traces: dict[str, DecodeTrace], step: int) -> dict:
    data = [
        {
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
        for name, trace in traces.items()
    ]
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
        "shapes": [
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": FLOAT32_TOLERANCE,
                "y1": FLOAT32_TOLERANCE,
                "line": {"color": "#b03030", "dash": "dash"},
            },
            {
                "type": "line",
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "x0": step,
                "x1": step,
                "line": {"color": "#888", "width": 1},
            },
        ],
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


# --- whole models ---------------------------------------------------------------------------------------------------
@st.cache_data(max_entries=128, show_spinner=False)  # the page shows a spinner in the reader's language
def cached_model_rows(
    preset_name: str, groups: int, latent: int, rope_dim: int, dtype: str, batch: int, repeated: bool, lang: str
) -> list[ModelRow]:
    """The rows hold their labels in `lang` (the run's language(), passed so that the cache is keyed by it)."""
    return model_rows(
        preset_name, groups=groups, latent=latent, rope_dim=rope_dim, dtype=dtype, batch=batch, repeated_heads=repeated
    )


def sig(value: float, digits: int = 3) -> str:
    """value to `digits` significant digits (as :.3g writes it) in the run's language: 14.2, 0.0156, 2.25."""
    text = f"{value:.{digits}g}"
    if "e" in text:  # 10**digits or more (what is shown here is never that small)
        return fmt(round(float(text)))
    return fmt(float(text), len(text.split(".")[1]) if "." in text else 0)


def model_columns(rows: list[ModelRow], preset_name: str) -> dict[str, dict]:
    """The whole-model table's columns: short headers -> their help (what they count, at which context), width and
    pinning, in this run's language. Keys in table order; model_table uses the same headers.

    At 1400 px the table has 938 px: nine columns needed 1386 (issue #28 item 8), so headers are short, the bytes of
    one layer are left to the numbers column (× the dtype's bytes) and the description is a few words. On a phone the
    way of caching stays pinned and what it costs against MHA, with its ✓, comes next, in view without scrolling."""
    preset = PRESETS[preset_name]
    held = rows[0].tokens_held
    if held < preset.context_len:
        context = _("{held} tokens (a window of {context})", held=held, context=preset.context_len)
    else:
        context = n_("{n} token", "{n} tokens", held)
    layers = n_("{n} layer", "{n} layers", preset.n_layers)
    return {
        _("Cache kept"): {"width": "medium", "pinned": True},
        _("vs MHA"): {"help": _("This cache ÷ MHA's.")},
        _("Agree"): {"help": _("The measured bytes equal the closed form's.")},
        _("Numbers / token"): {"help": _("Numbers one token leaves in one layer's cache, read off the cache.")},
        _("As GQA groups"): {"help": _("Numbers per token ÷ $2 d_h$: the GQA group count that would cache as much.")},
        _("Bytes / token"): {"help": _("One token's cache in all {layers}.", layers=layers)},
        _("One sequence"): {
            "help": _(
                "One sequence's cache at {context}, all {layers}: measured on the meta device.",
                context=context,
                layers=layers,
            )
        },
        _("One token leaves"): {
            "help": n_(
                "What one token adds to one layer's cache, read by its {n} query head.",
                "What one token adds to one layer's cache, read by all {n} query heads.",
                preset.attention.n_heads,
            )
        },
    }


def model_table(rows: list[ModelRow], preset_name: str) -> list[dict]:
    headers = list(model_columns(rows, preset_name))
    table = []
    for row in rows:
        agree = row.layer_bytes_measured == row.layer_bytes_formula and (
            row.elements_per_token_layer == row.elements_per_token_layer_formula
        )
        cells = [
            row.label,
            f"{sig(row.ratio_to_mha)}×",
            "✓" if agree else "✗",
            fmt(row.elements_per_token_layer),
            sig(row.gqa_equivalent_groups),
            format_bytes(row.bytes_per_token_model),
            format_bytes(row.model_bytes_measured),
            row.description,
        ]
        table.append(dict(zip(headers, cells, strict=True)))
    return table


def row_line(row: ModelRow) -> dict:
    """A model row's line: the published layer solid, what-ifs dashed, the repeated-heads pitfall dotted."""
    color = PITFALL_COLOR if row.repeated_heads else VARIANT_COLORS[row.variant]
    dash = "solid" if row.key == "published" else ("dot" if row.repeated_heads else "dash")
    return {"color": color, "dash": dash, "width": 3 if row.key == "published" else 2}


def log_bytes_axis(low: float, high: float) -> dict:
    """A log axis of bytes from below `low` to above `high`, ticked at powers of two in binary units (1 MiB, 4 MiB,
    16 MiB, ...: every other power when the span is wide), never Plotly's SI "B" (billion)."""
    low, high = max(low, 1.0), max(high, low * 2)
    first, last = int(np.floor(np.log2(low))), int(np.ceil(np.log2(high)))
    stride = 1 if last - first <= 8 else 2
    powers = [k for k in range(first - 1, last + 2) if k % stride == 0]
    text = []
    for k in powers:
        unit, size = next((name, size) for name, size in reversed(BYTE_UNITS) if 2**k >= size or size == 1)
        text.append(f"{2**k / size:g} {unit}")
    return {
        "type": "log",
        "tickvals": [float(2**k) for k in powers],
        "ticktext": text,
        "range": [float(np.log10(low / 1.6)), float(np.log10(high * 1.6))],
    }


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
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": budget.left,
                "y1": budget.left,
                "line": {"color": "#b03030", "width": 2},
            }
        )
        annotations.append(
            {
                "text": _("memory left after the weights: {size}", size=format_bytes(budget.left)),
                "xref": "paper",
                "x": 0.02,
                "y": float(np.log10(budget.left)),  # a log axis places annotations by the exponent
                "yanchor": "top",  # under the line, inside the plot: the line may sit at its top, by the title
                "xanchor": "left",
                "showarrow": False,
                "font": {"color": "#b03030"},
            }
        )
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
        # Below the plot: beside it, five long names took half a phone's width and ran over the budget's label.
        "legend": {"font": {"size": 11}, "orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"},
    }
    return {"data": data, "layout": layout}, csv


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
                "name": row.label,
                "legendgroup": row.key,
                "line": row_line(row),
                "hovertemplate": _(
                    "{label}<br>{tokens} tokens: {size} ({bytes} bytes)",
                    label=row.label,
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
                "name": _("{label} (measured)", label=row.label),
                "legendgroup": row.key,
                "showlegend": False,
                "marker": {"color": row_line(row)["color"], "size": 10, "symbol": "diamond"},
                "hovertemplate": _("measured on the meta device: {bytes} bytes", bytes="%{customdata:,}")
                + f"<extra>{row.label}</extra>",
            }
        )
        csv += [
            {"cache": row.label, "tokens": t, "batch": batch, "bytes": b}
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
                    "name": _("{label} runs out", label=row.label),
                    "legendgroup": row.key,
                    "showlegend": False,
                    "marker": {"color": row_line(row)["color"], "size": 12, "symbol": "x"},
                    "hovertemplate": _(
                        "{label}: memory full at {tokens} tokens per sequence", label=row.label, tokens="%{x:,}"
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
                "name": row.label,
                "line": row_line(row) | {"shape": "hv"},
                "hovertemplate": _(
                    "{label}<br>{n} sequences of {tokens} tokens", label=row.label, n="%{y:,}", tokens="%{x:,}"
                )
                + "<extra></extra>",
            }
        )
        csv += [
            {"cache": row.label, "tokens_per_sequence": t, "sequences_that_fit": n}
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
        # Below the plot: beside it, five long names took half a phone's width and ran over the budget's label.
        "legend": {"font": {"size": 11}, "orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"},
    }
    return {"data": data, "layout": layout}, csv


def fit_columns(preset_name: str, batch: int) -> dict[str, dict]:
    """The fit table's columns: short headers -> their help, in this run's language. The two answers are narrow
    (a number, "(limit)" when the context caps it), so on a phone they are in view beside the pinned row names: their
    long headers ("Tokens each of 1 sequence can reach") had pushed the second out of view."""
    preset = PRESETS[preset_name]
    if preset.sliding_window:
        limit = _(
            "(limit): the model's {context}-token context ends first; (window): past the {window}-token window the "
            "cache stops growing, so the memory never fills.",
            context=preset.context_len,
            window=preset.sliding_window,
        )
    else:
        limit = _("(limit): the model's {context}-token context ends first.", context=preset.context_len)
    return {
        _("Cache kept"): {"width": "medium", "pinned": True},
        _("Tokens each"): {
            "help": sentences(
                n_(
                    "How long each of {n} sequence can grow before the caches fill the memory left.",
                    "How long each of {n} sequences can grow before the caches fill the memory left.",
                    batch,
                ),
                limit,
            )
        },
        _("Users"): {
            "help": _(
                "Sequences of the full {context}-token context whose caches fit at once.", context=preset.context_len
            )
        },
    }


def fit_table(preset_name: str, rows: list[ModelRow], *, batch: int, budget: MemoryBudget) -> list[dict]:
    preset = PRESETS[preset_name]
    headers = list(fit_columns(preset_name, batch))
    table = []
    for row in rows:
        fit = what_fits(preset, row, budget_left=budget.left, batch=batch)
        if fit.window_bound:
            tokens = _("{context} (window)", context=preset.context_len)
        elif fit.tokens_per_sequence >= preset.context_len:
            tokens = _("{context} (limit)", context=preset.context_len)
        else:
            tokens = fmt(fit.tokens_per_sequence)
        table.append(dict(zip(headers, [row.label, tokens, fmt(fit.users_at_context)], strict=True)))
    return table
