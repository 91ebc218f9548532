"""Cached views: what the page draws, keyed by small hashable values (figure dicts, CSV numbers, facts).

The figures carry words (titles, axes, hover texts), so each view is cached per language too: `lang` is only a key
(the words come from this run's language, which it names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import streamlit as st

from attn_core import AttentionConfig
from explorer.probes.heatmaps import Comparison, InputSpec, steps_of_head

from .computed import comparison_result, variant_result
from .csv_export import PanelNumbers
from .figures import compare_figure, decode_figure, grid_figure, steps_figure
from .panels import Pooling
from .tables import similarity_table


def upper_triangle(length: int) -> np.ndarray:
    """1 above the diagonal of a square [length, length] matrix (the keys a causal query may not see), else 0."""
    return np.triu(np.ones((length, length), dtype=np.float32), k=1)


@dataclass(frozen=True)
class HeadsFacts:
    """What the all-heads caption states: rows sum to 1, and (causal) nothing above the diagonal."""

    row_sum_error: float
    upper_max: float | None  # None without the causal mask


@dataclass(frozen=True)
class StepFacts:
    """What the inside-one-head captions state."""

    kv_head: int  # the KV head the layer gave this head to read
    weights_error: float  # the steps' weights vs the layer's own
    output_rebuild_error: float
    output_scale: float


@dataclass(frozen=True)
class DecodeFacts:
    """What the decode step's caption and cache table state."""

    decode_error: float  # the decode step's row vs the full pass's last row
    cached_before: int
    cache_shapes: dict[str, tuple[int, ...]]  # each stored tensor's shape, as KVCache.shapes() reads them


# The facts a chart's caption states: HeadsFacts, StepFacts, DecodeFacts, or None.
Facts = TypeVar("Facts")


@dataclass
class Chart(Generic[Facts]):
    """A figure ready to draw (its dict, arrays encoded), the numbers it plots, how it was pooled, and the facts its
    caption states."""

    spec: dict
    csv: PanelNumbers
    pooling: Pooling
    facts: Facts  # None where the caption states nothing measured


def _tokens(spec: InputSpec) -> list[str] | None:
    return spec.labels() if spec.tokens is not None else None


@st.cache_data(max_entries=16, show_spinner=False)
def heads_chart(
    cfg: AttentionConfig,
    seed: int,
    spec: InputSpec,
    causal: bool,
    heads: range,
    pool: str,
    lang: str,
    slide_height: int | None = None,
) -> Chart[HeadsFacts]:
    """Every head's weights (slide_height: drawn that tall on a lesson's slide)."""
    result = variant_result(cfg, seed, spec, causal=causal, heads=heads)
    fig, rows, pooling = grid_figure(
        result, cfg.variant, cfg.group_size, pool=pool, tokens=_tokens(spec), slide_height=slide_height
    )
    weights = result.weights
    facts = HeadsFacts(
        row_sum_error=float(np.abs(weights.sum(-1) - 1).max()),
        upper_max=float(np.abs(weights * upper_triangle(weights.shape[1])).max()) if causal else None,
    )
    return Chart(fig, rows, pooling, facts)


@st.cache_data(max_entries=16, show_spinner=False)
def compare_chart(
    configs: tuple[tuple[str, AttentionConfig], ...],
    seed: int,
    spec: InputSpec,
    causal: bool,
    head: int,
    pool: str,
    lang: str,
) -> tuple[Chart[None] | None, list[dict]]:
    results = comparison_result(configs, seed, spec, causal)
    table = similarity_table(results, head)
    if not any(isinstance(r, Comparison) for r in results.values()):
        return None, table
    fig, rows, pooling = compare_figure(results, head, pool=pool, tokens=_tokens(spec))
    return Chart(fig, rows, pooling, None), table


@st.cache_data(max_entries=16, show_spinner=False)
def steps_chart(
    cfg: AttentionConfig,
    seed: int,
    spec: InputSpec,
    causal: bool,
    heads: range,
    head: int,
    pool: str,
    lang: str,
    slide_height: int | None = None,
) -> Chart[StepFacts]:
    """Head `head` (one of the page's heads) step by step (slide_height: drawn that tall on a lesson's slide)."""
    result = variant_result(cfg, seed, spec, causal=causal, heads=heads)
    steps = steps_of_head(result, head, causal)
    fig, rows, pooling = steps_figure(
        steps, causal=causal, pool=pool, tokens=_tokens(spec), d_k=steps.q.shape[1], slide_height=slide_height
    )
    index = result.heads.index(head)
    facts = StepFacts(
        kv_head=result.kv_head[index],
        weights_error=float(np.abs(steps.weights - result.weights[index]).max()),
        output_rebuild_error=result.output_rebuild_error,
        output_scale=result.output_scale,
    )
    return Chart(fig, rows, pooling, facts)


@st.cache_data(max_entries=16, show_spinner=False)
def decode_chart(
    cfg: AttentionConfig, seed: int, spec: InputSpec, causal: bool, heads: range, head: int, pool: str, lang: str
) -> Chart[DecodeFacts]:
    """The decode step's figure; its facts carry the cache shapes, so the cache table (which depends on the sidebar's
    dtype too) is made on the page without redrawing the figure."""
    result = variant_result(cfg, seed, spec, causal=causal, heads=heads)
    decode = result.decode
    fig, rows, pooling = decode_figure(result, cfg.variant, pool=pool, tokens=_tokens(spec), highlight=head)
    facts = DecodeFacts(
        decode_error=float(np.abs(decode.row - result.weights[:, -1]).max()),
        cached_before=decode.cached_before,
        cache_shapes=decode.cache_shapes,
    )
    return Chart(fig, rows, pooling, facts)
