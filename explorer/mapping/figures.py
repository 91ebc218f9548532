"""The animated figure: one frame per step of MHA -> GQA (every valid group count) -> MQA -> MLA.

Each frame comes from explorer.probes.mapping.read_morph: which store a query head reads is what the real layer
showed when that store was disturbed, never a formula. Plotly's frames carry the whole animation, so play/pause and
the slider run in the browser without a rerun per frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from attn_core import AttentionConfig
from explorer.charts import VARIANT_COLORS
from explorer.grid import narrow
from explorer.i18n import _, speaking
from explorer.probes.mapping import MorphFrame, morph_configs
from explorer.settings import Settings

from .computed import frames_for
from .frames import bundles, frame_label, query_label
from .geometry import KV_BOTTOM, KV_TOP, Q_BOTTOM, Q_TOP, QueryBar, StoreBar, query_bars, store_bars
from .hover import bundle_note, cache_text, frame_title, query_hover, read_text, store_hover
from .tables import mapping_rows

IN_BAR_LABELS = 12  # query bars labelled inside up to this many; past it, rotated labels above the row
PALETTE = ("#3b6ea8", "#e08a2e", "#4a9a6b", "#c4573a", "#8a5cb8", "#8c6d4f", "#d36fa8", "#6f7a85", "#a7a83a", "#3aa5b8")
ROPE_COLOR = "#e0a42e"
EDGE_SLOTS = len(PALETTE)  # edge traces per frame, one per colour, so every frame has the same traces


@dataclass(frozen=True)
class FrameContent:
    """One animation step as drawn: its traces (the same number and kinds in every step), title and notes."""

    traces: list[dict]
    title: str
    cache_text: tuple[str, str]  # under the plot: per token (left), the whole cache (right)
    bundle_note: str  # how many heads a bar stands for, where bars are bundles ("" if none)
    width: float  # of the KV row, as a share of MHA's cache per token


def _edge_traces(query_bars: list[QueryBar], stores: list[StoreBar], is_mla: bool) -> list[dict]:
    """Edges, one trace per colour (grouped) or latent / rotary (MLA), so every frame has the same traces."""
    edges: list[tuple[list, list]] = [([], []) for _ in range(EDGE_SLOTS + 1)]
    for bar in query_bars:
        for s_index in bar.store_bars:
            store = stores[s_index]
            slot = EDGE_SLOTS if store.rotary else (0 if is_mla else s_index % EDGE_SLOTS)
            xs, ys = edges[slot]
            xs += [bar.x, store.x, None]
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
        for (xs, ys), color in zip(edges[:EDGE_SLOTS], edge_colors, strict=True)
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
    return traces


def _store_trace(frame: MorphFrame, stores: list[StoreBar], hover: list[str], highlight: str | None) -> dict:
    """The KV row's bars."""
    is_mla = frame.variant == "mla"
    store_colors = [VARIANT_COLORS["mla"], ROPE_COLOR] if is_mla else [PALETTE[s.index % EDGE_SLOTS] for s in stores]
    store_lit = [highlight is None or any(frame.stores[m] == highlight for m in s.members) for s in stores]
    return dict(
        type="bar",
        x=[s.x for s in stores],
        y=[KV_TOP - KV_BOTTOM] * len(stores),
        base=[KV_BOTTOM] * len(stores),
        width=[s.width for s in stores],
        text=[s.short for s in stores],
        # MLA's rotary key is a sliver beside the latent: its name goes above it, where it fits.
        textposition=["outside" if s.rotary else "inside" for s in stores],
        constraintext="inside",
        outsidetextfont=dict(color="#22252b", size=11, shadow="0px 0px 3px #f9f9f9"),
        insidetextanchor="middle",
        textangle=0,
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        marker=dict(
            color=store_colors,
            opacity=[1.0 if on else 0.25 for on in store_lit],
            line=dict(color="#22252b", width=[2.5 if (on and highlight) else 0.5 for on in store_lit]),
        ),
        showlegend=False,
    )


def _query_trace(frame: MorphFrame, query_bars: list[QueryBar], hover: list[str], highlight: str | None) -> dict:
    """The query row's bars, carrying the probe's exact per-head mapping in meta."""
    is_mla = frame.variant == "mla"
    q_colors = [
        VARIANT_COLORS["mla"] if is_mla else PALETTE[(bar.store_bars or [0])[0] % EDGE_SLOTS] for bar in query_bars
    ]
    return dict(
        type="bar",
        x=[bar.x for bar in query_bars],
        y=[Q_TOP - Q_BOTTOM] * len(query_bars),
        base=[Q_BOTTOM] * len(query_bars),
        width=[bar.width * 0.9 for bar in query_bars],
        # Up to IN_BAR_LABELS bars the labels fit inside; past that they are the axis ticks above the row.
        text=[query_label(bar.start, bar.stop) for bar in query_bars] if len(query_bars) <= IN_BAR_LABELS else None,
        textposition="inside",
        insidetextanchor="middle",
        textangle=0,
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        marker=dict(
            color=q_colors,
            opacity=[1.0 if bar.lit else 0.25 for bar in query_bars],
            line=dict(color="#22252b", width=[2.5 if (bar.lit and highlight) else 0.5 for bar in query_bars]),
        ),
        # The exact per-head mapping, head by head even when drawn in bundles: which stores each head reads.
        meta={
            "key": frame.key,
            "stores": frame.stores,
            "reads": [column.nonzero()[0].tolist() for column in frame.reads.T],
        },
        showlegend=False,
    )


def _frame_content(frame: MorphFrame, cfg: AttentionConfig, settings: Settings, highlight: str | None) -> FrameContent:
    """One animation step: the bars' geometry, then their hover text, then the traces, title and notes."""
    stores = store_bars(frame, cfg, settings)
    bars = query_bars(frame, stores, settings.heads, highlight)
    q_hover = query_hover(frame, bars, read_text(frame, cfg, settings))
    kv_hover = store_hover(frame, cfg, settings, stores)
    traces = _edge_traces(bars, stores, frame.variant == "mla")
    traces.append(_store_trace(frame, stores, kv_hover, highlight))
    traces.append(_query_trace(frame, bars, q_hover, highlight))
    return FrameContent(
        traces=traces,
        title=frame_title(frame, cfg, settings.heads),
        cache_text=cache_text(frame, cfg, settings),
        bundle_note=bundle_note(frame, stores, bars, settings.heads),
        width=sum(s.width for s in stores),
    )


@st.cache_data(max_entries=32, show_spinner=False)
def mapping_chart(settings: Settings, active: int, highlight: str | None, lang: str) -> tuple[dict, list[dict]]:
    """mapping_figure as the dict sent to the browser, with its CSV rows, made once per (settings, step, highlight,
    language: its words are made in `lang`): at 128 heads building and serialising the animation is a large part of a rerun,
    which one that changed none of them skips."""
    with speaking(lang):
        frames = frames_for(settings)
        spec = mapping_spec(frames, active, settings, highlight)
        return spec, mapping_rows(frames)


def mapping_figure(frames: list[MorphFrame], active: int, settings: Settings, highlight: str | None) -> go.Figure:
    """The animated figure: frame `active` is shown first (with the highlight); play runs through all frames."""
    spec = mapping_spec(frames, active, settings, highlight)
    return go.Figure({key: value for key, value in spec.items() if key != "narrow"}, _validate=False)


def mapping_spec(frames: list[MorphFrame], active: int, settings: Settings, highlight: str | None) -> dict:
    """mapping_figure's data, layout and frames as plain dicts (without the template). Streamlit gets these as they
    are: a go.Figure validates every frame even with _validate=False, and copies it whole in to_dict, in every rerun
    that changed the length, batch, dtype or seed, before the chart could leave the server."""
    cfgs = dict(morph_configs(settings.d_model, settings.heads, settings.latent, settings.rope_dim))
    contents = [
        _frame_content(frame, cfgs[frame.key], settings, highlight if index == active else None)
        for index, frame in enumerate(frames)
    ]
    widest = max(1.0, *(content.width for content in contents))
    query_bundles = bundles(settings.heads)
    labels_inside = len(query_bundles) <= IN_BAR_LABELS
    layout = dict(
        **_frame_layout(contents[active]),
        height=560,
        margin=dict(t=50 if labels_inside else 105, b=CACHE_TEXT_PX + SLIDER_PX, l=70, r=10),
        barmode="overlay",
        bargap=0,
        uniformtext=dict(minsize=7, mode="hide"),
        plot_bgcolor="rgba(0,0,0,0)",
        xaxis=_heads_axis(widest, [] if labels_inside else query_bundles, settings.heads),
        yaxis=dict(
            range=[KV_BOTTOM - 0.06, 1.24],  # the notes go under the plot
            tickvals=[0, 1],
            # one line each: a slide's short plot put two lines of one row's name onto the other's
            ticktext=[_("cached per token"), _("query heads")],
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
        # Under the plot, in px from its bottom: the cache text, then the buttons beside the slider, so neither the
        # text nor the buttons reach the slider at any height the chart is drawn at.
        updatemenus=[play_buttons() | {"y": 0, "pad": {"t": CACHE_TEXT_PX, "r": 10}}],
        sliders=[
            _step_slider(frames, active)
            | {"y": 0, "x": BUTTONS_SHARE, "len": 1 - BUTTONS_SHARE, "pad": {"t": CACHE_TEXT_PX, "b": 0}}
        ],
    )
    # Plain dicts, not validated trace by trace (a third of the rerun's time otherwise); the tests check the figure.
    return {
        "data": contents[active].traces,
        "layout": layout,
        "narrow": _on_a_phone(layout, contents, active),
        "frames": [
            {"name": frame.key, "data": content.traces, "layout": _frame_layout(content)}
            for frame, content in zip(frames, contents, strict=True)
        ],
    }


# The cache text under the plot: two columns of CACHE_LINES lines of CACHE_FONT px (Plotly's line height is about 1.3
# font sizes), and the buttons and slider below it.
CACHE_FONT, CACHE_LINES = 12, 3
CACHE_TEXT_PX = round(CACHE_LINES * 1.3 * CACHE_FONT) + 10
SLIDER_PX = 50  # the slider's rail and its steps' names (the title names the step shown: no current value over it)
BUTTONS_SHARE = 0.3  # of the plot's width, left of the slider
BUTTONS_PX = 40  # a row of buttons, where they go above the slider


def _frame_layout(content: FrameContent, stacked: bool = False) -> dict:
    """What changes from frame to frame besides the bars: the title and the notes under the plot, in two columns of
    CACHE_LINES lines: per token (what the dashed box is below it), the whole cache (what a bar stands for); stacked,
    one under the other (a phone's width holds one)."""
    under = {"xref": "paper", "yref": "paper", "y": 0, "yanchor": "top", "showarrow": False}
    per_token, whole = content.cache_text
    notes = (_("dashed: MHA's cache per token"), content.bundle_note)
    places = (
        ((0.0, "left", -4), (0.0, "left", -4 - CACHE_TEXT_PX)) if stacked else ((0.0, "left", -4), (1.0, "right", -4))
    )
    return {
        "title": {"text": f"<b>{content.title}</b>", "font": {"size": 14}},
        "annotations": [
            under
            | {
                "x": x,
                "xanchor": side,
                "align": side,
                "yshift": shift,
                "text": f"{text}<br>{_grey(note)}",
                "font": {"size": CACHE_FONT},
            }
            for (x, side, shift), text, note in zip(places, (per_token, whole), notes, strict=True)
        ],
    }


def _on_a_phone(layout: dict, contents: list[FrameContent], active: int) -> dict:
    """The narrow layout: the notes' columns stacked, the buttons on a row of their own above the slider (side by side
    they ran into each other), in every frame."""
    text = 2 * CACHE_TEXT_PX
    phone = layout | _frame_layout(contents[active], stacked=True)
    # the rows' names in two lines: one line took a fifth of a phone's width from the bars
    phone["yaxis"] = layout["yaxis"] | {"ticktext": [_("cached<br>per token"), _("query<br>heads")]}
    phone["margin"] = layout["margin"] | {"b": text + BUTTONS_PX + SLIDER_PX}
    phone["updatemenus"] = [menu | {"pad": {"t": text, "r": 10}} for menu in layout["updatemenus"]]
    phone["sliders"] = [slider | {"x": 0, "len": 1, "pad": {"t": text + BUTTONS_PX}} for slider in layout["sliders"]]
    frame_layouts = [{"annotations": _frame_layout(content, stacked=True)["annotations"]} for content in contents]
    return narrow(phone) | {"frameLayouts": frame_layouts}


def _grey(text: str) -> str:
    return f'<span style="color:#5b6570">{text}</span>' if text else ""


def _heads_axis(widest: float, labelled_bundles: list[tuple[int, int]], heads: int) -> dict:
    """The query heads' axis, as wide as the widest frame; ticks name the bundles when their bars cannot."""
    return dict(
        range=[0.5 - widest / 2 - 0.02, 0.5 + widest / 2 + 0.02],
        fixedrange=True,
        side="top",
        showgrid=False,
        zeroline=False,
        showline=False,
        ticks="",
        tickvals=[(a + b) / 2 / heads for a, b in labelled_bundles],
        ticktext=[query_label(a, b) for a, b in labelled_bundles],
        tickangle=-90,
        tickfont=dict(size=10),
    )


# No tweening: Plotly tweens bar positions but applies the title and the colours when a transition ends, so with one
# they ran half a step behind the drawing. Each frame lands whole: title, colours, bars and labels together.
ANIMATE = {"frame": {"duration": 1100, "redraw": True}, "transition": {"duration": 0}}
JUMP = {"mode": "immediate", "transition": {"duration": 0}}


def play_buttons(duration_ms: int = 1100) -> dict:
    """▶ Play and ❚❚ Pause through a figure's frames, each shown duration_ms."""
    animate = ANIMATE | {"frame": {"duration": duration_ms, "redraw": True}}
    return dict(
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
                label=_("▶ Play"), method="animate", args=[None, animate | {"fromcurrent": True, "mode": "immediate"}]
            ),
            dict(
                label=_("❚❚ Pause"), method="animate", args=[[None], {"frame": {"duration": 0, "redraw": False}} | JUMP]
            ),
        ],
    )


def _step_slider(frames: list[MorphFrame], active: int) -> dict:
    # no current value over the rail: "Step: GQA 2" said again what each frame's title says
    slider = step_slider([(frame.key, frame_label(frame)) for frame in frames], active)
    return slider | {"currentvalue": {"visible": False}}


def step_slider(steps: list[tuple[str, str]], active: int, prefix: str | None = None) -> dict:
    """A slider through a figure's frames, (frame name, label) each, at step `active`."""
    return dict(
        active=active,
        x=0.0,
        len=1.0,
        y=-0.1,
        xanchor="left",
        yanchor="top",
        pad=dict(t=10, b=0),
        currentvalue=dict(prefix=_("Step: ") if prefix is None else prefix, xanchor="right", font=dict(size=12)),
        steps=[
            dict(label=label, method="animate", args=[[name], {"frame": {"duration": 0, "redraw": True}} | JUMP])
            for name, label in steps
        ],
    )
