"""The lab during a live heal, in a real browser: one student presses "Heal" (the quickest conversion to set up, MQA
by mean-pooling); while it trains, another student opens the overview and gets its first chart within the suite's
bound for a first view, and the first student's page keeps redrawing its progress.

The server is the test's own (a heal holds a core for a minute; the shared server stays quiet for the other tests),
and its cache folder is a fresh one beside the real one: the converted model is linked in, the heal store starts
empty, so the heal really trains instead of reading a result stored by an earlier run."""

from __future__ import annotations

import re
import time

import pytest

from attn_core.pretrained import cache_root, load_pretrained
from attn_core.pretrained.checkpoint import CACHE_ENV
from deploy.served import StreamlitServer

from .conftest import COLD_START_SECONDS, STARTUP_SECONDS, VIEW_SECONDS, browser_context, wait_for_app

# From the press to the first training step: the conversion is scored (two 512-token passes) and the original's
# attention recorded on 2,048 tokens, one core, on a loaded 2-core machine.
TRAINING_STARTS_SECONDS = 300
# Steps are about a second each and the page redraws every second: room for a loaded machine, inside the heal's
# 60 s of training (healing.LIVE_SECONDS, counted on the clock from the first step, however loaded the machine).
ADVANCES_SECONDS = 40
# The overview's first chart (a few seconds on this machine while the heal trains), bounded so that it comes while the
# heal is still training: it is measured against a live heal, not after one.
OVERVIEW_SECONDS = 45
STEP = "() => { const m = document.body.innerText.match(/Training: step (\\d+)/); return m ? Number(m[1]) : null; }"


@pytest.fixture
def heal_server(log_dir, tmp_path):
    """A server of the test's own over a cache folder whose heal store is empty."""
    load_pretrained()  # the GGUF converted into the real cache here, not inside the server's first run
    for entry in cache_root().iterdir():
        if entry.name != "healed":
            (tmp_path / entry.name).symlink_to(entry)  # the same file: its pages are shared, not copied
    running = StreamlitServer(log_dir, env={CACHE_ENV: str(tmp_path)})
    running.start(STARTUP_SECONDS)
    yield running
    running.stop()


def test_other_pages_answer_and_progress_advances_during_a_live_heal(heal_server, browser):
    student = browser_context(browser, viewport={"width": 1400, "height": 1000})
    other = browser_context(browser, viewport={"width": 1400, "height": 1000})
    try:
        lab = student.new_page()
        lab.set_default_timeout(VIEW_SECONDS * 1000)
        lab.goto(f"{heal_server.url}/lab?lab_model=mqa-mean&lang=en")
        wait_for_app(lab, 1, seconds=COLD_START_SECONDS)  # the Pareto chart: the page has run through
        lab.get_by_role("button", name=re.compile("Heal MQA")).click()
        lab.wait_for_function(f"({STEP})() !== null", timeout=TRAINING_STARTS_SECONDS * 1000, polling=100)
        first_step = lab.evaluate(STEP)

        overview = other.new_page()
        overview.set_default_timeout(VIEW_SECONDS * 1000)
        opened = time.monotonic()
        overview.goto(f"{heal_server.url}/overview?lang=en")  # returns once the page has loaded, before its run
        # While the other student's first run goes on, the pressing student's page redraws its progress by itself.
        lab.wait_for_function(f"({STEP})() > {first_step}", timeout=ADVANCES_SECONDS * 1000, polling=100)
        wait_for_app(overview, 1, seconds=max(1.0, OVERVIEW_SECONDS - (time.monotonic() - opened)))
        seconds = time.monotonic() - opened
        assert seconds <= OVERVIEW_SECONDS
        assert lab.evaluate(STEP) is not None, "the heal was not training any more when the overview answered"
        assert lab.locator(".js-plotly-plot").count() >= 2  # the loss curve joined the Pareto chart
    finally:
        student.close()
        other.close()
