"""The other axes' live steps cached for the server: each side-by-side model once (cache_resource: built over the
trained model's own weights, read-only) and each passage's continuations (cache_data), taking their turn
(explorer.work) as the lab's other heavy steps do."""

from __future__ import annotations

import streamlit as st

from attn_core.pretrained import PretrainedLM
from explorer.lab.computed import model
from explorer.probes import lab_axes
from explorer.work import takes_turns


@st.cache_resource(show_spinner=False, max_entries=len(lab_axes.SIDE_BY_SIDE))
def side_by_side_model(key: str) -> PretrainedLM:
    return lab_axes.side_by_side_model(model(), key)


@st.cache_data(show_spinner=False, max_entries=32)
@takes_turns
def continuations(topic: str) -> dict[str, lab_axes.Continuation]:
    """Every side-by-side model's continuation of the passage, by key (the original first)."""
    ids = lab_axes.passage_ids(model(), topic)
    return {key: lab_axes.continuation(side_by_side_model(key), ids) for key in lab_axes.SIDE_BY_SIDE}


@st.cache_data(show_spinner=False, max_entries=32)
def passage_end(topic: str, tokens: int = 48) -> tuple[list[str], int]:
    """The passage's last `tokens` tokens as labels, and its length in tokens."""
    ids = lab_axes.passage_ids(model(), topic)
    return model().token_strings(ids[-tokens:]), len(ids)
