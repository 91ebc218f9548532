"""One fused weight for q, k and v: its blocks in each published row layout, as a figure and tables."""

from __future__ import annotations

import streamlit as st

from attn_core import AttentionConfig
from explorer.charts import shape_text
from explorer.i18n import N_, _, difference, n_, speaking
from explorer.probes.mapping import FusedProjection

from .computed import fused_result
from .figures import PALETTE

FUSED_LAYOUT_NAMES = {
    "stacked": N_("stacked<br>(GPT-2, Phi-3)"),  # two short lines: the bars keep the width on a phone
    "grouped": N_("grouped<br>(Falcon, BLOOM)"),
}
PROJECTION_NAMES = {"q": "query", "k": "key", "v": "value"}  # the CSV's values (data, not translated)
# How a block's projection is said in the hover.
PROJECTION_WORDS = {"query": N_("query head {head}"), "key": N_("key head {head}"), "value": N_("value head {head}")}
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
def fused_chart(cfg: AttentionConfig, seed: int, batch: int, seq_len: int, lang: str) -> tuple[dict, list[dict]]:
    """fused_figure with its CSV rows, made once per setting and language (its words, made in `lang`, are in the
    figure)."""
    with speaking(lang):
        result = fused_result(cfg, seed, batch, seq_len)
        return fused_figure(result, cfg), fused_block_rows(result, cfg)


def _head_word(row: dict) -> str:
    """ "key head 3" for a block's hover, in this run's language."""
    message = PROJECTION_WORDS[row["projection"]]
    return _(message, head=str(row["head"]))


def fused_figure(result: FusedProjection, cfg: AttentionConfig) -> dict:
    """The fused weight's rows in each layout as a bar of head_dim-wide blocks, coloured by KV group (as in the
    mapping above); keys hatched, values dotted. A figure dict, shown as it is by explorer.charts.show_chart: Plotly's
    validation of a few hundred bars costs more than the rest of the rerun; the tests validate it instead."""
    rows = fused_block_rows(result, cfg)
    data = [
        _layout_bar([row for row in rows if row["layout"] == layout], _(name), cfg.head_dim)
        for layout, name in FUSED_LAYOUT_NAMES.items()
    ]
    return {"data": data, "layout": _fused_layout(result.weight[0])}


def _layout_bar(blocks: list[dict], name: str, head_dim: int) -> dict:
    """One layout's row of blocks as a horizontal bar, each block head_dim rows of the fused weight; labelled inside
    while there are few enough to read."""
    labelled = len(blocks) <= FUSED_LABELS_UP_TO
    trace = {
        "type": "bar",
        "orientation": "h",
        "y": [name] * len(blocks),
        "x": [head_dim] * len(blocks),
        "base": [row["first_row"] for row in blocks],
        "marker": _block_marker(blocks, outlined=labelled),
        "customdata": [[row["first_row"], row["last_row"], _head_word(row), row["kv_group"]] for row in blocks],
        "hovertemplate": _("rows %{customdata[0]}–%{customdata[1]}: %{customdata[2]} · KV group %{customdata[3]}")
        + "<extra></extra>",
        "showlegend": False,
    }
    if labelled:
        trace |= {
            "text": [f"{row['projection'][0]}{row['head']}" for row in blocks],
            "textposition": "inside",
            "insidetextanchor": "middle",
            "textfont": {"color": "white", "size": 12, "weight": 700, "shadow": "0px 0px 3px #22252b"},
        }
    return trace


def _block_marker(blocks: list[dict], *, outlined: bool) -> dict:
    """Blocks coloured by KV group, keys hatched and values dotted, queries plain; outlined in white when labelled."""
    patterns = {"query": "", "key": "/", "value": "."}
    return {
        "color": [PALETTE[row["kv_group"] % len(PALETTE)] for row in blocks],
        "pattern": {
            "shape": [patterns[row["projection"]] for row in blocks],
            "fgcolor": "white",
            # Faint enough that a block's label stays legible on it (issue #14 item 13).
            "fgopacity": 0.45,
            "solidity": 0.25,
            "fillmode": "overlay",
        },
        "line": {"color": "white", "width": 1 if outlined else 0},
    }


def _fused_layout(rows: int) -> dict:
    """The bars' frame: the x axis counts the fused weight's `rows`, the layouts' names on the left."""
    return {
        "barmode": "overlay",
        "height": 220,
        "margin": {"t": 30, "b": 65, "l": 10, "r": 10},
        "bargap": 0.35,
        "xaxis": {
            "title": {"text": _("rows of W_qkv<br>{rows} = (heads + 2 · KV heads) × head_dim", rows=rows)},
            "range": [0, rows],
        },
        "yaxis": {"autorange": "reversed", "automargin": True},
        "plot_bgcolor": "rgba(0,0,0,0)",
    }


def fused_agreement(result: FusedProjection) -> str:
    """How closely each layout's fused product matched the separate projections, for the caption."""
    said = {layout: difference(found.max_abs_diff) for layout, found in result.layouts.items()}
    if len(set(said.values())) == 1:
        return _("in both layouts {agreement}", agreement=next(iter(said.values())))
    return _(
        "stacked {stacked} and grouped {grouped}", stacked=said.get("stacked", ""), grouped=said.get("grouped", "")
    )


def fused_shape_table(result: FusedProjection, cfg: AttentionConfig) -> list[dict]:
    step, shape, note = _("Step"), _("Shape"), _("Note")
    return [
        {
            step: "W_qkv",
            shape: shape_text(result.weight),
            note: _(
                "{queries} + {keys} + {values}, {rows} rows each, by d_model",
                queries=n_("{n} query head", "{n} query heads", cfg.n_heads),
                keys=n_("{n} key head", "{n} key heads", cfg.n_kv_heads),
                values=n_("{n} value head", "{n} value heads", cfg.n_kv_heads),
                rows=cfg.head_dim,
            ),
        },
        {
            step: "[q ; k ; v] = x · W_qkvᵀ",
            shape: shape_text(result.fused),
            note: _("one matrix product for all three"),
        },
        {step: "q", shape: shape_text(result.q), note: _("its columns, cut as the layout says")},
        {
            step: "k",
            shape: shape_text(result.k),
            note: n_("{n} head: fusing does not repeat them", "{n} heads: fusing does not repeat them", cfg.n_kv_heads),
        },
        {step: "v", shape: shape_text(result.v), note: _("then on as in the table above")},
    ]
