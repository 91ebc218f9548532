"""The head -> KV mapping page's view settings, cached probes and its animated figure.

The figure draws one frame per step of MHA -> GQA (every valid group count) -> MQA -> MLA. Each frame comes from
explorer.probes.mapping.read_morph: which store a query head reads is what the real layer showed when that store was
disturbed, never a formula. Plotly's frames carry the whole animation, so play/pause and the slider run in the
browser without a rerun per frame.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from attn_core import VARIANTS, AttentionConfig
from attn_core.accounting import bytes_per_element, decode_flops_per_token, kv_cache_bytes, naive_up_projection_flops
from explorer.probes.mapping import compare_mla_ways, fused_projection, morph_configs, narrowed, path_shapes, read_morph

from .charts import PLOTLY_TEMPLATE, VARIANT_COLORS, difference, format_bytes, shape_text
from .params import Choice
from .settings import Settings
from .work import takes_turns

MAP_VARIANT = Choice("map_variant", VARIANTS, "gqa")
MAP_STORE = Choice(
    "map_store", ("none",), "none"
)  # the real options (kv0, kv1, ... or c_kv, k_rope) depend on the view

# Building a layer's seeded weights runs at roughly 50 M numbers a second here (6 s for one MHA layer at d_model 8192),
# and the animation needs up to ten layers. Past this width the probes build layers whose input is narrowed (see
# explorer.probes.mapping.narrowed): same heads, groups and per-head widths, so the same stores and the same readers.
FULL_WIDTH_LIMIT = 512
NARROW_WIDTH = 64
MAX_DRAWN = 32  # past this many heads (or KV heads) a row is drawn in labelled bundles of consecutive heads
IN_BAR_LABELS = 12  # query bars labelled inside up to this many; past it, rotated labels above the row
MLA_TIMED_CONTEXT = 512  # cached tokens before the timed MLA decode step...
NAIVE_FLOP_BUDGET = 1e9  # ...fewer if the naive way would spend more than this re-up-projecting them every step

PALETTE = ("#3b6ea8", "#e08a2e", "#4a9a6b", "#c4573a", "#8a5cb8", "#8c6d4f", "#d36fa8", "#6f7a85", "#a7a83a", "#3aa5b8")
ROPE_COLOR = "#e0a42e"
EDGE_SLOTS = len(PALETTE)  # edge traces per frame, one per colour, so every frame has the same traces
Q_TOP, Q_BOTTOM, KV_TOP, KV_BOTTOM = 1.16, 0.84, 0.16, -0.16


# --- probes, cached by the settings they depend on ------------------------------------------------------------------
def probe_width(d_model: int) -> int:
    """The input width of the layers the probes build: the real one up to FULL_WIDTH_LIMIT, else NARROW_WIDTH."""
    return d_model if d_model <= FULL_WIDTH_LIMIT else NARROW_WIDTH


@st.cache_data(max_entries=32, show_spinner="Reading which store each head reads off the layers…")
@takes_turns
def morph_frames(d_model: int, heads: int, latent: int, rope_dim: int, seed: int) -> list[dict]:
    """One probe result per animation step (groups, batch, length and dtype do not change them)."""
    return read_morph(d_model, heads, latent, rope_dim, seed=seed, input_width=probe_width(d_model))


def frames_for(settings: Settings) -> list[dict]:
    return morph_frames(settings.d_model, settings.heads, settings.latent, settings.rope_dim, settings.seed)


@st.cache_data(max_entries=64, show_spinner=False)
def shape_rows(cfg: AttentionConfig, batch: int, seq_len: int) -> list[dict]:
    return path_shapes(cfg, batch=batch, seq_len=seq_len)


def timed_context(cfg: AttentionConfig) -> int:
    """Cached tokens for the MLA timing: MLA_TIMED_CONTEXT, or fewer when the naive step would exceed the budget."""
    return max(1, min(MLA_TIMED_CONTEXT, int(NAIVE_FLOP_BUDGET // naive_up_projection_flops(cfg, 1))))


@st.cache_data(max_entries=16, show_spinner="Timing MLA's two ways of decoding…")
@takes_turns
def mla_ways(cfg: AttentionConfig, seed: int) -> dict:
    probe_cfg = narrowed(cfg, probe_width(cfg.d_model))
    return compare_mla_ways(probe_cfg, seed=seed, context_len=timed_context(cfg)) | {"input_width": probe_cfg.d_model}


def mla_cost_rows(cfg: AttentionConfig, ways: dict, seq_len: int) -> list[dict]:
    """FLOPs per decoded token both ways (your layer at your length, and the timed layer at the timed length), with
    the measured time of each way's decode step."""
    timed_cfg, timed = narrowed(cfg, ways["input_width"]), ways["context_len"]
    rows = []
    for name, absorbed in (("naive: up-project the cache", False), ("absorbed weights", True)):
        rows.append(
            {
                "Way": name,
                f"FLOPs per token, your layer at {seq_len:,} cached": f"{decode_flops_per_token(cfg, seq_len, absorbed=absorbed) / 1e6:,.2f} MFLOP",
                f"FLOPs per token, timed layer at {timed:,} cached": f"{decode_flops_per_token(timed_cfg, timed, absorbed=absorbed) / 1e6:,.2f} MFLOP",
                f"Measured decode step at {timed:,} cached": f"{ways['absorbed_ms' if absorbed else 'naive_ms']:.2f} ms",
            }
        )
    return rows


@st.cache_data(max_entries=32, show_spinner=False)
@takes_turns
def fused_result(cfg: AttentionConfig, seed: int, batch: int, seq_len: int) -> dict:
    return fused_projection(cfg, seed=seed, batch=batch, seq_len=seq_len, input_width=probe_width(cfg.d_model))


# --- which frame, which store ---------------------------------------------------------------------------------------
def frame_key(settings: Settings, variant: str) -> str:
    """The animation step that shows this variant at these settings (GQA with every or one group is MHA or MQA)."""
    if variant != "gqa":
        return variant
    if settings.groups == settings.heads:
        return "mha"
    if settings.groups == 1:
        return "mqa"
    return f"gqa:{settings.groups}"


def frame_label(frame: dict) -> str:
    if frame["variant"] == "gqa":
        return f"GQA {frame['n_kv_heads']}"
    return frame["variant"].upper()


def store_label(name: str) -> str:
    if name == "none":
        return "no store (show all)"
    if name == "c_kv":
        return "c_kv: the latent"
    if name == "k_rope":
        return "k_rope: the shared rotary key"
    return f"KV head {name.removeprefix('kv')}"


def readers(frame: dict, store: str) -> list[int]:
    """Query heads whose output moved when this store was disturbed."""
    return [int(h) for h in frame["reads"][frame["stores"].index(store)].nonzero()[0]]


def ranges_text(indices: list[int]) -> str:
    """[0, 1, 2, 5] -> "0–2, 5"."""
    parts, start = [], None
    for i, value in enumerate(indices):
        if start is None:
            start = value
        if i + 1 == len(indices) or indices[i + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}–{value}")
            start = None
    return ", ".join(parts)


def bundles(n: int, max_drawn: int = MAX_DRAWN) -> list[tuple[int, int]]:
    """Consecutive [start, stop) ranges covering n heads, at most max_drawn of them, of equal size where possible."""
    if n <= max_drawn:
        return [(i, i + 1) for i in range(n)]
    size = next(b for b in range(2, n + 1) if n % b == 0 and n // b <= max_drawn)
    if size > 2 * -(-n // max_drawn):  # no divisor near n / max_drawn: split as evenly as possible instead
        edges = [round(i * n / max_drawn) for i in range(max_drawn + 1)]
        return list(zip(edges[:-1], edges[1:]))
    return [(i, i + size) for i in range(0, n, size)]


def query_label(start: int, stop: int) -> str:
    return f"h{start}" if stop - start == 1 else f"h{start}–{stop - 1}"


def head_span(start: int, stop: int, word: str) -> str:
    return f"{word} {start}" if stop - start == 1 else f"{word}s {start}–{stop - 1}"


# --- the figure -----------------------------------------------------------------------------------------------------
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
        f"whole cache at batch {batch} × {tokens:,} tokens in {settings.dtype}: "
        f"<b>{format_bytes(kv_cache_bytes(cfg, batch, tokens, settings.dtype))}</b>"
    )
    if is_mla:
        title = f"MLA: all heads read one latent c_kv ({cfg.kv_lora_rank}) and one rotary key k_rope ({cfg.qk_rope_head_dim})"
    elif frame["n_kv_heads"] == heads:
        title = f"MHA: each of the {heads} query heads reads its own K/V head"
    elif frame["n_kv_heads"] == 1:
        title = f"MQA: all {heads} query heads read one K/V head"
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
    128 heads building and serialising the animation takes ~0.1 s, which a rerun that changed none of them skips."""
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


def mapping_rows(frames: list[dict]) -> list[dict]:
    """The CSV: for every step and query head, the stores it was seen to read and how far its output moved."""
    rows = []
    for frame in frames:
        for head in range(frame["reads"].shape[1]):
            read = [s for s in range(len(frame["stores"])) if frame["reads"][s, head]]
            rows.append(
                {
                    "step": frame["key"],
                    "query_head": head,
                    "reads": " ".join(frame["stores"][s] for s in read),
                    "smallest_move_of_a_read_store": min(float(frame["change"][s, head]) for s in read) if read else "",
                    "largest_move_of_an_unread_store": max(
                        (float(frame["change"][s, head]) for s in range(len(frame["stores"])) if s not in read),
                        default="",
                    ),
                }
            )
    return rows


def separation(frames: list[dict]) -> tuple[float, float | None]:
    """Across all steps: the smallest output move of a head whose store was disturbed, the largest of one whose was not."""
    moved = min(float(f["change"][f["reads"]].min()) for f in frames)
    unmoved = [float(f["change"][~f["reads"]].max()) for f in frames if (~f["reads"]).any()]
    return moved, (max(unmoved) if unmoved else None)


def formula_agrees(frame: dict) -> bool:
    """Does what was read off the layer equal the textbook rule, head i reads KV head i // (heads / groups)?"""
    heads = frame["reads"].shape[1]
    if frame["variant"] == "mla":
        return bool(frame["reads"].all())
    group = heads // frame["n_kv_heads"]
    return all(readers(frame, f"kv{g}") == list(range(g * group, (g + 1) * group)) for g in range(frame["n_kv_heads"]))


# --- shapes table ---------------------------------------------------------------------------------------------------
def shape_table(rows: list[dict], way: str) -> list[dict]:
    """Display rows for one way ("both" rows appear in either); shapes as text with thousands separators."""
    return [
        {
            "Step": row["step"],
            "Prefill": shape_text(row["prefill"]),
            "Decode 1 token": shape_text(row["decode"]),
            "Note": row["note"],
        }
        for row in rows
        if row["way"] in ("both", way)
    ]


# --- one fused weight for q, k and v --------------------------------------------------------------------------------
FUSED_LAYOUT_NAMES = {
    "stacked": "stacked (GPT-2 c_attn, Phi-3 qkv_proj)",
    "grouped": "grouped (Falcon, BLOOM query_key_value)",
}
PROJECTION_NAMES = {"q": "query", "k": "key", "v": "value"}
FUSED_LABELS_UP_TO = 40  # blocks labelled inside the bar up to this many per layout


def fused_block_rows(result: dict, cfg: AttentionConfig) -> list[dict]:
    """One row per head_dim-wide block of the fused weight, per layout: which head of which projection it holds."""
    rows = []
    for layout, found in result["layouts"].items():
        for index, (name, head) in enumerate(found["blocks"]):
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


def fused_figure(result: dict, cfg: AttentionConfig) -> dict:
    """The fused weight's rows in each layout as a bar of head_dim-wide blocks, coloured by KV group (as in the
    mapping above); keys hatched, values dotted. A figure dict, shown as it is by explorer.charts.show_chart: Plotly validated
    a few hundred bars in 0.1 s; the tests validate it instead."""
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
            "title": {"text": f"rows of W_qkv ({result['weight'][0]:,} = (heads + 2 · KV heads) × head_dim)"},
            "range": [0, result["weight"][0]],
        },
        "yaxis": {"autorange": "reversed", "automargin": True},
        "plot_bgcolor": "rgba(0,0,0,0)",
        "template": PLOTLY_TEMPLATE,
    }
    return {"data": data, "layout": layout}


def fused_agreement(result: dict) -> str:
    """How closely each layout's fused product matched the separate projections, for the caption."""
    said = {layout: difference(found["max_abs_diff"]) for layout, found in result["layouts"].items()}
    if len(set(said.values())) == 1:
        return f"in both layouts {next(iter(said.values()))}"
    return " and ".join(f"{layout} {text}" for layout, text in said.items())


def fused_shape_table(result: dict, cfg: AttentionConfig) -> list[dict]:
    return [
        {
            "Step": "W_qkv",
            "Shape": shape_text(result["weight"]),
            "Note": f"{cfg.n_heads} query + {cfg.n_kv_heads} key + "
            f"{cfg.n_kv_heads} value heads of {cfg.head_dim} rows, by d_model",
        },
        {"Step": "qkv = x · W_qkvᵀ", "Shape": shape_text(result["fused"]), "Note": "one matrix product for all three"},
        {"Step": "q", "Shape": shape_text(result["q"]), "Note": "its columns, cut as the layout says"},
        {
            "Step": "k",
            "Shape": shape_text(result["k"]),
            "Note": f"{cfg.n_kv_heads} head(s): fusing does not repeat them",
        },
        {"Step": "v", "Shape": shape_text(result["v"]), "Note": "then on as in the table above"},
    ]
