"""The trained model, loaded once per server and shared by every session (weights are read-only)."""

from __future__ import annotations

import streamlit as st

from attn_core.pretrained import ModelNotInstalled, PretrainedLM, load_pretrained


@st.cache_resource(show_spinner="Loading SmolLM2-135M (the first time: converting its GGUF file, ~10 s)…")
def _load() -> PretrainedLM:
    return load_pretrained()


def trained_model() -> PretrainedLM | None:
    """The model, or None after telling the user why it is absent and how to install it (the page then stops, and
    the rest of the app keeps working)."""
    try:
        return _load()
    except ModelNotInstalled as missing:
        st.warning(f"{missing} Every other page works without it.", icon=":material/download:")
        return None
