"""The lesson's keyboard: a small component (keys.js) that reports ← and → as "previous" and "next"."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

KEYS_NAME = "attention_explorer.lesson_keys"
KEYS = st.components.v2.component(KEYS_NAME, js=(Path(__file__).parent / "keys.js").read_text(encoding="utf-8"))


def arrow_key() -> str | None:
    """The arrow key pressed since the last run: "previous", "next", or None. Call before the step's widget is drawn,
    so that the step can move."""
    result = KEYS(key="lesson_keys", on_key_change=lambda: None)
    pressed = getattr(result, "key", None)
    return pressed if pressed in ("previous", "next") else None
