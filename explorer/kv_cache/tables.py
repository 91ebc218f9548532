"""The KV cache page's rows, in this run's language: each cache at one step (and its decode-loop log line), the
whole model's ways of caching, what fits in a memory budget, and the numbers the step charts plot as CSV rows (the
whole-model figures return their own)."""

from __future__ import annotations

from attn_core import PRESETS
from explorer.charts import shape_text
from explorer.glossary import design_name
from explorer.i18n import _, fmt, format_bytes, n_, sentences, sig
from explorer.probes.kv_cache import DecodeTrace, DesignTrace, MemoryBudget, ModelRow, what_fits

from .text import cache_names, row_description, row_label, shown_name


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
            row_label(row),
            f"{sig(row.ratio_to_mha)}×",
            "✓" if agree else "✗",
            fmt(row.elements_per_token_layer),
            sig(row.gqa_equivalent_groups),
            format_bytes(row.bytes_per_token_model),
            format_bytes(row.model_bytes_measured),
            row_description(row),
        ]
        table.append(dict(zip(headers, cells, strict=True)))
    return table


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
        table.append(dict(zip(headers, [row_label(row), tokens, fmt(fit.users_at_context)], strict=True)))
    return table


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


def design_step_table(traces: dict[str, DesignTrace], step: int) -> list[dict]:
    """Each design's cache at the step: held and read, measured and by formula, and the output's difference."""
    rows = []
    for name, trace in traces.items():
        agree = trace.nbytes[step] == trace.formula_nbytes[step] and (
            trace.read_nbytes[step] == trace.formula_read_nbytes[step]
        )
        rows.append(
            {
                _("Design"): design_name(name),
                _("Agree"): "✓" if agree else "✗",
                _("Tokens seen"): trace.tokens_seen[step],
                _("Held ({dtype})", dtype=trace.storage_dtype): format_bytes(trace.nbytes[step]),
                _("Read by the step"): format_bytes(trace.read_nbytes[step]),
                _("Formula (held · read)"): (
                    f"{format_bytes(trace.formula_nbytes[step])} · {format_bytes(trace.formula_read_nbytes[step])}"
                ),
                _("max |Δ|"): f"{trace.max_abs_diff[step]:.1e}",
            }
        )
    return rows


def design_size_rows(traces: dict[str, DesignTrace]) -> list[dict]:
    return [
        {
            "design": name,
            "step": s,
            "tokens_seen": trace.tokens_seen[s],
            "bytes_held": trace.nbytes[s],
            "bytes_held_formula": trace.formula_nbytes[s],
            "bytes_read": trace.read_nbytes[s],
            "bytes_read_formula": trace.formula_read_nbytes[s],
            "max_abs_diff_vs_full_pass": trace.max_abs_diff[s],
        }
        for name, trace in traces.items()
        for s in range(len(trace.nbytes))
    ]
