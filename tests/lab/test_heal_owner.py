"""A live heal belongs to the session that started it: that session alone sees its Stop button, another visitor sees
whose it is and when the server will be free, pressing Stop frees the server, and a heal whose session has ended
stops by itself. No training here: the heal's thread is held at its calibration step (tests/lab/test_heal_start.py's
way), so every state is a fact and not a timing, and every wait is bounded."""

from __future__ import annotations

import re
import threading
import time

import pytest

from explorer.lab import computed as cached
from explorer.lab.link import heal_button_key
from explorer.probes import healing
from tests.app.helpers import no_exception, open_page
from tests.lab.test_heal_start import PROMPT, join_heals

KEY = "mqa-pca"
OTHER = "mla-128-32"


@pytest.fixture
def held(monkeypatch, tmp_path):
    """The model stubbed, and calibration held until `release`; the heal then goes on into heal_live, whose first
    question is whether to stop."""
    entered, release = threading.Event(), threading.Event()

    def calibration():
        entered.set()
        assert release.wait(600), "the test never released the calibration"

    monkeypatch.setattr(cached, "calibration", calibration)
    monkeypatch.setattr(cached, "shared_model", object)
    monkeypatch.setattr(healing, "cache_root", lambda: tmp_path)
    cached._heals.clear()
    cached._healed.clear()
    yield entered, release
    release.set()
    join_heals()
    cached._heals.clear()
    cached._healed.clear()


def buttons(at) -> set[str]:
    return {button.key for button in at.button if button.key}


def test_only_the_owner_can_stop_and_a_stop_frees_the_server(lm, held):
    entered, release = held
    owner = open_page("lab", {"lab_model": KEY})
    owner.button(key=heal_button_key(KEY)).click().run()
    no_exception(owner)
    assert entered.wait(PROMPT), "the heal's thread never reached its calibration"
    with pytest.MonkeyPatch.context() as other_session:  # every AppTest is one session id: the visitor's is its own
        other_session.setattr(cached, "session_id", lambda: "another visitor")
        visitor = open_page("lab", {"lab_model": KEY})
    no_exception(visitor)
    assert f"lab_stop_heal_{KEY}" in buttons(owner)
    assert f"lab_stop_heal_{KEY}" not in buttons(visitor)
    assert any("Started by another visitor" in caption.value for caption in visitor.caption)
    assert not cached.stop_heal(KEY)  # outside the owner's session (this test's thread): refused
    owner.button(key=f"lab_stop_heal_{KEY}").click().run()
    no_exception(owner)
    release.set()
    join_heals()
    progress = cached.heal_progress(KEY)
    assert (progress.phase, progress.stopped_by) == ("stopped", "owner")
    assert cached.running_heal() is None
    owner.run()
    no_exception(owner)
    assert any("stopped by the visitor who started it" in info.value for info in owner.info)
    assert heal_button_key(KEY) in buttons(owner)  # anyone may heal it again


def test_another_point_waits_and_is_told_when_the_server_is_free(lm, held):
    entered, _release = held
    assert cached.start_heal(KEY) is not None
    assert entered.wait(PROMPT)
    running = cached.running_heal()
    ends = running.progress.ends_at = time.monotonic() + 600  # as heal_live estimates it once the conversion is scored
    for language, said in (("en", r"free for another heal in about (\d+) s"), ("zh", r"大约 (\d+) 秒后服务器可以进行")):
        at = open_page("lab", {"lab_model": OTHER, "lang": language})
        no_exception(at)
        assert heal_button_key(OTHER) not in buttons(at)  # one heal at a time: no second button meanwhile
        # both heal sections (the conversion's and the window's) say it
        shown = [int(m[1]) for info in at.info if "MQA" in info.value and (m := re.search(said, info.value))]
        assert len(shown) == 2
        assert all(ends - time.monotonic() - 1 <= n <= 600 for n in shown)  # counted down from the estimate


def test_a_heal_stops_once_its_session_has_ended(monkeypatch):
    class Runtime:  # the server as Streamlit's runtime reports it: the owner's session is gone (its tab closed)
        @staticmethod
        def exists() -> bool:
            return True

        @staticmethod
        def instance():
            return Runtime

        @staticmethod
        def is_active_session(session: str) -> bool:
            return session != "closed-tab"

    monkeypatch.setattr(cached, "Runtime", Runtime)
    monkeypatch.setattr(cached, "OWNER_GRACE_SECONDS", 0.0)
    assert cached._stop_reason(cached.HealRun(KEY, healing.HealProgress(KEY), "open-tab"))() is None
    assert cached._stop_reason(cached.HealRun(KEY, healing.HealProgress(KEY), "closed-tab"))() == "left"
    monkeypatch.setattr(cached, "OWNER_GRACE_SECONDS", 600.0)  # a dropped connection has this long to come back
    assert cached._stop_reason(cached.HealRun(KEY, healing.HealProgress(KEY), "closed-tab"))() is None


def test_heal_live_asked_to_stop_ends_without_a_result(lm, tmp_path):
    progress = healing.HealProgress(KEY)
    point = healing.lab.POINTS_BY_KEY["mqa-mean"]
    with pytest.raises(healing.HealStopped):
        healing.heal_live(lm, point, None, progress, seconds=1.0, root=tmp_path, should_stop=lambda: "owner")
    assert progress.stopped_by == "owner"
    assert not progress.step_losses
    assert not list(tmp_path.rglob("*.pt"))  # nothing stored
