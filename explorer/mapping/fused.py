"""One fused weight for q, k and v: its blocks in each published row layout, as a figure and tables."""

from __future__ import annotations

import streamlit as st

from attn_core import AttentionConfig
from explorer.charts import PLOTLY_TEMPLATE, difference, shape_text
from explorer.probes.mapping import FusedProjection
from explorer.words import count

from .computed import fused_result
from .figure import PALETTE

FUSED_LAYOUT_NAMES = {
    "stacked": "stacked (GPT-2 c_attn, Phi-3 qkv_proj)",
    "grouped": "grouped (Falcon, BLOOM query_key_value)",
}
PROJECTION_NAMES = {"q": "query", "k": "key", "v": "value"}
FUSED_LABELS_UP_TO = 40  # blocks labelled inside the bar up to this many per layout


def fused_block_rows(result: FusedProjection, cfg: AttentionConfig) -> list[dict]:
    """One row per head_dim-wide block of the fused weight, per layout: which head of which projection it holds."""
    rows = []
    for layout, found in result.layouts.items():
        for index, (name, head) in enumerate(found.blocks):
            rows.append(
                {
                    "layout": layout,
                    "block": index,
                    "projection": PROJECTION_NAMES[name],
                    "head": head,
                    "kv_group": head // cfg.group_size if name == "q" else head,
                    "first_row": index * cfg.head_dim,
                    "last_row": (index + 1) * cfg.head_dim - 1,
                }
            )
    return rows


@st.cache_data(max_entries=32, show_spinner=False)
def fused_chart(cfg: AttentionConfig, seed: int, batch: int, seq_len: int) -> tuple[dict, list[dict]]:
    """fused_figure with its CSV rows, made once per setting."""
    result = fused_result(cfg, seed, batch, seq_len)
    return fused_figure(result, cfg), fused_block_rows(result, cfg)


def fused_figure(result: FusedProjection, cfg: AttentionConfig) -> dict:
    """The fused weight's rows in each layout as a bar of head_dim-wide blocks, coloured by KV group (as in the
    mapping above); keys hatched, values dotted. A figure dict, shown as it is by explorer.charts.show_chart: Plotly's
    validation of a few hundred bars costs more than the rest of the rerun; the tests validate it instead."""
    rows = fused_block_rows(result, cfg)
    data = []
    for layout, name in FUSED_LAYOUT_NAMES.items():
        blocks = [row for row in rows if row["layout"] == layout]
        labelled = len(blocks) <= FUSED_LABELS_UP_TO
        trace = {
            "type": "bar",
            "orientation": "h",
            "y": [name] * len(blocks),
            "x": [cfg.head_dim] * len(blocks),
            "base": [row["first_row"] for row in blocks],
            "marker": {
                "color": [PALETTE[row["kv_group"] % len(PALETTE)] for row in blocks],
                "pattern": {
                    "shape": [
                        "" if row["projection"] == "query" else "/" if row["projection"] == "key" else "."
                        for row in blocks
                    ],
                    "fgcolor": "white",
                    "fillmode": "overlay",
                },
                "line": {"color": "white", "width": 1 if labelled else 0},
            },
            "customdata": [
                [row["first_row"], row["last_row"], row["projection"], row["head"], row["kv_group"]] for row in blocks
            ],
            "hovertemplate": "rows %{customdata[0]}–%{customdata[1]}: %{customdata[2]} head %{customdata[3]}"
            " · KV group %{customdata[4]}<extra></extra>",
            "showlegend": False,
        }
        if labelled:
            trace |= {
                "text": [f"{row['projection'][0]}{row['head']}" for row in blocks],
                "textposition": "inside",
                "insidetextanchor": "middle",
                "textfont": {"color": "white", "size": 11},
            }
        data.append(trace)
    layout = {
        "barmode": "overlay",
        "height": 190,
        "margin": {"t": 30, "b": 45, "l": 10, "r": 10},
        "bargap": 0.35,
        "xaxis": {
            "title": {"text": f"rows of W_qkv ({result.weight[0]:,} = (heads + 2 · KV heads) × head_dim)"},
            "range": [0, result.weight[0]],
        },
        "yaxis": {"autorange": "reversed", "automargin": True},
        "plot_bgcolor": "rgba(0,0,0,0)",
        "template": PLOTLY_TEMPLATE,
    }
    return {"data": data, "layout": layout}


def fused_agreement(result: FusedProjection) -> str:
    """How closely each layout's fused product matched the separate projections, for the caption."""
    said = {layout: difference(found.max_abs_diff) for layout, found in result.layouts.items()}
    if len(set(said.values())) == 1:
        return f"in both layouts {next(iter(said.values()))}"
    return " and ".join(f"{layout} {text}" for layout, text in said.items())


def fused_shape_table(result: FusedProjection, cfg: AttentionConfig) -> list[dict]:
    return [
        {
            "Step": "W_qkv",
            "Shape": shape_text(result.weight),
            "Note": f"{count(cfg.n_heads, 'query head')} + {count(cfg.n_kv_heads, 'key head')} + "
            f"{count(cfg.n_kv_heads, 'value head')}, {cfg.head_dim} rows each, by d_model",
        },
        {"Step": "qkv = x · W_qkvᵀ", "Shape": shape_text(result.fused), "Note": "one matrix product for all three"},
        {"Step": "q", "Shape": shape_text(result.q), "Note": "its columns, cut as the layout says"},
        {
            "Step": "k",
            "Shape": shape_text(result.k),
            "Note": f"{count(cfg.n_kv_heads, 'head')}: fusing does not repeat them",
        },
        {"Step": "v", "Shape": shape_text(result.v), "Note": "then on as in the table above"},
    ]
