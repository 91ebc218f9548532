"""The trained model, loaded once per server (its weights are a read-only memory map shared by every session)."""

from __future__ import annotations

import streamlit as st

from attn_core.pretrained import PretrainedLM, load_pretrained


@st.cache_resource(show_spinner="Loading the trained model (SmolLM2-135M-Instruct)…")
def trained_model() -> PretrainedLM:
    """load_pretrained(); raises attn_core.pretrained.ModelNotInstalled (whose message says how to install it)."""
    return load_pretrained()
