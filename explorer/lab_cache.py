"""The lab's heavy steps, cached for the server: calibration and each converted model once (cache_resource: models
are shared, read-only), answers and perplexities per input (cache_data). Each computation takes its turn
(explorer.work) so that a class pressing buttons at once does not hold many models' work in memory together."""

from __future__ import annotations

import streamlit as st

from attn_core.pretrained import ModelNotInstalled, PretrainedLM
from attn_core.pretrained.convert import Calibration
from explorer import lab
from explorer.model import trained_model
from explorer.work import takes_turns


def model() -> PretrainedLM:
    """The trained model; the page has checked explorer.model.trained_model() (which says why it is absent)."""
    lm = trained_model()
    if lm is None:
        raise ModelNotInstalled("The trained model is not installed.")  # the page says so in its language
    return lm


@st.cache_resource(show_spinner=False)  # spinners: the page says what runs, in its language
@takes_turns
def calibration() -> Calibration:
    lm = model()
    return lab.lab_calibration(lm, lab.split_tokens(lm)[1])


@st.cache_resource(show_spinner=False, max_entries=2)
@takes_turns
def converted(key: str) -> PretrainedLM:
    point = lab.POINTS_BY_KEY[key]
    return lab.convert_point(model(), point, calibration() if point.needs_calibration else None)


@st.cache_data(show_spinner=False, max_entries=64)
@takes_turns
def answers(key: str, prompt: str) -> tuple[lab.Answer, lab.Answer]:
    return lab.answer(model(), prompt), lab.answer(converted(key), prompt)


@st.cache_data(show_spinner=False, max_entries=64)
@takes_turns
def user_perplexities(key: str, text: str) -> tuple[tuple[float, int, bool], tuple[float, int, bool]]:
    return lab.user_text_perplexity(model(), text), lab.user_text_perplexity(converted(key), text)
