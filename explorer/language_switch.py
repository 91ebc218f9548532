"""The language switches: the sidebar's, the same at the top of a phone's page (whose sidebar stays folded), and the
page's language declared on <html lang>. Which language a run speaks is decided in explorer.navigation."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st

from . import i18n
from .i18n import LANGUAGES, _
from .navigation import LANGUAGE_KEY


def sidebar_switch() -> None:
    """The sidebar's switch, and the page's language declared with it."""
    _declare_language()
    _switch(LANGUAGE_KEY, _keep_language)


def _switch(key: str, on_change: Callable[[], None], **options: Any) -> None:
    st.segmented_control(
        _("Language"), tuple(LANGUAGES), format_func=LANGUAGES.__getitem__, key=key, on_change=on_change, **options
    )


HTML_LANG = {"en": "en", "zh": "zh-Hans"}


def _declare_language() -> None:
    """The page's language on <html lang>: screen readers pick their voice by it, browsers their fonts and
    hyphenation. Streamlit's document says "en" whatever the content."""
    lang = json.dumps(HTML_LANG[i18n.language()])
    st.html(
        f'<script>document.documentElement.lang = {lang};</script><span class="no-room" data-lang={lang}></span>',
        unsafe_allow_javascript=True,
    )


PHONE_LANGUAGE_KEY = "setting_lang_phone"


def phone_switch() -> None:
    """The language switch again, at the top of the page, shown on narrow screens only (assets/app.css): a phone
    keeps the sidebar, and the sidebar's switch, folded away."""
    st.session_state[PHONE_LANGUAGE_KEY] = st.session_state[LANGUAGE_KEY]
    with st.container(key="phone-language"):
        _switch(PHONE_LANGUAGE_KEY, _language_from_phone, label_visibility="collapsed")


def _language_from_phone() -> None:
    chosen = st.session_state.get(PHONE_LANGUAGE_KEY)
    st.session_state[LANGUAGE_KEY] = chosen if chosen in LANGUAGES else i18n.language()


def _keep_language() -> None:
    """The switch was clicked on the language already shown: a segmented control would then show none."""
    if st.session_state.get(LANGUAGE_KEY) not in LANGUAGES:
        st.session_state[LANGUAGE_KEY] = i18n.language()
