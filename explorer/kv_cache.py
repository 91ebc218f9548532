"""The KV cache page's view controls, cached probes, tables and figures (built from explorer.probes.decode/models)."""

from __future__ import annotations

import streamlit as st

from attn_core import PRESETS, AttentionConfig
from attn_core.config import kv_head_counts
from explorer.probes import FLOAT32_TOLERANCE
from explorer.probes.decode import (
    MAX_PROMPT_LEN,
    MAX_STEPS,
    MAX_TRACE_BATCH,
    DecodeTrace,
    check_trace_bounds,
    decode_trace,
)
from explorer.probes.models import (
    GIB,
    MemoryBudget,
    ModelRow,
    model_bytes,
    model_rows,
    sequences_that_fit,
    token_grid,
    what_fits,
    what_if_configs,
)

from .charts import VARIANT_COLORS, count_axis, format_bytes, shape_text, unit_axis
from .params import Choice, Flag, IntRange
from .settings import Settings
from .words import count
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
    """Why this layer is not traced step by step (a sentence), or None."""
    try:
        check_trace_bounds(cfg, prompt_len=prompt_len, steps=steps, batch=trace_batch(settings))
    except ValueError as reason:
        return str(reason)
    return None


@st.cache_data(max_entries=128, show_spinner="Decoding token by token through the real layers…")
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
    """name -> trace for every cache that can be traced, and a sentence for each one skipped as too heavy."""
    traces, skipped = {}, []
    for name, cfg, is_repeated in trace_plan(settings, repeated=repeated):
        reason = too_heavy(cfg, settings, prompt_len, steps)
        if reason:
            skipped.append(f"{name}: {reason}")
            continue
        traces[name] = cached_trace(
            cfg, prompt_len, steps, trace_batch(settings), settings.seed, settings.dtype, is_repeated
        )
    return traces, skipped


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
                "Cache": name,
                "Agree": "✓" if trace.nbytes[step] == trace.formula_nbytes[step] else "✗",
                "Tokens held": trace.tokens_held[step],
                "Stored tensors [B, heads, tokens, width]": (
                    f"{first} {shape_text(shapes[first])} · {second} {shape_text(shapes[second])}"
                ),
                f"Bytes held ({trace.storage_dtype})": format_bytes(trace.nbytes[step]),
                "Formula": format_bytes(trace.formula_nbytes[step]),
                "Preallocated": format_bytes(trace.capacity_nbytes[step]),
                "max |Δ| vs full recompute": f"{diff:.1e}",
            }
        )
    return rows


def cache_size_figure(traces: dict[str, DecodeTrace], step: int) -> dict:
    """Bytes held vs tokens generated: measured (markers), closed form (wide pale line under them), preallocated
    capacity (step line), and markers at the chosen step (the page's ▶ Play moves the step, and with it the log and
    the table: no browser-side animation that would move the markers alone).

    A plain dict, as every figure here: st.plotly_chart validates it once, where a go.Figure would be validated
    when built and again when sent (with one frame per step, that alone was most of a rerun).
    """
    data = []
    for name, trace in traces.items():
        color = color_of(name)
        steps = list(range(len(trace.nbytes)))
        common = {"type": "scatter", "x": steps, "legendgroup": name}
        repeated = name.endswith("repeated")
        # A repeated-heads cache lands exactly on MHA's line: drawn as open rings over it, so MHA stays visible.
        formula_line = {"color": color, "width": 1, "dash": "dot"} if repeated else {"color": color, "width": 9}
        data += [
            common
            | {
                "y": trace.formula_nbytes,
                "mode": "lines",
                "name": f"{name} formula",
                "showlegend": False,
                "opacity": 0.8 if repeated else 0.25,
                "line": formula_line,
                "hovertemplate": f"{name} formula: %{{y:,}} bytes<extra></extra>",
            },
            common
            | {
                "y": trace.nbytes,
                "name": name,
                "customdata": trace.tokens_held,
                "mode": "markers" if repeated else "lines+markers",
                "marker": {"size": 9, "symbol": "circle-open"} if repeated else {"size": 5},
                "line": {"color": color, "width": 2},
                "hovertemplate": f"{name}, step %{{x}} (%{{customdata}} tokens held): %{{y:,}} bytes<extra></extra>",
            },
            common
            | {
                "y": trace.capacity_nbytes,
                "mode": "lines",
                "name": f"{name} preallocated",
                "showlegend": False,
                "line": {"color": color, "width": 1, "shape": "hv", "dash": "dash"},
                "hovertemplate": f"{name} preallocated: %{{y:,}} bytes<extra></extra>",
            },
        ]
    names = list(traces)
    colors = [color_of(name) for name in names]

    def markers_at(s: int) -> dict:
        """One trace holding every cache's point at step s."""
        return {
            "type": "scatter",
            "x": [s] * len(names),
            "y": [traces[name].nbytes[s] for name in names],
            "text": names,
            "mode": "markers",
            "name": "at the step",
            "showlegend": False,
            "marker": {"color": colors, "size": 14, "line": {"color": "white", "width": 2}},
            "hovertemplate": "%{text}, step %{x}: %{y:,} bytes<extra></extra>",
        }

    data.append(markers_at(step))
    any_trace = next(iter(traces.values()))
    layout = {
        "title": {"text": f"Bytes held after each step (batch {any_trace.batch})"},
        "xaxis": {"title": {"text": f"tokens generated after a prompt of {any_trace.prompt_len}"}}
        | count_axis(any_trace.steps),
        "yaxis": {"title": {"text": f"cache held ({any_trace.storage_dtype}, one layer)"}}
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
            "name": name,
            "marker": {"size": 5},
            "line": {"color": color_of(name), "dash": "dot" if name.endswith("repeated") else "solid"},
            "hovertemplate": f"{name}, step %{{x}}: max |Δ| = %{{customdata:.2e}}<extra></extra>",
        }
        for name, trace in traces.items()
    ]
    layout = {
        "title": {"text": "Largest difference from a full recompute without cache (float32)"},
        "xaxis": {"title": {"text": "tokens generated (0 = the prefilled prompt)"}}
        | count_axis(max(len(t.max_abs_diff) for t in traces.values()) - 1),
        "yaxis": {"title": {"text": "max |cached − full|"}, "type": "log", "range": [-10.5, -3.5]},
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
                "text": f"{FLOAT32_TOLERANCE:.0e} budget",
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
@st.cache_data(max_entries=128, show_spinner="Running the model's attention layer on the meta device…")
def cached_model_rows(
    preset_name: str, groups: int, latent: int, rope_dim: int, dtype: str, batch: int, repeated: bool
) -> list[ModelRow]:
    return model_rows(
        preset_name, groups=groups, latent=latent, rope_dim=rope_dim, dtype=dtype, batch=batch, repeated_heads=repeated
    )


def model_table(rows: list[ModelRow], preset_name: str) -> list[dict]:
    preset = PRESETS[preset_name]
    held = rows[0].tokens_held
    context = f"{held:,} tokens" + (f" (window of {preset.context_len:,})" if held < preset.context_len else "")
    table = []
    for row in rows:
        agree = row.layer_bytes_measured == row.layer_bytes_formula and (
            row.elements_per_token_layer == row.elements_per_token_layer_formula
        )
        table.append(
            {
                "Cache kept": row.label,
                "One token leaves": row.description,
                "Numbers / token / layer": f"{row.elements_per_token_layer:,}",
                "Per token, one layer": format_bytes(row.bytes_per_token_layer),
                f"Per token, {preset.n_layers} layers": format_bytes(row.bytes_per_token_model),
                f"One sequence at {context}, whole model": format_bytes(row.model_bytes_measured),
                "vs MHA": f"{row.ratio_to_mha:.3g}×",
                "= GQA with … groups": f"{row.gqa_equivalent_groups:.3g}",
                "Measured = formula": "✓" if agree else "✗",
            }
        )
    return table


def row_line(row: ModelRow) -> dict:
    """A model row's line: the published layer solid, what-ifs dashed, the repeated-heads pitfall dotted."""
    color = PITFALL_COLOR if row.repeated_heads else VARIANT_COLORS[row.variant]
    dash = "solid" if row.key == "published" else ("dot" if row.repeated_heads else "dash")
    return {"color": color, "dash": dash, "width": 3 if row.key == "published" else 2}


def scale_figure(
    preset_name: str, rows: list[ModelRow], what_if: dict, *, batch: int, dtype: str, budget: MemoryBudget
) -> tuple[dict, list[dict]]:
    """Whole-model cache (GiB) vs tokens per sequence for `batch` sequences, one line per way of keeping it, with the
    memory left after the weights. Lines: closed form on a grid (exact bytes in customdata); diamonds: measured on
    the meta device at the full context."""
    preset = PRESETS[preset_name]
    grid = token_grid(preset)
    configs = what_if_configs(preset, **what_if)
    data, csv = [], []
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
                "y": [b / GIB for b in exact],
                "customdata": exact,
                "mode": "lines",
                "name": row.label,
                "legendgroup": row.key,
                "line": row_line(row),
                "hovertemplate": f"{row.label}<br>%{{x:,}} tokens: %{{y:,.2f}} GiB (%{{customdata:,}} bytes)"
                "<extra></extra>",
            }
        )
        measured = row.model_bytes_batch_measured
        data.append(
            {
                "type": "scatter",
                "x": [preset.context_len],
                "y": [measured / GIB],
                "customdata": [measured],
                "mode": "markers",
                "name": f"{row.label} (measured)",
                "legendgroup": row.key,
                "showlegend": False,
                "marker": {"color": row_line(row)["color"], "size": 10, "symbol": "diamond"},
                "hovertemplate": f"measured on the meta device: %{{customdata:,}} bytes<extra>{row.label}</extra>",
            }
        )
        csv += [{"cache": row.label, "tokens": t, "batch": batch, "bytes": b} for t, b in zip(grid, exact)]
    shapes, annotations = [], []
    yaxis = {"title": {"text": "KV cache, whole model (GiB)"}, "rangemode": "tozero"}
    if budget.left > 0:
        left = budget.left / GIB
        highest = max(max(trace["y"]) for trace in data)
        # The budget line always inside the plot (its label sits under it), and readable: lines leaving the top have
        # run out long before.
        yaxis["range"] = [0, min(2.5 * left, 1.1 * max(highest, left))]
        for row in rows:
            fit = what_fits(preset, row, budget_left=budget.left, batch=batch)
            if fit.tokens_per_sequence < preset.context_len and not fit.window_bound:
                data.append(
                    {
                        "type": "scatter",
                        "x": [fit.tokens_per_sequence],
                        "y": [left],
                        "mode": "markers",
                        "name": f"{row.label} runs out",
                        "legendgroup": row.key,
                        "showlegend": False,
                        "marker": {"color": row_line(row)["color"], "size": 12, "symbol": "x"},
                        "hovertemplate": f"{row.label}: memory full at %{{x:,}} tokens per sequence<extra></extra>",
                    }
                )
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": left,
                "y1": left,
                "line": {"color": "#b03030", "width": 2},
            }
        )
        annotations.append(
            {
                "text": f"memory left after the weights: {format_bytes(budget.left)}",
                "xref": "paper",
                "x": 0.02,
                "y": left,
                "yanchor": "top",  # under the line, inside the plot: the line may sit at its top, by the title
                "xanchor": "left",
                "showarrow": False,
                "font": {"color": "#b03030"},
            }
        )
    sequences = count(batch, "sequence")
    layout = {
        "title": {"text": f"{preset.name}: KV cache of {sequences} × {preset.n_layers} layers ({dtype})"},
        "xaxis": {"title": {"text": "tokens per sequence"}},
        "yaxis": yaxis,
        "shapes": shapes,
        "annotations": annotations,
        "height": 460,
        "margin": {"t": 60, "b": 50, "l": 70, "r": 20},
        "legend": {"font": {"size": 11}},
    }
    return {"data": data, "layout": layout}, csv


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
                "hovertemplate": f"{row.label}<br>%{{y:,}} sequences of %{{x:,}} tokens<extra></extra>",
            }
        )
        csv += [{"cache": row.label, "tokens_per_sequence": t, "sequences_that_fit": n} for t, n in zip(grid, fits)]
    layout = {
        "title": {"text": f"How many sequences fit in {format_bytes(max(budget.left, 0))} ({dtype})"},
        "xaxis": {"title": {"text": "tokens per sequence"}},
        "yaxis": {"title": {"text": "sequences served at once"}, "type": "log", "dtick": 1},
        "height": 420,
        "margin": {"t": 60, "b": 50, "l": 70, "r": 20},
        "legend": {"font": {"size": 11}},
    }
    return {"data": data, "layout": layout}, csv


def fit_table(preset_name: str, rows: list[ModelRow], *, batch: int, budget: MemoryBudget) -> list[dict]:
    preset = PRESETS[preset_name]
    table = []
    for row in rows:
        fit = what_fits(preset, row, budget_left=budget.left, batch=batch)
        if fit.window_bound:
            tokens = f"all {preset.context_len:,} (the {preset.sliding_window:,}-token window never fills the memory)"
        elif fit.tokens_per_sequence >= preset.context_len:
            tokens = f"all {preset.context_len:,} (the model's limit)"
        else:
            tokens = f"{fit.tokens_per_sequence:,}"
        table.append(
            {
                "Cache kept": row.label,
                f"Tokens each of {batch} sequence{'s' if batch > 1 else ''} can reach": tokens,
                f"Sequences of {preset.context_len:,} tokens that fit": f"{fit.users_at_context:,}",
            }
        )
    return table
