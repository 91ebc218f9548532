"""The masks page: its link parameters, the cached probe, and heatmap figures built from attn_core.probe.masks results
(plain arrays in, Plotly figures and CSV rows out)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from attn_core import VARIANTS, AttentionConfig
from attn_core.probe.masks import MAX_TOKENS, explore_masks

from .params import Choice, Flag, IntRange

VARIANT = Choice("mk_variant", VARIANTS, VARIANTS[0])  # options at bind time: the sidebar's variants (first = default)
HEAD = Choice("mk_head", (0,), 0)  # options at bind time: 0 .. heads - 1
LONG = IntRange("mk_long", 2, MAX_TOKENS, 12)
SHORT = IntRange("mk_short", 1, MAX_TOKENS - 1, 7)  # bound to 1 .. long - 1
CAUSAL = Flag("mk_causal", True)
PREFILL = IntRange("mk_prefill", 1, MAX_TOKENS - 1, 8)
CHUNK = IntRange("mk_chunk", 1, MAX_TOKENS - 1, 4)  # bound to 1 .. MAX_TOKENS - prefill
QUERIES = IntRange("mk_queries", 1, MAX_TOKENS, 6)
MEMORY = IntRange("mk_memory", 1, MAX_TOKENS, 10)

MASK_SCALE = [[0.0, "#d9d9d9"], [1.0, "#2c7fb8"]]  # grey = blocked, blue = may attend


@st.cache_data(max_entries=8, show_spinner="Building the layer and running the three probes…")
def masks_result(
    cfg: AttentionConfig, seed: int, head: int, long_len: int, short_len: int, causal: bool, prefill: int, chunk: int,
    query_len: int, memory_len: int,
) -> dict:
    """One layer of the shown head built per distinct (layer, seed, head, lengths): a sidebar change this page does
    not use (sequence length, batch, dtype) recomputes nothing."""
    return explore_masks(
        cfg, seed, head=head, long_len=long_len, short_len=short_len, causal=causal,
        prefill=prefill, chunk=chunk, query_len=query_len, memory_len=memory_len,
    )


@st.cache_resource(max_entries=64, show_spinner=False)
def section_chart(section: str, cfg: AttentionConfig, seed: int, lengths: tuple, head: int) -> tuple[go.Figure, list[dict]]:
    """The figure and CSV rows of one section, kept ready: building a subplot figure costs 15-30 ms, a rerun after a
    head or section change should not pay it again for the others. (cache_resource: Streamlit sends a figure as its
    to_dict(), a copy, so the kept object is never changed.) lengths: masks_result's arguments after head."""
    result = masks_result(cfg, seed, head, *lengths)
    long_len, short_len, causal, prefill, chunk, query_len, memory_len = lengths
    if section == "padding":
        panels, height = padding_panels(result["padding"], head, short_len), 360
    elif section == "causal":
        panels, height = chunk_mask_panels(result["chunk"], prefill), 340
    elif section == "chunk":
        panels, height = chunk_weight_panels(result["chunk"], head, prefill), 340
    elif section == "cross":
        panels, height = cross_panels(result["cross"], head), 340
    else:
        raise ValueError(f"section={section!r}: one of padding, causal, chunk, cross.")
    return heatmaps_figure(panels, height=height), csv_rows(panels)


def heatmaps_figure(panels: list[dict], *, height: int = 360) -> go.Figure:
    """Heatmaps side by side. Each panel: title, z [rows, cols], x and y labels, kind "mask" or "weight"."""
    widths = [max(len(p["x"]), 1) for p in panels]
    fig = make_subplots(
        rows=1, cols=len(panels), subplot_titles=[p["title"] for p in panels], horizontal_spacing=0.08,
        column_widths=[w / sum(widths) for w in widths],
    )
    for col, panel in enumerate(panels, start=1):
        is_mask = panel["kind"] == "mask"
        z = np.asarray(panel["z"], dtype=np.float32)
        fig.add_trace(
            go.Heatmap(
                z=z, x=[str(v) for v in panel["x"]], y=[str(v) for v in panel["y"]],
                # masks: fixed 0/1 grey/blue, no colour bar; weights: one colour axis shared by the figure's panels
                **({"zmin": 0, "zmax": 1, "colorscale": MASK_SCALE, "showscale": False} if is_mask else {"coloraxis": "coloraxis"}),
                hovertemplate=(
                    f"{panel['y_name']} %{{y}}<br>key %{{x}}<br>"
                    + ("%{z:.0f} (1 = may attend)" if is_mask else "weight %{z:.4g}")
                    + f"<extra>{panel['title']}</extra>"
                ),
                xgap=1, ygap=1,
            ),
            row=1, col=col,
        )
        fig.update_xaxes(title_text="key position", type="category", row=1, col=col, tickfont={"size": 9})
        fig.update_yaxes(
            title_text=panel["y_name"] + " position", type="category", autorange="reversed", row=1, col=col,
            tickfont={"size": 9},
        )
    fig.update_layout(
        height=height, margin={"t": 50, "b": 40, "l": 60, "r": 20},
        coloraxis={"colorscale": "Viridis", "cmin": 0, "colorbar": {"title": {"text": "weight"}, "len": 0.9}},
    )
    return fig


def csv_rows(panels: list[dict]) -> list[dict]:
    """Every cell of every panel: panel, row label, key label, value."""
    rows = []
    for panel in panels:
        z = np.asarray(panel["z"])
        for i, y in enumerate(panel["y"]):
            for j, x in enumerate(panel["x"]):
                rows.append({"panel": panel["title"], panel["y_name"]: y, "key": x, "value": float(z[i, j])})
    return rows


def padding_panels(result: dict, head: int, short_len: int) -> list[dict]:
    allowed = result["allowed"][1].astype(np.float32)  # [L, S] of the short sequence
    positions = list(range(allowed.shape[1]))
    return [
        {"title": "allowed (short sequence)", "z": allowed, "x": positions, "y": positions, "kind": "mask",
         "y_name": "query"},
        {"title": f"head {head} weights (short sequence)", "z": result["short_weights"][0], "x": positions,
         "y": positions, "kind": "weight", "y_name": "query"},
    ]


def chunk_mask_panels(result: dict, prefill: int) -> list[dict]:
    total = result["full_mask"].shape[0]
    positions = list(range(total))
    return [
        {"title": f"full pass: {total} × {total}", "z": result["full_mask"].astype(np.float32), "x": positions,
         "y": positions, "kind": "mask", "y_name": "query"},
        {"title": f"chunk after {prefill} cached: {total - prefill} × {total}",
         "z": result["chunk_mask"].astype(np.float32), "x": positions, "y": positions[prefill:], "kind": "mask",
         "y_name": "query"},
    ]


def chunk_weight_panels(result: dict, head: int, prefill: int) -> list[dict]:
    total = result["full_mask"].shape[0]
    positions = list(range(total))
    return [
        {"title": f"head {head}, full pass", "z": result["full_weights"][0], "x": positions, "y": positions,
         "kind": "weight", "y_name": "query"},
        {"title": f"head {head}, chunk through the cache", "z": result["chunk_weights"][0], "x": positions,
         "y": positions[prefill:], "kind": "weight", "y_name": "query"},
    ]


def cross_panels(result: dict, head: int) -> list[dict]:
    weights = result["weights"][0]  # [Lq, Lkv]
    return [
        {"title": f"head {head}: {weights.shape[0]} queries × {weights.shape[1]} keys", "z": weights,
         "x": list(range(weights.shape[1])), "y": list(range(weights.shape[0])), "kind": "weight",
         "y_name": "query"},
    ]


def mask_table(key_padding_mask: np.ndarray) -> dict[str, list[str]]:
    """key_padding_mask [2, S] as columns for st.dataframe: ✓ real key, · padding."""
    table = {"sequence": ["long", "short"]}
    for j in range(key_padding_mask.shape[1]):
        table[str(j)] = ["✓" if flag else "·" for flag in key_padding_mask[:, j]]
    return table


def check_line(name: str, value: float, tolerance: float = 1e-5) -> str:
    mark = "✓" if value <= tolerance else "✗"
    return f"{mark} {name}: max |difference| = {value:.2e} (tolerance {tolerance:.0e}, float32)"
