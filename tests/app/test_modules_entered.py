"""How many of the app's modules a rerun enters: a rerun's path through the code, as a reader of it would follow it.

How it counts: the rerun (AppTest, as a widget change would) runs under a profile hook on the threads it starts
(threading.setprofile: the script runner's thread, where the page, its callbacks and its fragments run); each Python
function call is seen, and its code's file is kept when it lies in app.py, pages/ or explorer/. The count is the
number of distinct files kept: a module entered once or a thousand times counts one. attn_core, streamlit and the
standard library are not counted (a rerun that reads its charts back from the cache runs none of the core), nor is
AppTest's own work on the test's thread (reading the widgets back calls their format functions: the browser does not).
A widget inside a fragment reruns that fragment alone in the browser: run_fragment does the same here.

The issue's aim (43) is at most 12 modules for /axes after a paste, 8 for the heatmaps page after a sequence-length
change and 8 for the lesson's next step; the ceilings below are what a rerun entered at the last change (every rerun passes the
sidebar's modules first), so none may grow while they come down.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from attn_core import PUBLISHED
from tests.app.helpers import REPO, no_exception, open_page, run_fragment

APP_CODE = (str(REPO / "explorer"), str(REPO / "pages"))
CEILINGS = {"axes": 16, "heatmaps": 17, "lesson": 19}


def modules_entered(rerun: Callable[[], object]) -> set[str]:
    """The app's source files (relative to the repository) whose code ran during rerun()."""
    files: set[str] = set()

    def seen(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name.startswith(APP_CODE) or name == str(REPO / "app.py"):
                files.add(name)

    threading.setprofile(seen)
    try:
        rerun()
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
    return {str(Path(name).relative_to(REPO)) for name in files}


def test_the_count_sees_every_module_a_call_enters_and_no_other():
    from explorer import labels

    def on_a_thread() -> None:
        thread = threading.Thread(target=lambda: (labels.display_width("注意 attention"), json.dumps({"a": [1]})))
        thread.start()
        thread.join()

    entered = modules_entered(on_a_thread)
    assert entered == {"explorer/labels.py"}  # json's code ran too, and is not the app's
    assert modules_entered(lambda: labels.display_width("注意")) == set()  # the test's own thread is not the rerun's


def test_a_rerun_of_axes_after_a_paste_enters_no_more_modules_than_today():
    at = open_page("axes", {"lang": "en"})
    at.text_area[0].input(json.dumps(PUBLISHED["Llama 3 8B"])).run()
    at.text_area[0].input(json.dumps(PUBLISHED["Mistral 7B"]))
    entered = modules_entered(lambda: run_fragment(at, "axes_your_model"))  # "Your model" is a fragment
    no_exception(at)
    assert "pages/axes.py" in entered
    assert len(entered) <= CEILINGS["axes"], sorted(entered)


def test_a_rerun_of_heatmaps_after_a_sequence_length_change_enters_no_more_modules_than_today():
    at = open_page("heatmaps", {"d_model": "64", "heads": "32", "groups": "4", "seq_len": "384"})
    entered = modules_entered(lambda: at.select_slider(key="setting_seq_len").set_value(512).run())
    no_exception(at)
    assert "pages/heatmaps.py" in entered
    assert len(entered) <= CEILINGS["heatmaps"], sorted(entered)


def test_the_lesson_s_next_step_enters_no_more_modules_than_today():
    at = open_page("lesson", {"step": "1"})
    at.button(key="lesson_next").click()
    entered = modules_entered(lambda: run_fragment(at, "lesson_step"))  # the step is a fragment: it reruns alone
    no_exception(at)
    assert "pages/lesson.py" in entered
    assert len(entered) <= CEILINGS["lesson"], sorted(entered)
