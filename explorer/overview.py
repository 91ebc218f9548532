"""Tables and figures of the overview page, built from explorer.probes.overview rows."""

from __future__ import annotations

import streamlit as st

from attn_core import VARIANT_NAMES, AttentionConfig
from attn_core.accounting import decode_flops_per_token
from explorer.probes.overview import VariantRow, compare_variants

from .charts import FLOP_UNITS, PLOTLY_TEMPLATE, VARIANT_COLORS, format_bytes, format_flops, unit_axis
from .settings import Settings
from .words import count

TRADE_OFFS = {
    "mha": "Every query head has its own keys and values: the most expressive, and the largest cache. The baseline.",
    "mqa": "All query heads share one key/value head: the cache shrinks by the head count, at some loss of quality.",
    "gqa": "Query heads share keys and values in groups: between MHA and MQA, and what most open models use today.",
    "mla": "Keys and values are rebuilt from one small latent per token, plus a shared rotary key: a cache near MQA's "
    "with quality reported at or above MHA's, paid for with extra up-projection work (absorbed into the weights at decode).",
}


def summary_table(rows: list[VariantRow]) -> list[dict]:
    """One display row per variant, numbers with units; the check mark says the measured cache equals the formula."""
    table = []
    for row in rows:
        agrees = row.cache_bytes_measured == row.cache_bytes_formula
        # The columns that carry the point come first, so a projector or a phone shows them without scrolling.
        table.append(
            {
                "Variant": row.variant.upper(),
                "Agree": "✓" if agrees else "✗",
                "vs MHA": f"{row.cache_ratio_to_mha:.3g}×",
                "Cache, measured": format_bytes(row.cache_bytes_measured),
                "Cache, formula": format_bytes(row.cache_bytes_formula),
                "FLOPs per decoded token": format_flops(row.decode_flops_per_token),
                "Cache per token": f"{row.cache_elements_per_token:,} numbers = {format_bytes(row.cache_bytes_per_token)}",
                "Parameters": f"{row.parameters:,}",
                "Name": VARIANT_NAMES[row.variant],
            }
        )
    return table


def cache_bar_figure(rows: list[VariantRow], seq_len: int, batch: int, dtype: str) -> dict:
    values = [row.cache_bytes_measured for row in rows]
    return _variant_bars(
        rows,
        values,
        labels=[f"{format_bytes(v)}<br>{row.cache_ratio_to_mha:.3g}× MHA" for v, row in zip(values, rows)],
        unit="bytes",
        title=f"KV cache of one layer: {seq_len:,} tokens × batch {batch} in {dtype}",
        yaxis_title="cache held",
    )


def flops_bar_figure(rows: list[VariantRow], seq_len: int) -> dict:
    values = [row.decode_flops_per_token for row in rows]
    return _variant_bars(
        rows,
        values,
        labels=[format_flops(v) for v in values],
        unit="FLOPs",
        title=f"Work to decode one token against {count(seq_len, 'cached token')}",
        yaxis_title="work (2 FLOP per multiply-add)",
        units=FLOP_UNITS,
    )


def _variant_bars(
    rows: list[VariantRow], values: list, *, labels: list[str], unit: str, title: str, yaxis_title: str, units=None
) -> dict:
    """One bar per variant in its colour, labelled above, with headroom for the labels. The axis ticks are labelled
    in one unit of `units` (bytes in KiB/MiB/GiB by default), never with Plotly's SI letters.

    Built as the dict go.Figure(...).to_dict() gives (show_chart sends it as it is): validating two bar figures into
    Plotly's object tree cost 30-90 ms of every rerun, before the first chart could leave the server.
    """
    bar = {
        "type": "bar",
        "x": [row.variant.upper() for row in rows],
        "y": values,
        "marker": {"color": [VARIANT_COLORS[row.variant] for row in rows]},
        "text": labels,
        "textposition": "outside",
        "hovertemplate": f"%{{x}}: %{{y:,}} {unit}<extra></extra>",
    }
    layout = {
        "template": PLOTLY_TEMPLATE,
        # Seated just above the plot, below the always-visible toolbar: these charts are narrow, their titles long.
        "title": {"text": title, "yref": "paper", "y": 1, "yanchor": "bottom", "pad": {"b": 12}},
        "yaxis": {"title": {"text": yaxis_title}} | unit_axis(max(values) * 1.25, *([units] if units else [])),
        "margin": {"t": 80, "b": 40, "l": 60, "r": 20},
        "height": 380,
    }
    return {"data": [bar], "layout": layout}


@st.cache_data(max_entries=256, show_spinner=False)
def variant_rows(settings: Settings) -> list[VariantRow]:
    """The probe's rows for these settings (cached: the same settings always give the same rows)."""
    return compare_variants(settings.configs(), batch=settings.batch, seq_len=settings.seq_len, dtype=settings.dtype)


def csv_rows(rows: list[VariantRow]) -> list[dict]:
    """The plotted numbers in plain columns for the CSV download."""
    keys = (
        "variant",
        "parameters",
        "cache_elements_per_token",
        "cache_bytes_per_token",
        "cache_bytes_measured",
        "cache_bytes_formula",
        "cache_ratio_to_mha",
        "decode_flops_per_token",
    )
    return [{key: getattr(row, key) for key in keys} for row in rows]


def flops_caption(rows: list[VariantRow], settings: Settings) -> str:
    """What to notice in the FLOPs chart, worked out from the rows shown (against MHA at the same width and heads,
    whether or not MHA is shown): which variants cut cache and work together, and which pay for a smaller cache
    with more arithmetic, by how much."""
    mha = AttentionConfig("mha", d_model=settings.d_model, n_heads=settings.heads)
    mha_flops = decode_flops_per_token(mha, settings.seq_len)
    cheaper, same, parts = [], [], [f"MHA here: {format_flops(mha_flops)} per decoded token."]
    dearer = []
    for row in rows:
        if row.variant == "mha":
            continue
        ratio, cache = row.decode_flops_per_token / mha_flops, row.cache_ratio_to_mha
        name = row.variant.upper()
        if ratio > 1.005 and cache < 1:
            dearer.append(
                f"{name} pays for its smaller cache ({cache:.3g}× MHA's) in arithmetic: {ratio:.3g}× MHA's work."
            )
        elif ratio > 1.005:
            dearer.append(f"{name} costs more on both counts here: {ratio:.3g}× MHA's work and {cache:.3g}× its cache.")
        elif ratio < 0.995:
            cheaper.append(f"{name} ({ratio:.3g}×)")
        else:
            same.append(name)
    if cheaper:
        parts.append(f"Less work per token than MHA, as well as a smaller cache: {', '.join(cheaper)}.")
    if same:
        parts.append(f"The same work as MHA: {', '.join(same)}.")
    parts += dearer
    return " ".join(parts)
