"""The lab's heavy steps (explorer.probes.lab), cached for the server: calibration and each converted model once
(cache_resource: models are shared, read-only), answers and perplexities per input (cache_data), and the live heal,
one at a time for the whole server, whose healed models every session sees. Each computation takes its turn
(explorer.work) so that a class pressing buttons at once does not hold many models' work in memory together."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from attn_core.pretrained import Calibration, ModelNotInstalled, PretrainedLM
from explorer.model import shared_model, trained_model
from explorer.probes import healing, lab
from explorer.probes.healing import HealProgress, HealStopped
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
# A heal belongs to the session that started it: that session alone may stop it, and it stops when that session ends
# (its tab closed: Streamlit then drops it from the runtime's active sessions), so a heal nobody watches does not hold
# the server. Every session sees the progress and, while it runs, when the server will be free.
_heals: dict[str, HealProgress] = {}  # by lab point: every session sees the same progress
_healed: dict[str, PretrainedLM] = {}
_heals_lock = threading.Lock()
_running: HealRun | None = None  # the one heal under way on this server
# A closed tab ends its session at once; a dropped connection comes back within seconds under the same session id.
# A heal whose owner has been away this long is stopped.
OWNER_GRACE_SECONDS = 10.0


@dataclass
class HealRun:
    """The heal under way: its point, its progress, the session that started it (None outside a server: a script
    or a test) and the flag its Stop button sets."""

    key: str
    progress: HealProgress
    owner: str | None
    stop: threading.Event = field(default_factory=threading.Event)


def session_id() -> str | None:
    """This run's session, or None outside one."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def heal_progress(key: str) -> HealProgress | None:
    return _heals.get(key)


def healed(key: str) -> PretrainedLM | None:
    return _healed.get(key)


def running_heal() -> HealRun | None:
    """The heal under way on this server, whichever point it heals and whoever started it."""
    return _running


def start_heal(key: str, seconds: float | None = None) -> HealProgress | None:
    """Start healing the lab point `key` for this session unless it is running or done already (a failed or stopped
    one starts again); None when another point's heal holds the server (one at a time).

    Called from a button's on_click: it only registers the heal and starts its thread. Loading the model and
    calibrating (minutes on a busy machine the first time) happen in that thread, so neither this session's run nor
    another session needing _heals_lock waits for them."""
    global _running
    point = lab.POINTS_BY_KEY[key]
    with _heals_lock:
        progress = _heals.get(key)
        if progress is not None and progress.phase == "done":
            return progress
        if _running is not None:
            return _running.progress if _running.key == key else None
        progress = _heals[key] = HealProgress(key)
        run = _running = HealRun(key, progress, session_id())
    budget = healing.LIVE_SECONDS if seconds is None else seconds
    threading.Thread(target=_heal_in_turn, args=(point, run, budget), name=f"heal-{key}", daemon=True).start()
    return progress


def stop_heal(key: str) -> bool:
    """Stop the heal of `key` if this session started it (the Stop button's callback); whether it was asked to."""
    run = _running
    if run is None or run.key != key or run.owner != session_id():
        return False
    run.stop.set()
    return True


def _stop_reason(run: HealRun) -> Callable[[], str | None]:
    """heal_live's should_stop for run: "owner" once its Stop was pressed, "left" once its session has been gone for
    OWNER_GRACE_SECONDS."""
    # when the owner was last seen: a phase may take minutes, so absence counts from then, not from its first sighting
    seen = [time.monotonic()]

    def reason() -> str | None:
        if run.stop.is_set():
            return "owner"
        if run.owner is None or not Runtime.exists() or Runtime.instance().is_active_session(run.owner):
            seen[0] = time.monotonic()
            return None
        return "left" if time.monotonic() - seen[0] >= OWNER_GRACE_SECONDS else None

    return reason


def _heal_in_turn(point: lab.LabPoint, run: HealRun, seconds: float) -> None:
    global _running
    progress = run.progress
    try:
        progress.phase = "converting"  # calibrating is the conversion's first step
        lm = shared_model()  # no run in this thread to show a spinner or a warning in
        calibration_ = calibration() if point.needs_calibration else None
        heal = takes_turns(healing.heal_live)
        _healed[point.key] = heal(lm, point, calibration_, progress, seconds=seconds, should_stop=_stop_reason(run))
    except HealStopped:
        progress.phase = "stopped"  # its reason is in progress.stopped_by
    except Exception as error:  # shown on the page, and a press starts it again
        progress.error = f"{type(error).__name__}: {error}"
        progress.model_missing = isinstance(error, ModelNotInstalled)
        progress.phase = "failed"
    finally:
        with _heals_lock:
            _running = None


@st.cache_data(show_spinner=False, max_entries=64)
@takes_turns
def healed_answer(key: str, prompt: str) -> lab.Answer:
    """The healed model's answer; call only once healed(key) is there (a cache entry never holds a missing model)."""
    student = healed(key)
    if student is None:
        raise ValueError(f"{key} is not healed on this server yet.")
    return lab.answer(student, prompt)
