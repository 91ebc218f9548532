"""Two replicas behind HAProxy (deploy/serve.py's Classroom), two students in Debian's chromium: each lands on a
replica of its own and stays there (the affinity cookie names it), downloads from it, and when its replica is killed
outright its page comes back on the other one with the same view."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import pytest

from deploy.serve import COOKIE, Classroom
from explorer.settings import Settings
from tests.browser.conftest import (
    COLD_START_SECONDS,
    browser_context,
    chart_data,
    sidebar_sliders,
    url_params,
    wait_for_app,
)

if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):
    pytest.skip("Debian's haproxy is not installed: run `make balancer`", allow_module_level=True)

# Two students, two different views: another page, other settings, the other language.
VIEWS = {
    "ada": ("mapping", Settings(d_model=1024, heads=16, groups=4, seq_len=96, batch=2), "zh"),
    "ben": ("", Settings(d_model=512, heads=8, groups=2, seq_len=128, batch=4), "en"),
}
ERRORS = '[data-testid="stException"], [role="dialog"]:has-text("Connection error")'


@pytest.fixture(scope="module")
def classroom():
    log_dir = Path(tempfile.mkdtemp(prefix="explorer-balancer-"))
    running = Classroom(2, log_dir=log_dir)
    try:
        running.start()
        yield running
    finally:
        running.stop()
        shutil.rmtree(log_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def students(classroom, browser):
    """Each student's tab, opened one after the other (the second arrives while the first's websocket is open)."""
    contexts, tabs = [], {}
    try:
        for name, (path, settings, language) in VIEWS.items():
            context = browser_context(browser, viewport={"width": 1400, "height": 1000}, accept_downloads=True)
            contexts.append(context)
            tab = context.new_page()
            tab.set_default_timeout(COLD_START_SECONDS * 1000)
            tab.goto(f"{classroom.url}/{path}?{urlencode(settings.to_link() | {'lang': language})}")
            wait_for_app(tab, seconds=COLD_START_SECONDS)  # a replica's first run imports torch: give it time
            tabs[name] = tab
        yield tabs
    finally:
        for context in contexts:
            context.close()


def replica_of(tab) -> str | None:
    return next((c["value"] for c in tab.context.cookies() if c["name"] == COOKIE), None)


def view(tab) -> tuple:
    """What a student sees: the address (page, settings, language), the sidebar's values, every chart's data."""
    return tab.url, sidebar_sliders(tab), chart_data(tab)


def test_two_students_land_on_different_replicas_and_their_cookie_says_which(classroom, students):
    replicas = {name: replica_of(tab) for name, tab in students.items()}
    assert set(replicas.values()) == set(classroom.replicas), replicas
    stats = {r["svname"]: int(r["scur"]) for r in classroom.stats() if r["svname"] in classroom.replicas}
    assert all(stats[name] >= 1 for name in classroom.replicas), f"each replica holds a session: {stats}"


def test_each_student_downloads_the_settings_from_their_own_replica(students):
    for tab in students.values():
        # The file is written on the replica that holds the session and fetched from it (a /media URL):
        # another replica would not know it.
        assert download_settings(tab) == url_params(tab)


def download_settings(tab) -> dict:
    """Click the sidebar's "Settings as JSON" (in either language: "设置导出为 JSON"; a role query skips a stale
    hidden copy) and read the file saved."""
    with tab.expect_download() as download:
        tab.locator('[data-testid="stSidebar"]').get_by_role("button", name=re.compile("JSON")).click()
    assert download.value.failure() is None
    return json.loads(Path(download.value.path()).read_text(encoding="utf-8"))


def test_a_killed_replica_loses_no_view(classroom, students):
    tab, other = students["ada"], students["ben"]
    before, other_before = view(tab), view(other)
    dead = replica_of(tab)
    survivor = next(r for r in classroom.replicas if r != dead)
    frames = []  # what the tab's next websocket receives (registered before it opens, so none is missed)
    tab.on("websocket", lambda socket: socket.on("framereceived", lambda payload: frames.append(payload)))

    # The tab reconnects by itself through the balancer, which sends it to the live replica (the dead one refuses
    # connections), and once connected loads its link again there (assets/rerun_on_reconnect.js): the survivor runs
    # the page from the tab's link, which holds the view. The survivor is warm: it serves the other student.
    try:
        with tab.expect_event("load", timeout=COLD_START_SECONDS * 1000):
            os.killpg(classroom.replicas[dead].process.pid, signal.SIGKILL)  # no goodbye: the websocket just drops
        wait_for_app(tab, chart_count=len(before[2]), seconds=COLD_START_SECONDS)
        assert frames, "a new websocket, answered"
        assert replica_of(tab) == survivor, "answered by the survivor"
    except Exception as error:
        log = classroom.haproxy_log()[-3000:]
        raise AssertionError(f"the session did not come back: {error}\nhaproxy:\n{log}") from error

    assert view(tab) == before, "same page, same settings in the address, same language, same charts"
    assert tab.locator(ERRORS).count() == 0, "no error shown"
    # The session lives on the survivor now, whole: a download is written there and fetched from there.
    assert download_settings(tab) == url_params(tab)
    assert view(other) == other_before, "the other student saw nothing of it"
    assert replica_of(other) == survivor, "the other student saw nothing of it"
