"""The trained model page's probes (explorer.probes.trained), cached per text or prompt: one forward pass per text, one
written answer per prompt, and the text's tokens."""

from __future__ import annotations

import streamlit as st

from explorer.model import trained_model
from explorer.probes.trained import TrainedAttention, WritingTrace, trained_attention, writing_trace
from explorer.work import takes_turns

from .link import MAX_NEW_TOKENS, MAX_TOKENS


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
