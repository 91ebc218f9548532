"""The animated figure: one frame per step of MHA -> GQA (every valid group count) -> MQA -> MLA.

Each frame comes from explorer.probes.mapping.read_morph: which store a query head reads is what the real layer
showed when that store was disturbed, never a formula. Plotly's frames carry the whole animation, so play/pause and
the slider run in the browser without a rerun per frame.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from attn_core import AttentionConfig
from attn_core.accounting import bytes_per_element, kv_cache_bytes
from explorer.charts import VARIANT_COLORS, format_bytes
from explorer.probes.mapping import morph_configs
from explorer.settings import Settings
from explorer.words import count

from .computed import frames_for
from .frames import bundles, frame_label, head_span, query_label, ranges_text, readers, store_label
from .tables import mapping_rows

IN_BAR_LABELS = 12  # query bars labelled inside up to this many; past it, rotated labels above the row
PALETTE = ("#3b6ea8", "#e08a2e", "#4a9a6b", "#c4573a", "#8a5cb8", "#8c6d4f", "#d36fa8", "#6f7a85", "#a7a83a", "#3aa5b8")
ROPE_COLOR = "#e0a42e"
EDGE_SLOTS = len(PALETTE)  # edge traces per frame, one per colour, so every frame has the same traces
Q_TOP, Q_BOTTOM, KV_TOP, KV_BOTTOM = 1.16, 0.84, 0.16, -0.16


def _stores_geometry(frame: dict, cfg: AttentionConfig, settings: Settings) -> list[dict]:
    """The KV row: one bar per store (or bundle of stores), each as wide as its share of MHA's cache per token."""
    mha_elements = 2 * settings.heads * settings.head_dim
    if frame["variant"] == "mla":
        groups = [("c_kv", "c_kv", [0], cfg.kv_lora_rank), ("k_rope", "k_rope", [1], cfg.qk_rope_head_dim)]
    else:
        groups = [
            (
                head_span(a, b, "KV head"),
                f"kv{a}" if b - a == 1 else f"kv{a}–{b - 1}",
                list(range(a, b)),
                (b - a) * 2 * cfg.head_dim,
            )
            for a, b in bundles(len(frame["stores"]))
        ]
    total = sum(elements for *_, elements in groups) / mha_elements
    left = 0.5 - total / 2
    geometry = []
    for index, (label, short, members, elements) in enumerate(groups):
        width = elements / mha_elements
        geometry.append(
            {"label": label, "short": short, "members": members, "x": left + width / 2, "width": width, "index": index}
        )
        left += width
    return geometry


def _frame_content(frame: dict, cfg: AttentionConfig, settings: Settings, highlight: str | None) -> dict:
    """Traces, title and annotation of one animation step."""
    heads, batch, tokens = settings.heads, settings.batch, settings.seq_len
    element = bytes_per_element(settings.dtype)
    is_mla = frame["variant"] == "mla"
    stores = _stores_geometry(frame, cfg, settings)
    store_of = {member: s for s in stores for member in s["members"]}
    reads = frame["reads"]
    lit = set(readers(frame, highlight)) if highlight else None

    query_bars = []
    for start, stop in bundles(heads):
        read_stores = reads[:, start:stop].any(axis=1).nonzero()[0].tolist()
        read_by_bundle = sorted({store_of[s]["index"] for s in read_stores})
        query_bars.append(
            {
                "start": start,
                "stop": stop,
                "x": (start + stop) / 2 / heads,
                "width": (stop - start) / heads,
                "store_bars": read_by_bundle,
                "stores": read_stores,
                "lit": lit is None or any(h in lit for h in range(start, stop)),
            }
        )

    # Edges, one trace per colour (grouped) or latent / rotary (MLA), so every frame has the same traces.
    edges = [([], []) for _ in range(EDGE_SLOTS + 1)]
    for bar in query_bars:
        for s_index in bar["store_bars"]:
            store = stores[s_index]
            slot = EDGE_SLOTS if (is_mla and store["label"] == "k_rope") else (0 if is_mla else s_index % EDGE_SLOTS)
            xs, ys = edges[slot]
            xs += [bar["x"], store["x"], None]
            ys += [Q_BOTTOM, KV_TOP, None]
    edge_colors = [VARIANT_COLORS["mla"] if is_mla else PALETTE[i] for i in range(EDGE_SLOTS)]
    traces = [
        dict(
            type="scatter",
            x=xs,
            y=ys,
            mode="lines",
            line=dict(color=color, width=1.6),
            opacity=0.55,
            hoverinfo="skip",
            showlegend=False,
        )
        for (xs, ys), color in zip(edges[:EDGE_SLOTS], edge_colors)
    ]
    traces.append(
        dict(
            type="scatter",
            x=edges[EDGE_SLOTS][0],
            y=edges[EDGE_SLOTS][1],
            mode="lines",
            line=dict(color=ROPE_COLOR, width=1.4, dash="dot"),
            opacity=0.8,
            hoverinfo="skip",
            showlegend=False,
        )
    )

    # Hover text: what each head reads, at the settings' batch, length and dtype.
    head_dim, dims = cfg.head_dim, f"[{batch}, {tokens:,}, "
    if is_mla:
        dc, dr = cfg.kv_lora_rank, cfg.qk_rope_head_dim
        per_head_bytes = batch * tokens * (dc + dr) * element
        read_text = (
            f"per head: c_kv {dims}{dc}] and k_rope {dims}{dr}], the same for every head<br>"
            f"its own K, V are rebuilt from them: K_h {dims}{cfg.qk_nope_head_dim + dr}], V_h {dims}{cfg.v_head_dim}]<br>"
            f"cache bytes read per head and decode step: {format_bytes(per_head_bytes)}"
        )
    else:
        group = heads // frame["n_kv_heads"]
        per_head_bytes = 2 * batch * tokens * head_dim * element
        read_text = (
            f"per head: K and V of its KV head, {dims}{head_dim}] each<br>"
            f"cache bytes read per head and decode step: {format_bytes(per_head_bytes)}"
            + (f"<br>(the same bytes serve all {group} heads of a group)" if group > 1 else "")
        )
    q_hover = []
    for bar in query_bars:
        names = [frame["stores"][s] for s in bar["stores"]]
        source = (
            ", ".join(store_label(n) for n in names)
            if is_mla
            else f"KV head{'s' if len(names) > 1 else ''} {ranges_text([int(n[2:]) for n in names])}"
        )
        drawn = "" if bar["stop"] - bar["start"] == 1 else f" ({bar['stop'] - bar['start']} heads drawn as one)"
        q_hover.append(
            f"<b>{head_span(bar['start'], bar['stop'], 'query head')}</b>{drawn}<br>reads {source}<br>{read_text}"
        )
    kv_hover = []
    for store in stores:
        members = store["members"]
        who = sorted({h for m in members for h in readers(frame, frame["stores"][m])})
        if is_mla:
            width = cfg.kv_lora_rank if store["label"] == "c_kv" else cfg.qk_rope_head_dim
            what = f"{store_label(store['label'])}: {dims}{width}]"
            nbytes = batch * tokens * width * element
        else:
            what = f"K and V: {dims}{head_dim}] each" + (f", × {len(members)} KV heads" if len(members) > 1 else "")
            nbytes = 2 * batch * tokens * head_dim * element * len(members)
        kv_hover.append(
            f"<b>{store['label']}</b><br>{what}<br>cached: {format_bytes(nbytes)}<br>read by query heads {ranges_text(who)}"
        )

    store_colors = [VARIANT_COLORS["mla"], ROPE_COLOR] if is_mla else [PALETTE[s["index"] % EDGE_SLOTS] for s in stores]
    store_lit = [highlight is None or any(frame["stores"][m] == highlight for m in s["members"]) for s in stores]
    traces.append(
        dict(
            type="bar",
            x=[s["x"] for s in stores],
            y=[KV_TOP - KV_BOTTOM] * len(stores),
            base=[KV_BOTTOM] * len(stores),
            width=[s["width"] for s in stores],
            text=[s["short"] for s in stores],
            textposition="inside",
            insidetextanchor="middle",
            textangle=0,
            hovertext=kv_hover,
            hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(
                color=store_colors,
                opacity=[1.0 if on else 0.25 for on in store_lit],
                line=dict(color="#22252b", width=[2.5 if (on and highlight) else 0.5 for on in store_lit]),
            ),
            showlegend=False,
        )
    )
    q_colors = [
        VARIANT_COLORS["mla"] if is_mla else PALETTE[(bar["store_bars"] or [0])[0] % EDGE_SLOTS] for bar in query_bars
    ]
    traces.append(
        dict(
            type="bar",
            x=[bar["x"] for bar in query_bars],
            y=[Q_TOP - Q_BOTTOM] * len(query_bars),
            base=[Q_BOTTOM] * len(query_bars),
            width=[bar["width"] * 0.9 for bar in query_bars],
            # Up to IN_BAR_LABELS bars the labels fit inside; past that they are the axis ticks above the row.
            text=[query_label(bar["start"], bar["stop"]) for bar in query_bars]
            if len(query_bars) <= IN_BAR_LABELS
            else None,
            textposition="inside",
            insidetextanchor="middle",
            textangle=0,
            hovertext=q_hover,
            hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(
                color=q_colors,
                opacity=[1.0 if bar["lit"] else 0.25 for bar in query_bars],
                line=dict(color="#22252b", width=[2.5 if (bar["lit"] and highlight) else 0.5 for bar in query_bars]),
            ),
            # The exact per-head mapping, head by head even when drawn in bundles: which stores each head reads.
            meta={
                "key": frame["key"],
                "stores": frame["stores"],
                "reads": [column.nonzero()[0].tolist() for column in reads.T],
            },
            showlegend=False,
        )
    )

    per_token = cfg.cache_elements_per_token
    ratio = per_token / (2 * heads * settings.head_dim)
    formula = (
        f"d_c + d_h^R = {cfg.kv_lora_rank} + {cfg.qk_rope_head_dim}"
        if is_mla
        else f"2·{frame['n_kv_heads']}·{settings.head_dim}"
    )
    cache_text = (
        f"cached per token: {formula} = {per_token:,} numbers = {format_bytes(per_token * element)} = <b>{ratio:.3g}× MHA</b><br>"
        f"whole cache at batch {batch} × {count(tokens, 'token')} in {settings.dtype}: "
        f"<b>{format_bytes(kv_cache_bytes(cfg, batch, tokens, settings.dtype))}</b>"
    )
    if is_mla:
        title = f"MLA: all heads read one latent c_kv ({cfg.kv_lora_rank}) and one rotary key k_rope ({cfg.qk_rope_head_dim})"
    elif frame["n_kv_heads"] == heads:
        title = f"MHA: {'the one query head reads' if heads == 1 else f'each of the {heads} query heads reads'} its own K/V head"
    elif frame["n_kv_heads"] == 1:
        title = f"MQA: {'the one query head reads' if heads == 1 else f'all {heads} query heads read'} one K/V head"
    else:
        title = f"GQA, {frame['n_kv_heads']} groups: each K/V head serves {heads // frame['n_kv_heads']} query heads"
    sizes = (
        [f"query bars: {query_bars[0]['stop'] - query_bars[0]['start']} heads each"] if len(query_bars) < heads else []
    )
    if not is_mla and len(stores) < len(frame["stores"]):
        sizes.append(f"KV bars: {len(stores[0]['members'])} KV heads each")
    return {
        "traces": traces,
        "title": title,
        "cache_text": cache_text,
        "bundle_note": " · ".join(sizes),
        "width": sum(s["width"] for s in stores),
    }


@st.cache_data(max_entries=32, show_spinner=False)
def mapping_chart(settings: Settings, active: int, highlight: str | None) -> tuple[dict, list[dict]]:
    """mapping_figure as the dict Streamlit sends, with its CSV rows, made once per (settings, step, highlight): at
    128 heads building and serialising the animation is a large part of a rerun, which one that changed none of them
    skips."""
    frames = frames_for(settings)
    return mapping_figure(frames, active, settings, highlight).to_dict(), mapping_rows(frames)


def mapping_figure(frames: list[dict], active: int, settings: Settings, highlight: str | None) -> go.Figure:
    """The animated figure: frame `active` is shown first (with the highlight); play runs through all frames."""
    cfgs = dict(morph_configs(settings.d_model, settings.heads, settings.latent, settings.rope_dim))
    contents = [
        _frame_content(frame, cfgs[frame["key"]], settings, highlight if index == active else None)
        for index, frame in enumerate(frames)
    ]
    widest = max(1.0, *(content["width"] for content in contents))
    x_range = [0.5 - widest / 2 - 0.02, 0.5 + widest / 2 + 0.02]

    def layout_of(content: dict) -> dict:
        return {
            "title": {"text": f"<b>{content['title']}</b>", "font": {"size": 14}},
            "annotations": [
                {
                    "x": 1.0,
                    "y": KV_BOTTOM - 0.04,
                    "xref": "x",
                    "yref": "y",
                    "text": "dashed: MHA's cache per token",
                    "showarrow": False,
                    "font": {"size": 10, "color": "#6f7a85"},
                    "xanchor": "right",
                    "yanchor": "top",
                },
                {
                    "x": 0.5,
                    "y": KV_BOTTOM - 0.15,
                    "xref": "x",
                    "yref": "y",
                    "text": content["cache_text"],
                    "showarrow": False,
                    "font": {"size": 12},
                    "yanchor": "top",
                },
                {
                    "x": 0.0,
                    "y": KV_BOTTOM - 0.04,
                    "xref": "x",
                    "yref": "y",
                    "text": content["bundle_note"],
                    "showarrow": False,
                    "font": {"size": 10, "color": "#6f7a85"},
                    "xanchor": "left",
                    "yanchor": "top",
                },
            ],
        }

    shown = contents[active]
    query_bundles = bundles(settings.heads)
    labels_inside = len(query_bundles) <= IN_BAR_LABELS
    # No tweening: Plotly tweens bar positions but applies the title and the colours when a transition ends, so with
    # one they ran half a step behind the drawing. Each frame lands whole: title, colours, bars and labels together.
    animate = {"frame": {"duration": 1100, "redraw": True}, "transition": {"duration": 0}}
    layout = dict(
        **layout_of(shown),
        height=560,
        margin=dict(t=50 if labels_inside else 105, b=95, l=70, r=10),
        barmode="overlay",
        bargap=0,
        uniformtext=dict(minsize=7, mode="hide"),
        plot_bgcolor="rgba(0,0,0,0)",
        xaxis=dict(
            range=x_range,
            fixedrange=True,
            side="top",
            showgrid=False,
            zeroline=False,
            showline=False,
            ticks="",
            tickvals=[] if labels_inside else [(a + b) / 2 / settings.heads for a, b in query_bundles],
            ticktext=[] if labels_inside else [query_label(a, b) for a, b in query_bundles],
            tickangle=-90,
            tickfont=dict(size=10),
        ),
        yaxis=dict(
            range=[-0.66, 1.24],
            tickvals=[0, 1],
            ticktext=["cached<br>per token", "query<br>heads"],
            showgrid=False,
            zeroline=False,
            fixedrange=True,
        ),
        shapes=[
            dict(
                type="rect",
                x0=0,
                x1=1,
                y0=KV_BOTTOM - 0.03,
                y1=KV_TOP + 0.03,
                line=dict(color="#9aa3ad", dash="dash", width=1),
                layer="below",
            )
        ],
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                x=0.0,
                y=-0.01,
                xanchor="left",
                yanchor="top",
                pad=dict(t=0, r=10),
                showactive=False,
                buttons=[
                    dict(
                        label="▶ Play",
                        method="animate",
                        args=[None, animate | {"fromcurrent": True, "mode": "immediate"}],
                    ),
                    dict(
                        label="❚❚ Pause",
                        method="animate",
                        args=[
                            [None],
                            {
                                "frame": {"duration": 0, "redraw": False},
                                "mode": "immediate",
                                "transition": {"duration": 0},
                            },
                        ],
                    ),
                ],
            )
        ],
        sliders=[
            dict(
                active=active,
                x=0.0,
                len=1.0,
                y=-0.1,
                xanchor="left",
                yanchor="top",
                pad=dict(t=10, b=0),
                currentvalue=dict(prefix="Step: ", xanchor="right", font=dict(size=12)),
                steps=[
                    dict(
                        label=frame_label(frame),
                        method="animate",
                        args=[
                            [frame["key"]],
                            {
                                "frame": {"duration": 0, "redraw": True},
                                "mode": "immediate",
                                "transition": {"duration": 0},
                            },
                        ],
                    )
                    for frame in frames
                ],
            )
        ],
    )
    # Built from plain dicts and not validated trace by trace (a third of the rerun's time otherwise); the tests
    # check the figure's content instead.
    return go.Figure(
        data=shown["traces"],
        layout=layout,
        frames=[
            {"name": frame["key"], "data": content["traces"], "layout": layout_of(content)}
            for frame, content in zip(frames, contents)
        ],
        _validate=False,
    )
