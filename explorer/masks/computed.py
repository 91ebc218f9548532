"""The page's cached calls: the probe (explorer.probes.masks) once per layer, head and lengths, and each section's
figure and CSV rows once per language."""

from __future__ import annotations

import streamlit as st

from attn_core import AttentionConfig
from explorer.i18n import speaking
from explorer.probes.masks import MasksResult, explore_masks
from explorer.work import takes_turns

from .figures import heatmaps_figure
from .panels import chunk_mask_panels, chunk_weight_panels, cross_panels, padding_panels
from .tables import csv_rows


@st.cache_data(max_entries=8, show_spinner=False)  # the page says what it is doing: spinner text in its language
@takes_turns
def masks_result(
    cfg: AttentionConfig,
    seed: int,
    head: int,
    long_len: int,
    short_len: int,
    causal: bool,
    prefill: int,
    chunk: int,
    query_len: int,
    memory_len: int,
) -> MasksResult:
    """One layer of the shown head built per distinct (layer, seed, head, lengths): a sidebar change this page does
    not use (sequence length, batch, dtype) recomputes nothing."""
    return explore_masks(
        cfg,
        seed,
        head=head,
        long_len=long_len,
        short_len=short_len,
        causal=causal,
        prefill=prefill,
        chunk=chunk,
        query_len=query_len,
        memory_len=memory_len,
    )


@st.cache_data(max_entries=64, show_spinner=False)
def section_chart(
    section: str, cfg: AttentionConfig, seed: int, lengths: tuple, head: int, lang: str
) -> tuple[dict, list[dict]]:
    """The figure and CSV rows of one section, kept ready, so a rerun that changes nothing here rebuilds nothing.
    lengths: masks_result's arguments after head. lang: the language the figure's words are made in (the page
    passes the run's language(), so each language has its own cached figure)."""
    with speaking(lang):
        result = masks_result(cfg, seed, head, *lengths)
        _long_len, short_len, _causal, prefill, _chunk, _query_len, _memory_len = lengths
        if section == "padding":
            panels, height = padding_panels(result.padding, head, short_len), 360
        elif section == "causal":
            panels, height = chunk_mask_panels(result.chunk, prefill), 340
        elif section == "chunk":
            panels, height = chunk_weight_panels(result.chunk, head, prefill), 340
        elif section == "cross":
            if result.cross is None:
                raise ValueError(
                    "section='cross': MLA has self-attention only, so there is no cross-attention to draw."
                )
            panels, height = cross_panels(result.cross, head), 340
        else:
            raise ValueError(f"section={section!r}: one of padding, causal, chunk, cross.")
        return heatmaps_figure(panels, height=height), csv_rows(panels)
