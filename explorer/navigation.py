"""What app.py needs before its menu: the run's language and the page the link asks for.

Kept apart from explorer.state (which imports torch and the pages' machinery) so that a fresh server's first visit
gets the app's own menu, in the link's language, before that import; the page's run pays for it after.
"""

from __future__ import annotations

import re
import sys

import streamlit as st

from . import i18n
from .i18n import LANGUAGES, LINK_PARAM

LANGUAGE_KEY = "setting_lang"  # the sidebar's language switch


def use_language() -> str:
    """Decide this run's language and speak it: the sidebar's switch once drawn, else the link's `lang`, else the
    browser's language, else English. app.py calls this before the menu is drawn; every page again (alone in a test)."""
    state = st.session_state
    lang = state.get(LANGUAGE_KEY)
    if lang not in LANGUAGES:
        asked = st.query_params.get(LINK_PARAM)
        lang = asked if asked in LANGUAGES else i18n.language_from_locale(st.context.locale)
        state[LANGUAGE_KEY] = lang
    i18n.set_language(lang)
    return lang


def _session_language() -> str | None:
    try:
        return st.session_state.get(LANGUAGE_KEY)
    except Exception:  # no session (a script, a test of a module): English
        return None


i18n.ask_session_with(_session_language)


def requested_page() -> str | None:
    """The URL path the browser asked for ("" for the root), when it is one a page could have."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        if ctx is None:  # not in a run (a script, a test of a module)
            return None
        asked = ctx.pages_manager.intended_page_name  # not public: None where it is missing
    except AttributeError:
        return None
    return asked if asked and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", asked) else None


def leave_pages_folder_mode() -> None:
    """Make app.py's st.navigation, not Streamlit's old pages/ folder mode, run this link (explorer/shell.py)."""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the old mode
        return
    if getattr(PagesManager, "uses_pages_directory", None):
        PagesManager.uses_pages_directory = False
        st.rerun()


def starting_up() -> bool:
    """This server has not yet run a page: the first run imports torch and builds its layers (seconds, not the
    fraction of one a warm page takes), so the visitor should be told something is happening."""
    return "torch" not in sys.modules
