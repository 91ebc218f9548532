"""The lesson's keyboard and scrolling: a small component (keys.js) that reports ← and → as "previous" and "next",
and one (top.js) that opens a new step at its top and, in presenter mode, reports a window shorter than a slide's
screen (explorer.lesson.views.slide_height draws the chart to fit it)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from explorer.present import presenting

KEYS_NAME = "attention_explorer.lesson_keys"
KEYS = st.components.v2.component(KEYS_NAME, js=(Path(__file__).parent / "keys.js").read_text(encoding="utf-8"))
TOP_NAME = "attention_explorer.lesson_top"
TOP = st.components.v2.component(TOP_NAME, js=(Path(__file__).parent / "top.js").read_text(encoding="utf-8"))


def arrow_key() -> str | None:
    """The arrow key pressed since the last run: "previous", "next", or None. Call before the step's widget is drawn,
    so that the step can move."""
    result = KEYS(key="lesson_keys", on_key_change=lambda: None)
    pressed = getattr(result, "key", None)
    return pressed if pressed in ("previous", "next") else None


TOP_KEY = "lesson_top"
SLIDE_SCREEN_PX = 768  # the window height a slide is laid out for: a 1024x768 projector in full screen


def open_at_top(step: int) -> None:
    """Scroll the page to its top when the step shown differs from the last run's (call once the step is known, and
    before the step's chart: in presenter mode it reads the window's height, screen_height)."""
    data = {"step": step, "shorterThan": SLIDE_SCREEN_PX if presenting() else None, "screen": screen_height()}
    TOP(key=TOP_KEY, data=data, on_screen_change=lambda: None)


def screen_height() -> int | None:
    """The window's height in px as the page last reported it, while shorter than SLIDE_SCREEN_PX in presenter mode
    (a projector under browser toolbars); None otherwise, or before the page has said (a slide's usual size)."""
    state = st.session_state.get(TOP_KEY)
    height = state.get("screen") if state is not None and hasattr(state, "get") else None
    return int(height) if isinstance(height, (int, float)) and not isinstance(height, bool) and height > 0 else None
