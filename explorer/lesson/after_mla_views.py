"""The second chapter's charts and the numbers its steps quote, each from one measurement: published models' caches
(the axes page's probe, explorer.probes.axes), the trained model's attention (the trained page's probe), the lab's
stored window table, and the trained model's keys quantised (explorer.probes.key_bits).

explorer/lesson/chapters.py puts VIEWS and NUMBERS beside the first chapter's (explorer/lesson/views.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import cast
from urllib.parse import urlencode

import numpy as np
import streamlit as st
import torch

from attn_core import PUBLISHED
from attn_core.compressed import CompressedAttention, CompressedCache, CompressedConfig
from attn_core.pretrained import ModelNotInstalled
from explorer.axes import computed as axes_computed
from explorer.axes import figures as axes_figures
from explorer.axes import link as axes_link
from explorer.axes import text as axes_text
from explorer.i18n import _, fmt, format_bytes, percent, sig, speaking
from explorer.lab import link as lab_link
from explorer.lab.axes_points import load_points, within_budget
from explorer.lab.axes_text import axis_name, point_name
from explorer.lab.window_table import WINDOW_TABLE_PATH, WindowTable, load_window_table
from explorer.link import link_query
from explorer.model import shared_model, trained_model
from explorer.params import Param
from explorer.present import presenting
from explorer.probes.axes import (
    AxisCuts,
    ModelCurves,
    axis_cuts,
    extremes,
    first_of_each_kind,
    leaders,
    made_for,
    plateaus,
)
from explorer.probes.key_bits import KeyBits, key_bits
from explorer.probes.lab import split_tokens
from explorer.settings import Settings
from explorer.trained import computed as trained_computed
from explorer.trained import link as trained_link
from explorer.work import takes_turns

from . import after_mla_figures as figures
from . import after_mla_slides
from .views import Animation, StepView, slide_height

TOKENS = 131072  # the length every published model is compared at: 128K, the long context of 2025-26
WINDOW_MODEL, SPARSE_MODEL, COMPRESSED_MODEL, LINEAR_MODEL, MLA_MODEL = (
    "Gemma 3 27B",
    "DeepSeek-V3.2",
    "DeepSeek-V4-Flash",
    "Qwen3-Next-80B-A3B",
    "DeepSeek-V3",
)
PLAIN_MODEL = "Llama 3 8B"  # the first chapter's design (GQA, every token, every layer): the axes' example
SINK_WINDOW = 128  # the lab's window the sinks step quotes (every layer windowed)
KEY_LAYER, KEY_BITS, KEY_GROUP, KEY_TOKENS = 15, 2, 32, 512  # a middle layer, KIVI's 2 bits, on the lab's text


def _model_installed() -> bool:
    """Whether the trained model loads, without a word (the view says how to install it)."""
    try:
        shared_model()
    except ModelNotInstalled:
        return False
    return True


def _step_view(
    spec: dict, rows: list[dict], caption: str, page: str, query: dict, animation: Animation | None = None
) -> StepView:
    """The step's StepView at the default sidebar settings (these charts read none of them)."""
    return StepView(spec, rows, caption, page, query, animation=animation)


def _curves() -> dict[str, ModelCurves]:
    drawn, _missing = axes_computed.cached_published()
    return {model.name: model for model in drawn}


def _axes_query(measure: str = "held") -> dict:
    return {axes_link.TOKENS: TOKENS, axes_link.MEASURE: measure}


def _tokens_label() -> str:
    return axes_figures.token_label(TOKENS)


# --- 13: the four axes -----------------------------------------------------------------------------------------------
def _cuts() -> list[AxisCuts]:
    return [axis_cuts(model, TOKENS) for model in _curves().values()]


def _best(cuts: list[AxisCuts]) -> AxisCuts:
    """The model that cuts most in all four axes."""
    return max((c for c in cuts if c.total is not None), key=lambda c: c.total or 0)


def _grid_cuts() -> list[AxisCuts]:
    """The step's grid rows, in attn_core.PUBLISHED's order: the models its words name (the first chapter's design,
    MLA's, the largest cut in all four, each axis's leader) and the first published model of each kind of layer. All
    of them (19) made the plot ~270 px tall on a slide, and Plotly named every other row; /axes draws them all."""
    cuts = _cuts()
    named = {PLAIN_MODEL, MLA_MODEL, _best(cuts).name} | {cut.name for cut in leaders(cuts).values()}
    kept = named | set(first_of_each_kind(list(_curves().values())))
    return [cut for cut in cuts if cut.name in kept]


def axes_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        curves, cuts = _curves(), {cut.name: cut for cut in _cuts()}
        plain = curves[PLAIN_MODEL]
        best = _best(list(cuts.values()))
        return {
            "tokens": _tokens_label(),
            "plain_model": plain.name,
            "plain_bytes": format_bytes(plain.held[plain.at(TOKENS)]),
            "mla_model": MLA_MODEL,
            "mla_width": sig(cuts[MLA_MODEL].width or 0),
            "best_model": best.name,
            "best_total": sig(best.total or 0),
        }


def four_axes(lang: str) -> StepView:
    with speaking(lang):
        cuts, published = _grid_cuts(), len(_curves())
        figure, csv = axes_figures.axes_figure(cuts, TOKENS, of=published)
        if presenting():
            figure = figures.grid_on_a_slide(figure, slide_height("axes"))
        caption = axes_text.sentences_of(
            axes_text.axis_leaders(cuts, TOKENS),
            _(
                "The grid draws {shown} of the {published} published models: those this step names and one of "
                "each kind of layer; the axes page (Explore this) draws all {published}.",
                shown=len(cuts),
                published=published,
            ),
        )
        return _step_view(figure, csv, caption, "axes", _axes_query())


# --- 14: sliding windows ------------------------------------------------------------------------------------------
def _kinds(model: ModelCurves) -> dict:
    return {kind.kind: kind for kind in model.kinds}


def window_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        model = _curves()[WINDOW_MODEL]
        kinds, i = _kinds(model), model.at(TOKENS)
        sliding, full = kinds["sliding"], kinds["full"]
        return {
            "model": model.name,
            "tokens": _tokens_label(),
            "sliding": sliding.count,
            "full": full.count,
            "window": _window(),
            "sliding_bytes": format_bytes(sliding.held[i]),
            # the W - 1 tokens a window layer keeps, and one token's row in one layer: the product is sliding_bytes
            "kept": fmt(_window() - 1),
            "row": format_bytes(sliding.held[i] / (sliding.count * (_window() - 1))),
            "full_bytes": format_bytes(full.held[i]),
            "full_share": percent(full.held[i] / model.held[i]),
        }


@st.cache_data(max_entries=4, show_spinner=False)
def window_gif(lang: str) -> bytes:
    """The window step's animation, its words in `lang` (a download's data is made when clicked, outside the run
    that knew the language)."""
    with speaking(lang):
        return after_mla_slides.window_gif(_curves()[WINDOW_MODEL], _window(), TOKENS)


def _window() -> int:
    config = PUBLISHED[WINDOW_MODEL]
    return int(config.get("text_config", config)["sliding_window"])


def window_layers(lang: str) -> StepView:
    model = _curves()[WINDOW_MODEL]
    figure, csv = axes_figures.context_figure([model], "held", TOKENS, by_kind=True, named_ends=False)
    caption = axes_text.sentences_of(*axes_text.plateau_sentences(plateaus(model)))
    frames = sum(1 for t in model.tokens if t <= TOKENS)
    animation = Animation(f"sliding-window-{lang}.gif", lambda: window_gif(lang), frames)
    return _step_view(figure, csv, caption, "axes", _axes_query(), animation=animation)


# --- 15: attention sinks -------------------------------------------------------------------------------------------
def _window_table() -> WindowTable | None:
    try:
        return load_window_table()
    except (OSError, ValueError):
        return None


def _sink_shares() -> np.ndarray:  # the trained page's probe on its English sentence (the model reads English best)
    return trained_computed.attention_on(trained_link.DEFAULT_TEXTS["en"]).first_token_share


def sinks_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        table = _window_table()
        if table is None or not _model_installed():
            return dict.fromkeys(("sinks", "heads", "window", "without", "with_sink", "original", "four"), "—")
        shares = _sink_shares()
        return {
            "sinks": sum(figures.sink_heads(shares)),  # the left panel's bars, summed
            "heads": int(shares.size),
            "window": SINK_WINDOW,
            "without": f"{table.row(SINK_WINDOW, 0).perplexity:.1f}",
            "with_sink": f"{table.row(SINK_WINDOW, 1).perplexity:.1f}",
            "four": f"{table.row(SINK_WINDOW, 4).perplexity:.1f}",
            "original": f"{table.row(None).perplexity:.1f}",
        }


def first_token(lang: str) -> StepView | None:
    with speaking(lang):
        if trained_model() is None:  # None after saying how to install it
            return None
        table = _window_table()
        if table is None:
            st.warning(
                _(
                    "The lab's window table ({file}) is missing or unreadable: run `python benchmarks/window_sinks.py` "
                    "to measure it.",
                    file=WINDOW_TABLE_PATH.name,
                )
            )
            return None
        figure, csv = figures.sinks_figure(_sink_shares(), table)
        caption = _(
            "Left: the trained page's measurement on its English sentence (the model reads English best; so does the "
            "page this opens), each layer's heads that put over half of their weight on the first token. Right: the "
            "lab's perplexity on {tokens} tokens of its text in pieces of {piece}, every layer windowed.",
            tokens=table.tokens,
            piece=table.piece,
        )
        return _step_view(figure, csv, caption, "trained", {trained_link.TEXT: trained_link.DEFAULT_TEXTS["en"]})


# --- 16, 17: DeepSeek-V3.2 and V4 against V3 ------------------------------------------------------------------------
def _against_base(name: str) -> dict[str, object]:
    curves = _curves()
    model, base = curves[name], curves[MLA_MODEL]
    i, j = model.at(TOKENS), base.at(TOKENS)
    return {
        "model": name,
        "base": MLA_MODEL,
        "tokens": _tokens_label(),
        "held": format_bytes(model.held[i]),
        "read": format_bytes(model.read[i]),
        "held_share": percent(model.held[i] / base.held[j]),
        "read_share": percent(model.read[i] / base.read[j]),
    }


def sparse_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        return _against_base(SPARSE_MODEL) | {"top_k": PUBLISHED[SPARSE_MODEL]["index_topk"]}


def _held_and_read(name: str) -> StepView:
    curves = _curves()
    models = [curves[MLA_MODEL], curves[name]]
    figure, csv = figures.held_and_read_figure(models, TOKENS)
    caption = axes_text.sentences_of(
        axes_text.successor_sentence(curves[MLA_MODEL], curves[name], TOKENS),
        axes_text.reading_sentence(curves[name], TOKENS),
        *(
            _(
                "{model} reads all it holds: each step reads every cached byte, so its dashed line (read) runs "
                "inside its wide pale one (held).",
                model=model.name,
            )
            for model in models
            if figures.reads_all_it_holds(model)
        ),
    )
    return _step_view(figure, csv, caption, "axes", _axes_query("read"))


def top_k(lang: str) -> StepView:
    with speaking(lang):
        return _held_and_read(SPARSE_MODEL)


def compressed_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        config = PUBLISHED[COMPRESSED_MODEL]
        rates = [rate for rate in config["compress_ratios"] if rate]
        model = _curves()[COMPRESSED_MODEL]
        return _against_base(COMPRESSED_MODEL) | {
            "csa_rate": min(rates),
            "hca_rate": max(rates),
            "width": config["head_dim"],
            "tokens_cut": sig(axis_cuts(model, TOKENS).tokens),
        }


COMPRESSED_STRIDE = 3  # tokens between the GIF's frames: not a multiple of m = 4, so the waiting tokens change


def _csa_layer() -> int:
    """The first of DeepSeek-V4-Flash's layers that compresses with m = 4 (CSA), as its config lists them."""
    rates = PUBLISHED[COMPRESSED_MODEL]["compress_ratios"]
    return int(rates.index(min(rate for rate in rates if rate)))


def compressed_caches() -> tuple[CompressedConfig, list[CompressedCache]]:
    """The core's cache of V4-Flash's first CSA layer after every COMPRESSED_STRIDE tokens, until the window is full
    and 32 tokens more (shapes only: the layer lives on the meta device, as the core's cache_after runs it)."""
    config = CompressedConfig.from_hf(PUBLISHED[COMPRESSED_MODEL], _csa_layer())
    layer = CompressedAttention(config, device="meta", dtype=torch.bfloat16)
    longest = config.sliding_window + 32
    return config, [layer.cache_after(t) for t in range(COMPRESSED_STRIDE, longest + 1, COMPRESSED_STRIDE)]


@st.cache_data(max_entries=4, show_spinner=False)
def compressed_gif(lang: str) -> bytes:
    """The compressed step's animation, its words in `lang`."""
    config, caches = compressed_caches()
    with speaking(lang):
        return after_mla_slides.compressed_gif(COMPRESSED_MODEL, _csa_layer(), caches, config.compress_rate)


def compressed_entries(lang: str) -> StepView:
    frames = len(compressed_caches()[1])
    animation = Animation(f"compressed-entries-{lang}.gif", lambda: compressed_gif(lang), frames)
    return replace(_held_and_read(COMPRESSED_MODEL), animation=animation)


# --- 18: linear attention -------------------------------------------------------------------------------------------
def linear_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        model = _curves()[LINEAR_MODEL]
        kinds, i = _kinds(model), model.at(TOKENS)
        linear, full = kinds["linear"], kinds["full"]
        return {
            "model": model.name,
            "tokens": _tokens_label(),
            "linear": linear.count,
            "full": full.count,
            "linear_bytes": format_bytes(linear.held[i]),
            "full_bytes": format_bytes(full.held[i]),
            "layers_cut": sig(axis_cuts(model, TOKENS).layers),
        }


def linear_state(lang: str) -> StepView:
    with speaking(lang):
        model = _curves()[LINEAR_MODEL]
        figure, csv = axes_figures.context_figure([model], "held", TOKENS, by_kind=True, named_ends=False)
        caption = axes_text.sentences_of(*axes_text.plateau_sentences(plateaus(model)))
        return _step_view(figure, csv, caption, "axes", _axes_query())


# --- fewer bits ----------------------------------------------------------------------------------------------------
@st.cache_data(max_entries=2, show_spinner=False)
@takes_turns
def trained_key_bits(layer: int, bits: int, group_size: int, tokens: int) -> KeyBits:
    """The trained model's keys in `layer` after the lab's text's first `tokens` tokens, quantised both ways."""
    lm = shared_model()  # the view stops before asking when the model is absent
    ids, _calibration = split_tokens(lm)
    return key_bits(lm, ids[:tokens], layer, bits, group_size)


def _key_result() -> KeyBits:
    return trained_key_bits(KEY_LAYER, KEY_BITS, KEY_GROUP, KEY_TOKENS)


def bits_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        if not _model_installed():
            return {"layer": KEY_LAYER, "bits": KEY_BITS, "token_error": "—", "channel_error": "—"}
        result = _key_result()
        return {
            "layer": result.layer,
            "bits": result.bits,
            "token_error": percent(result.relative_error["token"]),
            "channel_error": percent(result.relative_error["channel"]),
        }


def outlier_head(result: KeyBits) -> int:
    """The KV head holding the layer's largest key channel."""
    return int(result.key_rms.max(axis=1).argmax())


def head_error(result: KeyBits, head: int, layout: str) -> float:
    """‖K̂ − K‖ / ‖K‖ over one KV head: every channel holds the same tokens, so its squared norms are the channels'
    mean squares summed."""
    return float(np.sqrt((result.error_rms[layout][head] ** 2).sum() / (result.key_rms[head] ** 2).sum()))


def fewer_bits(lang: str) -> StepView | None:
    with speaking(lang):
        if trained_model() is None:
            return None
        result = _key_result()
        head = outlier_head(result)
        figure, csv = figures.key_bits_figure(result, head)
        caption = _(
            "SmolLM2-135M's cached keys (RoPE applied) after the first {tokens} tokens of the lab's text, read back after "
            "{bits}-bit quantisation in groups of {group}: per token a group is one token's {width} channels, per channel "
            "{group} tokens of one channel. The chart shows KV head {head}: {head_token} error per token, {head_channel} "
            "per channel (the whole layer: {token_error} and {channel_error}).",
            head=head,
            head_token=percent(head_error(result, head, "token")),
            head_channel=percent(head_error(result, head, "channel")),
            tokens=result.tokens,
            bits=result.bits,
            group=result.group_size,
            width=result.key_rms.shape[1],
            token_error=percent(result.relative_error["token"]),
            channel_error=percent(result.relative_error["channel"]),
        )
        return _step_view(figure, csv, caption, "trained", {})


# --- choosing in 2026 ---------------------------------------------------------------------------------------------
def _long_context() -> list[ModelCurves]:
    return made_for(list(_curves().values()), TOKENS)


def lab_choice_numbers() -> dict[str, object]:
    """The lab's one trade-off across every axis at its page's default context and budget: the cut that hurts
    least there (explorer.lab.axes_page's own computation, on the same stored points), and the link that opens it."""
    context, budget = cast(int, lab_link.AXES_CONTEXT.default), cast(int, lab_link.AXES_BUDGET.default)
    best = within_budget(load_points(), context, budget / 100).best
    view: dict[Param, object] = {lab_link.AXES_CONTEXT: context, lab_link.AXES_BUDGET: budget}
    return {
        "lab_share": percent(budget / 100),
        "lab_context": axes_figures.token_label(context),
        "lab_model": point_name(best) if best else "—",
        "lab_times": f"×{best.times_original:,.2f}" if best else "—",
        "lab_axis": axis_name(best.axis) if best else "—",
        "lab_link": f"lab?{urlencode(link_query(Settings(), view))}",
    }


def choosing_numbers(lang: str) -> dict[str, object]:
    """The axes page's extremes at TOKENS (explorer.probes.axes.extremes): the slide and the page it links to quote
    one set of models and one pair of numbers."""
    with speaking(lang):
        found = extremes(list(_curves().values()), TOKENS)
        quoted: dict[str, object] = dict.fromkeys(("count", "largest", "smallest", "big", "small", "ratio"), "—")
        if found is not None:
            quoted = {
                "count": found.count,
                "largest": found.largest,
                "smallest": found.smallest,
                "big": format_bytes(found.big),
                "small": format_bytes(found.small),
                "ratio": sig(found.big / found.small),
            }
        return {"tokens": _tokens_label(), **quoted, **lab_choice_numbers()}


def published_caches(lang: str) -> StepView:
    with speaking(lang):
        curves = _long_context()
        found = extremes(list(_curves().values()), TOKENS)  # the lead's two models: first in the legend
        named = (found.largest, found.smallest) if found is not None else ()
        figure, csv = axes_figures.context_figure(curves, "held", TOKENS, named_ends=False, first=named)
        return _step_view(figure, csv, axes_text.extremes_sentence(curves, TOKENS, "held"), "axes", _axes_query())


VIEWS: dict[str, Callable[..., StepView | None]] = {
    "axes": four_axes,
    "window": window_layers,
    "sinks": first_token,
    "sparse": top_k,
    "compressed": compressed_entries,
    "linear": linear_state,
    "bits": fewer_bits,
    "choose2026": published_caches,
}
NUMBERS: dict[str, Callable[[str], dict[str, object]]] = {
    "axes": axes_numbers,
    "window": window_numbers,
    "sinks": sinks_numbers,
    "sparse": sparse_numbers,
    "compressed": compressed_numbers,
    "linear": linear_numbers,
    "bits": bits_numbers,
    "choose2026": choosing_numbers,
}
