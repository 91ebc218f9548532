"""Attention Explorer: see how MHA, MQA, GQA and MLA differ, from real forward passes.

Each page draws the shared sidebar itself (explorer.state.page_settings), so it runs the same alone or here.
"""

from pathlib import Path

import streamlit as st

from explorer.charts import preload_plotly
from explorer.heap import freeze_imports
from explorer.i18n import _
from explorer.navigation import requested_page, starting_up, use_language
from explorer.pages import PAGES


def page_not_found() -> None:
    # explorer.state imports torch: a page's run pays for it, after the menu is drawn (explorer/navigation.py)
    from explorer.not_found import page_not_found as draw

    draw()


# The favicon is a file served by the app itself: a ":material/...:" icon makes the browser fetch an SVG from
# fonts.gstatic.com, which fails offline and is a request a classroom network may not allow.
st.set_page_config(
    page_title="Attention Explorer", page_icon=Path(__file__).parent / "assets" / "favicon.png", layout="wide"
)
use_language()  # before the menu: its titles are in the run's language
pages = [
    # The default page lives at the root URL; its own url_path ("home") is never shown.
    st.Page(
        page.path,
        title=_(page.title),
        icon=page.icon,
        url_path="home" if name == "overview" else name,
        default=(name == "overview"),
    )
    for name, page in PAGES.items()
]
# /overview (a link typed by hand, or handed out before the overview moved to the root) opens the overview too,
# instead of a "Page not found" dialog; it is not listed twice in the menu.
overview = PAGES["overview"]
pages.append(
    st.Page(
        overview.path,
        title=_(overview.title),
        icon=overview.icon,
        url_path="overview",
        visibility="hidden",
    )
)
# A link to a page that does not exist (a typo, an old address) opens a page of ours saying so in the link's language,
# not Streamlit's English "Page not found" dialog over the overview.
if (asked := requested_page()) and asked not in {page.url_path for page in pages}:
    pages.append(st.Page(page_not_found, title=_("Page not found"), url_path=asked, visibility="hidden"))
# After the page, at its foot: a tab whose replica died loads its link again on the one it reconnected to
# (deploy/serve.py; assets/rerun_on_reconnect.js). The span keeps the element from taking room (assets/app.css).
RERUN_ON_RECONNECT = (
    f"<script>{(Path(__file__).parent / 'assets' / 'rerun_on_reconnect.js').read_text()}</script>"
    '<span class="no-room"></span>'
)
try:
    current = st.navigation(pages)
    preload_plotly()  # its download beside the page's first run, not after it (explorer/charts.py)
    # A blank page for seconds would look broken: say what is happening, in the page's place while its first run
    # builds it, gone once it is drawn (a toast stayed seconds longer, over the lesson's step selector and lead).
    starting = st.empty() if starting_up() else None
    if starting is not None:
        starting.info(
            _("Starting up: the server's first visit loads PyTorch and builds the layers (a few seconds)."),
            icon=":material/hourglass_top:",
        )
    # The tab names the page, in the run's language: a class with several tabs open tells them apart.
    st.set_page_config(page_title=f"{current.title} · Attention Explorer")
    current.run()
    if starting is not None:
        starting.empty()
    st.html(RERUN_ON_RECONNECT, unsafe_allow_javascript=True)
finally:
    freeze_imports()  # the modules this run imported, out of the garbage collector's walks (explorer/heap.py)
