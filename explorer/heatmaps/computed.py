"""The page's passes, cached by settings: which heads a pass computes (pages of at most MAX_PANELS, whole KV groups
where they fit), the window of tokens, one forward pass per (settings, window, page of heads), and the comparison of
the variants made from one MHA layer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import streamlit as st

from attn_core import AttentionConfig, build_attention
from explorer.i18n import _, fmt
from explorer.kinds.kind import DESIGN_WEIGHT_BUDGET, Design, weight_count
from explorer.params import clean_text
from explorer.probes.heatmaps import (
    COMPARE_WORK_BUDGET,
    MAX_TEXT_CHARS,
    MAX_TEXT_TOKENS,
    Comparison,
    InputSpec,
    Skipped,
    compare_from_mha,
    explore_variant,
    joint_kv_basis,
    make_inputs,
    token_window,
    tokenize,
)
from explorer.settings import D_MODEL_CHOICES, Settings
from explorer.work import cached_probe, takes_turns

from .link import DEFAULT_TEXT, DESIGN

# The designs after MLA are drawn on the page's first tokens, at most this many: one head's every weight (no pooling),
# the band, the top-k and the entries a few px a cell
DESIGN_MAX_TOKENS = 128
# The designs the page draws weights of (a linear layer has none; a quantised cache reads what a plain one does)
MAPPED_DESIGNS = DESIGN.options
MAX_PANELS = 16  # heads drawn (and computed) at once in the grid; the page picker moves through the rest


def head_pages(n_heads: int, group_size: int, group: int | Literal["all"]) -> list[range]:
    """The pages of at most MAX_PANELS heads the grid shows, of all heads or of one KV group. A page holds whole KV
    groups, or heads of one group when a group has more than MAX_PANELS: so each page is a layer of its own
    (AttentionConfig.head_subset), and only its heads are computed."""
    candidates = range(n_heads) if group == "all" else range(group * group_size, (group + 1) * group_size)
    if group_size <= MAX_PANELS:
        runs, per_page = [candidates], MAX_PANELS // group_size * group_size
    else:
        runs = [range(start, start + group_size) for start in range(candidates.start, candidates.stop, group_size)]
        per_page = MAX_PANELS
    return [
        range(start, min(start + per_page, run.stop)) for run in runs for start in range(run.start, run.stop, per_page)
    ]


def heads_text(heads: range) -> str:
    if len(heads) == 1:
        return _("head {head}", head=heads.start)
    return _("heads {first}–{last}", first=heads.start, last=heads.stop - 1)


def grid_columns(n_shown: int, group_size: int) -> int:
    """Columns of the grid: one KV group per row when groups have 2..8 heads, so heads that share keys sit together."""
    if 2 <= group_size <= 8:
        return min(group_size, n_shown)
    if group_size > 8:
        return min(8, n_shown)
    return min(4, n_shown)


@dataclass(frozen=True)
class Inputs:
    spec: InputSpec  # the window actually computed
    wanted: int  # tokens asked for (sequence length, or the text's tokens)
    notes: tuple[str, ...] = ()
    split: tuple[str, ...] = ()  # the text's tokens, as split (before the cut to MAX_TEXT_TOKENS)


def make_input_spec(settings: Settings, *, kind: str, text: str, tokens: str, scale: str) -> Inputs:
    """The window of tokens the page computes, and sentences saying what was cut."""
    base = InputSpec(d_model=settings.d_model, seed=settings.seed, scale=float(scale))
    notes: list[str] = []
    split: tuple[str, ...] = ()
    if kind == "text":
        words = tokenize(clean_text(text, MAX_TEXT_CHARS), tokens)
        if not words:
            notes.append(_("The text is empty: showing the example sentence until you type one."))
            words = tokenize(DEFAULT_TEXT, tokens)
        split = tuple(words)
        if len(words) > MAX_TEXT_TOKENS:
            notes.append(
                _(
                    "Text is limited to {limit} tokens: the first {limit} of {n} are used.",
                    limit=MAX_TEXT_TOKENS,
                    n=len(words),
                )
            )
            words = words[:MAX_TEXT_TOKENS]
        spec = replace(base, tokens=tuple(words))
    else:
        spec = replace(base, n_tokens=settings.seq_len)
    wanted = spec.length
    # the heads one pass computes: a page of them (the same bound for every page and variant, so the window is too)
    window = token_window(min(settings.heads, MAX_PANELS), settings.d_model, settings.head_dim, wanted)
    return Inputs(spec.truncated(window), wanted, tuple(notes), split)


def layer_config(settings: Settings, variant: str, rope: bool) -> AttentionConfig:
    return replace(settings.config(variant), rope=rope)


# The one pass sections 1, 3 and 4 draw from: a layer of the page's heads is built once per (settings, window, page),
# whatever is shown.
variant_result = cached_probe(explore_variant, max_entries=6)


@st.cache_data(max_entries=4, show_spinner=False)
def kv_basis(d_model: int, heads: int, seed: int) -> np.ndarray:
    """MHA's key-value singular vectors for the MLA conversion. They depend on the MHA weights alone, so a change of
    window, KV groups or latent width reuses them. On a miss the MHA layer is built again from its seed: a fifth of
    the basis's own time at the widest MLA conversion (MLA_CONVERSION_MAX_D_MODEL)."""
    return joint_kv_basis(build_attention(AttentionConfig("mha", d_model=d_model, n_heads=heads), seed=seed)).numpy()


@st.cache_data(max_entries=4, show_spinner=False)
@takes_turns
def comparison_result(
    configs: tuple[tuple[str, AttentionConfig], ...], seed: int, spec: InputSpec, causal: bool
) -> dict[str, Comparison | Skipped]:
    first = configs[0][1]
    return compare_from_mha(
        dict(configs), seed, spec, causal=causal, basis_of=lambda _mha: kv_basis(first.d_model, first.n_heads, seed)
    )


def comparison_blocked(d_model: int, length: int) -> str | None:
    """Why section 2 is not computed at this width and window, and what to pick to see it; None when it is computed.

    The comparison builds one more layer (MHA), makes the variants from it and runs them all on the window: its work
    grows as tokens × d_model², and above COMPARE_WORK_BUDGET it alone would take more than a rerun may (at d_model
    8192 drawing MHA's weights alone takes seconds).
    """
    if length * d_model**2 <= COMPARE_WORK_BUDGET:
        return None
    widest = max((d for d in D_MODEL_CHOICES if length * d * d <= COMPARE_WORK_BUDGET), default=D_MODEL_CHOICES[0])
    longest = COMPARE_WORK_BUDGET // (d_model * d_model)
    if longest >= 16:
        advice = _(
            "Pick d_model {widest} or less in the sidebar to see it on these {n} tokens, or keep d_model {d_model} "
            "with a sequence of at most {longest} tokens.",
            widest=widest,
            n=length,
            d_model=d_model,
            longest=longest,
        )
    else:
        advice = _(
            "Pick d_model {widest} or less in the sidebar to see it on these {n} tokens.", widest=widest, n=length
        )
    return _(
        "Not computed at d_model {d_model} on {n} tokens: the comparison builds one more layer (MHA, {weights} million "
        "weights), makes the other variants from it and runs them all over the window. That work grows as tokens × "
        "$d_{{model}}^2$: here {work} million, {times}× the {budget} million this page allows it so that a rerun stays "
        "interactive on this server. {advice}",
        d_model=d_model,
        n=length,
        weights=fmt(4 * d_model * d_model / 1e6, 1),
        work=fmt(length * d_model**2 / 1e6, 0),
        times=fmt(length * d_model**2 / COMPARE_WORK_BUDGET, 1),
        budget=fmt(COMPARE_WORK_BUDGET / 1e6, 0),
        advice=advice,
    )


@st.cache_data(max_entries=6, show_spinner=False)
@takes_turns
def design_result(design: Design, seed: int, spec: InputSpec) -> Any:
    """One forward pass of the design's layer (built from the seed) on the page's input: its kind's map (a
    grouped.BandMap, dsa.SparseMap or compressed.CompressedMap)."""
    return design.kind.attention_map(design.build(seed), make_inputs(spec))


def design_blocked(design: Design) -> str | None:
    """Why the design's layer is not built at these settings, and what to change; None when it is."""
    weights = weight_count(design.build(device="meta"))
    if weights <= DESIGN_WEIGHT_BUDGET:
        return None
    return _(
        "Not computed: at these settings this layer has {weights} million weights, more than the {budget} million a "
        "page draws from the seed in one rerun on this server. Pick a smaller model width, fewer heads or a "
        "narrower latent in the sidebar.",
        weights=fmt(weights / 1e6, 0),
        budget=fmt(DESIGN_WEIGHT_BUDGET / 1e6, 0),
    )
