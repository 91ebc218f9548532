"""Tables and figures of the overview page, built from attn_core.probe.overview rows."""
from __future__ import annotations

from dataclasses import replace

import streamlit as st

from attn_core import VARIANT_NAMES
from attn_core.probe.overview import compare_variants

from .charts import PLOTLY_TEMPLATE, format_bytes
from .settings import Settings

VARIANT_COLORS = {"mha": "#3b6ea8", "mqa": "#c4573a", "gqa": "#4a9a6b", "mla": "#8a5cb8"}

TRADE_OFFS = {
    "mha": "Every query head has its own keys and values: the most expressive, and the largest cache. The baseline.",
    "mqa": "All query heads share one key/value head: the cache shrinks by the head count, at some loss of quality.",
    "gqa": "Query heads share keys and values in groups: between MHA and MQA, and what most open models use today.",
    "mla": "Keys and values are rebuilt from one small latent per token, plus a shared rotary key: a cache near MQA's "
    "with quality reported at or above MHA's, paid for with extra up-projection work (absorbed into the weights at decode).",
}


def summary_table(rows: list[dict]) -> list[dict]:
    """One display row per variant, numbers with units; the check mark says the measured cache equals the formula."""
    table = []
    for row in rows:
        agrees = row["cache_bytes_measured"] == row["cache_bytes_formula"]
        table.append(
            {
                "Variant": f"{row['variant'].upper()} · {VARIANT_NAMES[row['variant']]}",
                "Parameters": f"{row['parameters']:,}",
                "Cache per token": f"{row['cache_elements_per_token']:,} numbers = {format_bytes(row['cache_bytes_per_token'])}",
                "Cache, measured": format_bytes(row["cache_bytes_measured"]),
                "Cache, formula": format_bytes(row["cache_bytes_formula"]),
                "Agree": "✓" if agrees else "✗",
                "vs MHA": f"{row['cache_ratio_to_mha']:.3g}×",
                "FLOPs per decoded token": f"{row['decode_flops_per_token'] / 1e6:,.2f} MFLOP",
            }
        )
    return table


def cache_bar_figure(rows: list[dict], seq_len: int, batch: int, dtype: str) -> dict:
    values = [row["cache_bytes_measured"] for row in rows]
    return _variant_bars(
        rows,
        values,
        labels=[f"{format_bytes(v)}<br>{row['cache_ratio_to_mha']:.3g}× MHA" for v, row in zip(values, rows)],
        unit="bytes",
        title=f"KV cache of one layer: {seq_len:,} tokens × batch {batch} in {dtype}",
        yaxis_title="bytes held",
    )


def flops_bar_figure(rows: list[dict], seq_len: int) -> dict:
    values = [row["decode_flops_per_token"] for row in rows]
    return _variant_bars(
        rows,
        values,
        labels=[f"{v / 1e6:,.2f} MFLOP" for v in values],
        unit="FLOPs",
        title=f"Work to decode one token against {seq_len:,} cached tokens",
        yaxis_title="FLOPs (2 per multiply-add)",
    )


def _variant_bars(rows: list[dict], values: list, *, labels: list[str], unit: str, title: str, yaxis_title: str) -> dict:
    """One bar per variant in its colour, labelled above, with headroom for the labels.

    Built as the dict go.Figure(...).to_dict() gives (show_chart sends it as it is): validating two bar figures into
    Plotly's object tree took 30-90 ms of every rerun here, before the first chart could leave the server.
    """
    bar = {
        "type": "bar",
        "x": [row["variant"].upper() for row in rows],
        "y": values,
        "marker": {"color": [VARIANT_COLORS[row["variant"]] for row in rows]},
        "text": labels,
        "textposition": "outside",
        "hovertemplate": f"%{{x}}: %{{y:,}} {unit}<extra></extra>",
    }
    layout = {
        "template": PLOTLY_TEMPLATE,
        # Seated just above the plot, below the always-visible toolbar: these charts are narrow, their titles long.
        "title": {"text": title, "yref": "paper", "y": 1, "yanchor": "bottom", "pad": {"b": 12}},
        "yaxis": {"title": {"text": yaxis_title}, "range": [0, max(values) * 1.25]},
        "margin": {"t": 80, "b": 40, "l": 60, "r": 20},
        "height": 380,
    }
    return {"data": [bar], "layout": layout}


def variant_rows(settings: Settings) -> list[dict]:
    """The probe's rows for these settings (cached: the same settings always give the same rows). The seed draws no
    number here (shapes and counts only), so the cache is keyed without it: a new seed reuses the rows."""
    return _variant_rows(replace(settings, seed=Settings.seed))


@st.cache_data(max_entries=256, show_spinner=False)
def _variant_rows(settings: Settings) -> list[dict]:
    return compare_variants(settings.configs(), batch=settings.batch, seq_len=settings.seq_len, dtype=settings.dtype)


def csv_rows(rows: list[dict]) -> list[dict]:
    """The plotted numbers in plain columns for the CSV download."""
    keys = ("variant", "parameters", "cache_elements_per_token", "cache_bytes_per_token", "cache_bytes_measured",
            "cache_bytes_formula", "cache_ratio_to_mha", "decode_flops_per_token")
    return [{key: row[key] for key in keys} for row in rows]
