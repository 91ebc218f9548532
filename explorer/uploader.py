"""A file upload box in the run's language. Streamlit writes its button ("Upload") and its size limit ("1MB per
file") in English whatever the page's language, and no parameter of st.file_uploader changes them: the box's own
CSS, scoped to its key, draws the page's words over them (the limit read from the server's maxUploadSize)."""

from __future__ import annotations

import json
from collections.abc import Callable

import streamlit as st

from .i18n import _

# Streamlit's elements inside the box: the button's label and the limit beside it
_PARTS = {
    "button": '[data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p',
    "limit": '[data-testid="stFileUploaderDropzoneInstructions"] span',
}


def upload_box(label: str, *, key: str, on_change: Callable[[], None]) -> None:
    """st.file_uploader with its button and limit in this run's language."""
    st.file_uploader(label, key=key, on_change=on_change)
    megabytes = st.get_option("server.maxUploadSize")
    words = {"button": _("Upload"), "limit": _("At most {n} MB per file", n=megabytes)}
    st.html(f"<style>{upload_css(key, words)}</style>")  # style only: takes no room on the page


def upload_css(key: str, words: dict[str, str]) -> str:
    """The rules that hide Streamlit's English words in the box `key` and show `words` in their place, in their
    colour."""
    rules = []
    for part, selector in _PARTS.items():
        scoped = f".st-key-{key} {selector}"
        said = json.dumps(words[part], ensure_ascii=False).replace("<", "")  # a CSS string; no "<" in a style
        # The English text at size 0, the words after it at Streamlit's 14 px: the element sized to them, wrapped
        # and clipped as Streamlit's own in a narrow column
        rules.append(f"{scoped} {{ font-size: 0; }}")
        rules.append(f"{scoped}::after {{ content: {said}; font-size: 0.875rem; }}")
    return "\n".join(rules)
