"""The lab's heavy steps (explorer.probes.lab), cached for the server: calibration and each converted model once
(cache_resource: models are shared, read-only), answers and perplexities per input (cache_data), and the live heal,
one at a time for the whole server, whose healed models every session sees. Each computation takes its turn
(explorer.work) so that a class pressing buttons at once does not hold many models' work in memory together."""

from __future__ import annotations

import threading

import streamlit as st

from attn_core.pretrained import Calibration, ModelNotInstalled, PretrainedLM
from explorer.model import shared_model, trained_model
from explorer.probes import healing, lab
from explorer.probes.healing import HealProgress
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


# --- healing, live: one at a time for the whole server, in a thread of its own, kept for every session -------------
_heals: dict[str, HealProgress] = {}  # by lab point: every session sees the same progress
_healed: dict[str, PretrainedLM] = {}
_heals_lock = threading.Lock()
_one_heal = threading.Lock()  # a second heal waits for the first: each holds a core for a minute


def heal_progress(key: str) -> HealProgress | None:
    return _heals.get(key)


def healed(key: str) -> PretrainedLM | None:
    return _healed.get(key)


def start_heal(key: str, seconds: float | None = None) -> HealProgress:
    """Start healing the lab point `key` unless it is running or done already (a failed one starts again).

    Called from a button's on_click: it only registers the heal and starts its thread. Loading the model and
    calibrating (minutes on a busy machine the first time) happen in that thread, so neither this session's run nor
    another session needing _heals_lock waits for them."""
    point = lab.POINTS_BY_KEY[key]
    with _heals_lock:
        progress = _heals.get(key)
        if progress is not None and progress.phase != "failed":
            return progress
        progress = _heals[key] = HealProgress(key)
    budget = healing.LIVE_SECONDS if seconds is None else seconds
    threading.Thread(target=_heal_in_turn, args=(point, progress, budget), name=f"heal-{key}", daemon=True).start()
    return progress


def _heal_in_turn(point: lab.LabPoint, progress: HealProgress, seconds: float) -> None:
    try:
        with _one_heal:
            progress.phase = "converting"  # calibrating is the conversion's first step
            lm = shared_model()  # no run in this thread to show a spinner or a warning in
            calibration_ = calibration() if point.needs_calibration else None
            _healed[point.key] = takes_turns(healing.heal_live)(lm, point, calibration_, progress, seconds=seconds)
    except Exception as error:  # shown on the page, and a press starts it again
        progress.error = f"{type(error).__name__}: {error}"
        progress.model_missing = isinstance(error, ModelNotInstalled)
        progress.phase = "failed"


@st.cache_data(show_spinner=False, max_entries=64)
@takes_turns
def healed_answer(key: str, prompt: str) -> lab.Answer:
    """The healed model's answer; call only once healed(key) is there (a cache entry never holds a missing model)."""
    student = healed(key)
    if student is None:
        raise ValueError(f"{key} is not healed on this server yet.")
    return lab.answer(student, prompt)
