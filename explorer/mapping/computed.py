"""The mapping page's probes, cached by the settings they depend on."""

from __future__ import annotations

import streamlit as st

from attn_core import AttentionConfig, naive_up_projection_flops
from explorer.probes.mapping import (
    FusedProjection,
    MlaWays,
    MorphFrame,
    compare_mla_ways,
    fused_projection,
    narrowed,
    path_shapes,
    read_morph,
)
from explorer.settings import Settings
from explorer.work import cached_probe, takes_turns

# Drawing a layer's seeded weights costs seconds for one MHA layer at d_model 8192 (benchmarks/MEASUREMENTS.md),
# and the animation needs up to ten layers. Past this width the probes build layers whose input is narrowed (see
# explorer.probes.mapping.narrowed): same heads, groups and per-head widths, so the same stores and the same readers.
FULL_WIDTH_LIMIT = 512
NARROW_WIDTH = 64
MLA_TIMED_CONTEXT = 512  # cached tokens before the timed MLA decode step...
NAIVE_FLOP_BUDGET = 1e9  # ...fewer if the naive way would spend more than this re-up-projecting them every step


def probe_width(d_model: int) -> int:
    """The input width of the layers the probes build: the real one up to FULL_WIDTH_LIMIT, else NARROW_WIDTH."""
    return d_model if d_model <= FULL_WIDTH_LIMIT else NARROW_WIDTH


@st.cache_data(max_entries=32, show_spinner=False)  # the page shows a spinner in its language
@takes_turns
def morph_frames(d_model: int, heads: int, latent: int, rope_dim: int, seed: int) -> list[MorphFrame]:
    """One probe result per animation step (groups, batch, length and dtype do not change them)."""
    return read_morph(d_model, heads, latent, rope_dim, seed=seed, input_width=probe_width(d_model))


def frames_for(settings: Settings) -> list[MorphFrame]:
    return morph_frames(settings.d_model, settings.heads, settings.latent, settings.rope_dim, settings.seed)


shape_rows = cached_probe(path_shapes, max_entries=64, takes_turns=False)  # on the meta device: nothing to queue


def timed_context(cfg: AttentionConfig) -> int:
    """Cached tokens for the MLA timing: MLA_TIMED_CONTEXT, or fewer when the naive step would exceed the budget."""
    return max(1, min(MLA_TIMED_CONTEXT, int(NAIVE_FLOP_BUDGET // naive_up_projection_flops(cfg, 1))))


@st.cache_data(max_entries=16, show_spinner=False)  # the page shows a spinner in its language
@takes_turns
def mla_ways(cfg: AttentionConfig, seed: int) -> MlaWays:
    probe_cfg = narrowed(cfg, probe_width(cfg.d_model))
    return compare_mla_ways(probe_cfg, seed=seed, context_len=timed_context(cfg))  # timed at probe_cfg.d_model


@st.cache_data(max_entries=32, show_spinner=False)
@takes_turns
def fused_result(cfg: AttentionConfig, seed: int, batch: int, seq_len: int) -> FusedProjection:
    return fused_projection(cfg, seed=seed, batch=batch, seq_len=seq_len, input_width=probe_width(cfg.d_model))
