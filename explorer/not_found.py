"""What a link to a page that does not exist opens (app.py draws it for an unknown path)."""

from __future__ import annotations

import streamlit as st

from .i18n import _
from .link import page_link
from .navigation import requested_page
from .pages import PAGES
from .state import page_settings


def page_not_found() -> None:
    """What a link to a page that does not exist opens: the sidebar, a sentence in the link's language, and the way
    to every page."""
    page_settings("not_found")
    st.title(_("Page not found"))
    st.info(
        _(
            "This link asks for a page called “{name}”, which the explorer does not have (a typo, or an old "
            "address). Its settings are kept: every page below opens with them.",
            name=requested_page() or "",
        ),
        icon=":material/explore_off:",
    )
    for entry in PAGES.values():
        page_link(entry.path, label=f"{_(entry.title)}: {_(entry.teaser)}", icon=entry.icon)
