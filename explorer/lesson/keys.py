"""The lesson's keyboard and scrolling: a small component (keys.js) that reports ← and → as "previous" and "next",
and one (top.js) that opens a new step at its top."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

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


def open_at_top(step: int) -> None:
    """Scroll the page to its top when the step shown differs from the last run's (call once the step is known)."""
    TOP(key="lesson_top", data={"step": step})
