"""The trained model's views: cached probes (one forward pass per text), figures as dicts, and sentences whose
findings are computed from what is shown."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st
from plotly.colors import sample_colorscale

from explorer.heatmaps.figures import WEIGHT_COLORSCALE
from explorer.params import IntRange, Text
from explorer.probes.trained import (
    SINK_MAJORITY,
    TrainedAttention,
    WritingTrace,
    pooled_maps,
    trained_attention,
    writing_trace,
)

from .charts import VARIANT_COLORS, csv_text, typed_array
from .i18n import _, language
from .model import trained_model
from .work import takes_turns

MAX_TEXT_CHARS = 2000  # what the text box and a link take
MAX_TOKENS = 128  # tokens run through the model: 270 maps of 128 x 128 stay cheap to compute and to send
OVERVIEW_SIDE = 16  # cells per side of each head's small map in the overview
MAX_NEW_TOKENS = 48
# Token labels an axis shows at most (every few tokens past that; the hover names each): along a slanted axis a
# phone's ~190-px plot holds ~16 before they run together, an upright one of ~400 px 32.
SLANTED_TOKEN_LABELS, UPRIGHT_TOKEN_LABELS = 16, 32

# The defaults are in the page's language, so that their tokens read in it. English teaches the attention lesson
# best (the model was trained mostly on English: one token per word), and the Chinese page says so and offers the
# English sentence at a click; its Chinese default shows how the model splits Chinese (mostly into UTF-8 bytes).
DEFAULT_TEXTS = {
    "en": "The cat sat on the mat because the mat was warm. Later the dog came in, saw the cat on the mat, and lay "
    "down beside it.",
    "zh": "猫坐在垫子上，因为垫子很暖和。后来狗走了进来，看见猫在垫子上，就在它旁边躺下了。",
}
DEFAULT_PROMPTS = {
    # Answered correctly and at length (~30 tokens) by the 135M model; its answer about KV caches was wrong.
    "en": "In one sentence, what is a neural network?",
    "zh": "用两句话说明：KV 缓存存的是什么？",
}
DEFAULT_TEXT = DEFAULT_TEXTS["en"]
DEFAULT_PROMPT = DEFAULT_PROMPTS["en"]
PROMPT_CHARS = 300

TEXT = Text("tm_text", DEFAULT_TEXT, MAX_TEXT_CHARS)
LAYER = IntRange("tm_layer", 0, 29, 3)
HEAD = IntRange("tm_head", 0, 8, 0)
QUERY = IntRange("tm_query", 0, MAX_TOKENS - 1, 12)
PROMPT = Text("tm_prompt", DEFAULT_PROMPT, PROMPT_CHARS)


def default_text() -> str:
    return DEFAULT_TEXTS[language()]


def default_prompt() -> str:
    return DEFAULT_PROMPTS[language()]


def text_param() -> Text:
    """TEXT with this run's language's default."""
    return Text(TEXT.name, default_text(), MAX_TEXT_CHARS)


def prompt_param() -> Text:
    return Text(PROMPT.name, default_prompt(), PROMPT_CHARS)


STEP = IntRange("tm_step", 1, MAX_NEW_TOKENS, MAX_NEW_TOKENS)

_STEPS = np.linspace(0.0, 1.0, 9)
LINEAR_BLUES = [[float(s), c] for s, c in zip(_STEPS, sample_colorscale("Blues", _STEPS.tolist()), strict=True)]


@st.cache_data(max_entries=8, show_spinner=False)  # the page says what runs, in its language
@takes_turns
def attention_on(text: str) -> TrainedAttention:
    lm = trained_model()
    assert lm is not None  # the page stops before asking when the model is absent
    return trained_attention(lm, text, MAX_TOKENS)


@st.cache_data(max_entries=8, show_spinner=False)
@takes_turns
def writing_of(prompt: str) -> WritingTrace:
    lm = trained_model()
    assert lm is not None
    return writing_trace(lm, [{"role": "user", "content": prompt}], MAX_NEW_TOKENS)


@st.cache_data(max_entries=32, show_spinner=False)
def token_labels(text: str) -> list[str]:
    """The text's tokens as the model's own tokenizer splits it, one readable label each."""
    lm = trained_model()
    assert lm is not None
    return lm.token_strings(lm.encode(text))


# --- figures -----------------------------------------------------------------------------------------------------


def overview_figure(result: TrainedAttention) -> dict:
    """All layers x heads as small maps in one heatmap: a row per layer, heads side by side, a wider gap between the
    heads of different KV groups (each run of group_size heads shares one KV head)."""
    pooled = pooled_maps(result.maps, OVERVIEW_SIDE)  # [layers, H, s, s]
    layers, heads, side = pooled.shape[:3]
    group = result.group_size
    gap = 1
    column_starts = [h * (side + gap) + (h // group) * 2 * gap for h in range(heads)]
    width = column_starts[-1] + side
    height = layers * (side + gap)
    canvas = np.full((height, width), np.nan, dtype=np.float32)
    for layer in range(layers):
        for head in range(heads):
            top, left = layer * (side + gap), column_starts[head]
            canvas[top : top + side, left : left + side] = pooled[layer, head]
    centers_x = [start + side / 2 for start in column_starts]
    centers_y = [layer * (side + gap) + side / 2 for layer in range(layers)]
    frames = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "y",
            "x0": column_starts[g * group] - 0.5,
            "x1": column_starts[g * group + group - 1] + side - 0.5,
            "y0": -0.5,
            "y1": height - 0.5,
            "line": {"color": VARIANT_COLORS["gqa"], "width": 1.5},
        }
        for g in range(heads // group)
    ]
    return {
        "data": [
            {
                "type": "heatmap",
                "z": typed_array(canvas),
                "colorscale": WEIGHT_COLORSCALE,
                "zmin": 0,
                "zmax": 1,
                "colorbar": {"title": {"text": _("weight")}, "thickness": 12},
                "hovertemplate": _("weight %{z:.2f}") + "<extra></extra>",
            }
        ],
        "layout": {
            "height": 60 + layers * 26,
            "margin": {"l": 60, "r": 10, "t": 34, "b": 50},
            "xaxis": {
                "tickvals": centers_x,
                "ticktext": [f"h{h}<br>KV {h // group}" for h in range(heads)],  # symbols: head h, KV head
                "showgrid": False,
                "zeroline": False,
            },
            "yaxis": {
                "tickvals": centers_y,
                "ticktext": [_("layer {layer}", layer=layer) for layer in range(layers)],
                "autorange": "reversed",
                "showgrid": False,
                "zeroline": False,
                "tickfont": {"size": 9},
            },
            "shapes": frames,
        },
    }


def token_ticks(labels: list[str], most: int) -> dict:
    """Tick positions and texts for tokens 0..len(labels)-1 on a numeric axis (tokens repeat, so not a category
    axis): every token, or every few so that at most `most` are shown."""
    step = math.ceil(len(labels) / most)
    return {"tickvals": list(range(0, len(labels), step)), "ticktext": labels[::step]}


def head_figure(result: TrainedAttention, layer: int, head: int) -> dict:
    """One head's full map with token labels (numeric axes with labels as tick text: tokens repeat)."""
    weights = result.maps[layer, head].astype(np.float32)
    axis = {"tickfont": {"size": 10}, "showgrid": False, "zeroline": False}
    kv = head // result.group_size
    return {
        "data": [
            {
                "type": "heatmap",
                "z": typed_array(weights),
                "colorscale": WEIGHT_COLORSCALE,
                "zmin": 0,
                "zmax": 1,
                "colorbar": {"title": {"text": _("weight")}, "thickness": 12},
                "hovertemplate": _("query %{y} → key %{x}<br>weight %{z:.3f}") + "<extra></extra>",
            }
        ],
        "layout": {
            "title": {
                "text": _("Layer {layer}, head {head}<br>(reads KV head {kv})", layer=layer, head=head, kv=kv),
                "x": 0.0,
            },
            "height": 560,
            "margin": {"l": 90, "r": 20, "t": 80, "b": 90},
            "xaxis": axis
            | token_ticks(result.labels, SLANTED_TOKEN_LABELS)
            | {"title": {"text": _("key (attended to)")}, "tickangle": -60},
            "yaxis": axis
            | token_ticks(result.labels, UPRIGHT_TOKEN_LABELS)
            | {"title": {"text": _("query (attending)")}, "autorange": "reversed"},
        },
    }


def group_rows_figure(result: TrainedAttention, layer: int, head: int, query: int) -> dict:
    """Where query token `query` looks, in each head that shares the chosen head's KV head."""
    group = result.group_size
    kv = head // group
    members = range(kv * group, kv * group + group)
    keys = list(range(query + 1))
    palette = ["#1f5f99", "#4a9a6b", "#c4573a", "#8a5cb8"]
    traces = [
        {
            "type": "bar",
            "name": _("head {h}", h=h),
            "x": keys,
            "y": typed_array(result.maps[layer, h, query, : query + 1].astype(np.float32)),
            "marker": {"color": palette[i % len(palette)]},
            "hovertemplate": _("head {h}<br>key %{{x}}: %{{y:.3f}}", h=h) + "<extra></extra>",
        }
        for i, h in enumerate(members)
    ]
    return {
        "data": traces,
        "layout": {
            "title": {
                "text": _(
                    "Query {query} ({token}), layer {layer}:<br>the {group} heads of KV head {kv}",
                    query=query,
                    token=result.labels[query],
                    layer=layer,
                    group=group,
                    kv=kv,
                ),
                "x": 0.0,
            },
            "barmode": "group",
            "height": 360,
            "margin": {"l": 60, "r": 20, "t": 80, "b": 90},
            "xaxis": token_ticks(result.labels[: query + 1], SLANTED_TOKEN_LABELS)
            | {"tickangle": -60, "title": {"text": _("key")}},
            "yaxis": {"title": {"text": _("weight")}, "range": [0, 1]},
            "legend": {"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
        },
    }


def shares_figure(result: TrainedAttention) -> dict:
    """Two layer x head grids: each head's mean share on the first token and on the previous token."""
    _layers, heads = result.first_token_share.shape
    common = {"type": "heatmap", "zmin": 0, "zmax": 1, "colorscale": LINEAR_BLUES}
    head_ticks = {"tickvals": list(range(heads)), "ticktext": [f"h{h}" for h in range(heads)]}
    return {
        "data": [
            common
            | {
                "z": typed_array(result.first_token_share),
                "xaxis": "x",
                "yaxis": "y",
                "colorbar": {"title": {"text": _("share")}, "thickness": 12},
                "hovertemplate": _("layer %{y}, head %{x}: %{z:.2f} on the first token") + "<extra></extra>",
            },
            common
            | {
                "z": typed_array(result.previous_token_share),
                "xaxis": "x2",
                "yaxis": "y2",
                "showscale": False,
                "hovertemplate": _("layer %{y}, head %{x}: %{z:.2f} on the previous token") + "<extra></extra>",
            },
        ],
        "layout": {
            "height": 550,
            "margin": {"l": 60, "r": 20, "t": 90, "b": 40},  # the two-line column titles below the chart's toolbar
            "xaxis": head_ticks | {"domain": [0, 0.44]},
            "xaxis2": head_ticks | {"domain": [0.52, 0.96]},
            "yaxis": {"title": {"text": _("layer")}, "autorange": "reversed"},
            "yaxis2": {"anchor": "x2", "autorange": "reversed", "showticklabels": False},
            "annotations": [
                {"text": _("first<br>token"), "x": 0.22, **_title_spot()},
                {"text": _("previous<br>token"), "x": 0.74, **_title_spot()},
            ],
        },
    }


def _title_spot() -> dict:
    return {"xref": "paper", "yref": "paper", "y": 1.02, "yanchor": "bottom", "showarrow": False, "font": {"size": 12}}


def cache_growth_figure(trace: WritingTrace, step: int) -> dict:
    """The whole model's cache while it writes: measured (as trained, GQA) against what MHA and MQA would hold."""
    tokens = [s.cached_tokens for s in trace.steps]
    mib = 1024**2
    lines = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": _("GQA, {n} KV heads (measured)", n=trace.n_kv_heads),
            "x": tokens,
            "y": [s.cache_bytes / mib for s in trace.steps],
            "line": {"color": VARIANT_COLORS["gqa"]},
            "hovertemplate": _("%{x} tokens: %{y:,.2f} MiB") + "<extra>" + _("measured") + "</extra>",
        }
    ]
    names = {
        "mha": _("MHA, {n} KV heads (formula)", n=trace.n_heads),
        "mqa": _("MQA, 1 KV head (formula)"),
    }
    for variant, name in names.items():
        per_token = trace.per_token_bytes[variant]
        lines.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": tokens,
                "y": [per_token * t / mib for t in tokens],
                "line": {"color": VARIANT_COLORS[variant], "dash": "dot"},
                "hovertemplate": _("%{x} tokens: %{y:,.2f} MiB") + "<extra>" + variant.upper() + "</extra>",
            }
        )
    now = trace.steps[step - 1]
    lines.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": _("step {step}", step=step),
            "x": [now.cached_tokens],
            "y": [now.cache_bytes / mib],
            "marker": {"size": 13, "color": "#222", "symbol": "circle-open", "line": {"width": 2}},
            "hoverinfo": "skip",
        }
    )
    return {
        "data": lines,
        "layout": {
            "title": {
                "text": _(
                    "Whole-model KV cache<br>({layers} layers, float32) as the model writes", layers=trace.n_layers
                ),
                "x": 0,
            },
            "height": 420,
            "margin": {"l": 70, "r": 20, "t": 60, "b": 110},
            "xaxis": {"title": {"text": _("tokens in the cache")}},
            "yaxis": {"title": {"text": _("cache size (MiB)")}, "rangemode": "tozero"},
            # below the axis title, with room for two rows of legend on a narrow screen
            "legend": {"orientation": "h", "y": -0.3, "yanchor": "top"},
        },
    }


# --- sentences computed from what is shown --------------------------------------------------------------------------


def findings(result: TrainedAttention) -> list[str]:
    heads = result.first_token_share.size
    if len(result.ids) < 3:
        return [_("Give at least three tokens to measure where heads look.")]
    sinks = int((result.first_token_share > SINK_MAJORITY).sum())
    previous = int((result.previous_token_share > SINK_MAJORITY).sum())
    best = np.unravel_index(np.nanargmax(result.previous_token_share), result.previous_token_share.shape)
    lines = [
        _(
            "**{sinks} of {n} heads** put over half of their attention on the first token (the *attention sink*: "
            "a place to park attention when nothing else matters).",
            sinks=sinks,
            n=heads,
        ),
        _(
            "**{previous} of {n} heads** put over half on the token just before (previous-token heads); the "
            "strongest is layer {layer}, head {head} at {share}.",
            previous=previous,
            n=heads,
            layer=int(best[0]),
            head=int(best[1]),
            share=f"{result.previous_token_share[best]:.2f}",
        ),
    ]
    within, across = result.js_within_group, result.js_across_groups
    if within < across:
        sentence = _(
            "Heads that share a KV head attend more alike than heads that do not: mean Jensen-Shannon distance "
            "between their rows {within}, against {across} across KV heads (0 = identical, 1 = disjoint). They read "
            "the same keys, so they can differ only through their queries."
        )
    elif within > across:
        sentence = _(
            "Heads that share a KV head attend less alike than heads that do not: mean Jensen-Shannon distance "
            "between their rows {within}, against {across} across KV heads (0 = identical, 1 = disjoint). They read "
            "the same keys, so they can differ only through their queries."
        )
    else:
        sentence = _(
            "Heads that share a KV head attend as alike as heads that do not: mean Jensen-Shannon distance between "
            "their rows {within}, against {across} across KV heads (0 = identical, 1 = disjoint). They read the "
            "same keys, so they can differ only through their queries."
        )
    lines.append(sentence.format(within=f"{within:.3f}", across=f"{across:.3f}"))  # _() left the {slots} in
    return lines


def token_chips(labels: list[str], of: str = "text") -> str:
    """The tokens as HTML chips (escaped), one element per token; `of` names what was split (data-of="text",
    "prompt", ...), so that a page showing several splits tells them apart."""
    from html import escape

    chips = "".join(
        f'<span class="token-chip" style="display:inline-block;margin:2px;padding:1px 5px;border-radius:4px;'
        f'background:rgba(74,154,107,{0.12 + 0.1 * (i % 2)});font-family:monospace;font-size:0.85rem">'
        f"{escape(label)}</span>"
        for i, label in enumerate(labels)
    )
    return f'<div class="token-chips" data-of="{escape(of)}">{chips}</div>'


# --- the numbers each chart plots, as CSV (written when its button is clicked) --------------------------------------


def overview_csv(result: TrainedAttention) -> str:
    pooled = pooled_maps(result.maps, OVERVIEW_SIDE)
    layers, heads, side = pooled.shape[:3]
    return csv_text(
        [
            {"layer": layer, "head": head, "kv_head": head // result.group_size, "query_block": q, "key_block": k}
            | {"mean_weight": f"{pooled[layer, head, q, k]:.5f}"}
            for layer in range(layers)
            for head in range(heads)
            for q in range(side)
            for k in range(side)
        ]
    )


def shares_csv(result: TrainedAttention) -> str:
    layers, heads = result.first_token_share.shape
    return csv_text(
        [
            {
                "layer": layer,
                "head": head,
                "kv_head": head // result.group_size,
                "first_token_share": f"{result.first_token_share[layer, head]:.5f}",
                "previous_token_share": f"{result.previous_token_share[layer, head]:.5f}",
            }
            for layer in range(layers)
            for head in range(heads)
        ]
    )


def head_csv(result: TrainedAttention, layer: int, head: int) -> str:
    weights = result.maps[layer, head]
    return csv_text(
        [
            {"query": q, "query_token": result.labels[q], "key": k, "key_token": result.labels[k]}
            | {"weight": f"{float(weights[q, k]):.5f}"}
            for q in range(len(result.ids))
            for k in range(q + 1)
        ]
    )


def group_rows_csv(result: TrainedAttention, layer: int, head: int, query: int) -> str:
    group = result.group_size
    kv = head // group
    return csv_text(
        [
            {
                "head": h,
                "key": k,
                "key_token": result.labels[k],
                "weight": f"{float(result.maps[layer, h, query, k]):.5f}",
            }
            for h in range(kv * group, kv * group + group)
            for k in range(query + 1)
        ]
    )


def writing_csv(trace: WritingTrace) -> str:
    return csv_text(
        [
            {
                "step": index,
                "token": step.label,
                "cached_tokens": step.cached_tokens,
                "measured_bytes": step.cache_bytes,
                "formula_bytes": step.formula_bytes,
                "mha_bytes": trace.per_token_bytes["mha"] * step.cached_tokens,
                "mqa_bytes": trace.per_token_bytes["mqa"] * step.cached_tokens,
            }
            for index, step in enumerate(trace.steps, start=1)
        ]
    )
