"""The sidebar's Share section: the link to this view (redrawn as the page's own controls write to it), a QR code of
it in a dialog for a class, and the settings as a JSON download; and whether the link points at the computer that
opened it (useless to anyone else).

explorer.link tells this box when the link changes (link_changed); explorer.state draws it under the settings.
"""

from __future__ import annotations

import base64
import html
import io
import ipaddress
import json
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit

import segno
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from . import i18n
from .i18n import LINK_PARAM, _
from .params import TEXT_NAMES
from .present import PRESENT, presenting
from .settings import Settings
from .verbatim import show_verbatim

_SHARE_BOX = "_share_box"  # this run's placeholder for the link; dropped at the start of every run
_BOX_FOR_FRAGMENT = "_share_box_for_fragment"  # this run's page draws the link from a fragment (shares_link)
_BOX_TAKEN = "_share_box_taken"  # set once that fragment took the box over in this full run
_BOX_AWAITS = "_share_box_awaits"  # this full run's fragment has yet to take the box over: nothing draws it till then
_FRAGMENT_LANGUAGE = "_share_fragment_language"  # the language of the full run that drew the fragment
_SHOW_QR = "_show_qr"  # set by the share box's QR button, for the run it starts
_SHARE_PARAMS = "_share_params"  # this run's link parameters (shared and the page's own), for the JSON download


def forget_last_run() -> None:
    """Drop last run's placeholders: they are no longer on the page."""
    for key in (_SHARE_BOX, _BOX_TAKEN, _BOX_AWAITS, _SHARE_PARAMS):
        st.session_state.pop(key, None)


def share_tools(settings: Settings) -> None:
    st.subheader(_("Share"))
    st.caption(_("This link opens exactly this view (same weights, inputs and numbers)."))
    if presenting():
        st.caption(_("For students' screens: it opens the usual page, not presenter mode."))
    st.session_state[_SHARE_BOX] = box = st.empty()  # redrawn as the page's own controls write to the link
    if st.session_state.pop(_BOX_FOR_FRAGMENT, False):  # the page's fragment draws it (shares_link)
        st.session_state[_BOX_AWAITS] = True
    else:
        _show_link(box)
    # A dialog drawn on demand: a QR code takes too long to make for every press of every slider.
    # on_click, not the button's return value: a run that reruns itself (the pages/ folder fix) loses the latter.
    st.button(
        _("QR code for the class"),
        icon=":material/qr_code_2:",
        width="stretch",
        on_click=lambda: st.session_state.update({_SHOW_QR: True}),
    )
    if st.session_state.pop(_SHOW_QR, False):
        st.dialog(_("Scan to open this view"), width="large")(_qr_code)()  # titled in this run's language
    # Everything the link carries, the page's own view settings included (they are bound after this is drawn, so
    # the dict is filled in as they write to the link, and the JSON is written when the button is clicked).
    params = st.session_state[_SHARE_PARAMS] = settings.to_link() | {LINK_PARAM: i18n.language()}
    st.download_button(
        _("Settings as JSON"),
        lambda: json.dumps(params, indent=2),
        file_name="attention-explorer-settings.json",
        mime="application/json",
        on_click="ignore",
        width="stretch",
        help=_("The settings and this page's own choices: what the link reproduces."),
    )


def link_changed(params: dict[str, str], *, changed: bool) -> None:
    """The link was written (changed: it now differs): the JSON download holds its parameters, and the box shows it."""
    if _SHARE_PARAMS in st.session_state:
        st.session_state[_SHARE_PARAMS].update(params)  # the JSON download, which is written when clicked
    # Not before a page's fragment takes the box over: a box drawn, then taken, then drawn again in one run could
    # reach the browser composed into one batch out of order, and a new visit went blank ("Cannot set a node at a
    # delta path": tests/app/test_one_batch.py). The fragment draws the link as the page left it.
    if changed and _SHARE_BOX in st.session_state and not st.session_state.get(_BOX_AWAITS):
        _show_link(st.session_state[_SHARE_BOX])  # the page's own view settings join the link shown


def link_drawn_by_fragment() -> None:
    """Call before page_settings(): this run's page draws the share box from a fragment (shares_link)."""
    st.session_state[_BOX_FOR_FRAGMENT] = True  # read by share_tools, in this run's sidebar


def shares_link(body: Callable[[], None]) -> Callable[[], None]:
    """A fragment's body whose controls write to the link: st.fragment(...)(shares_link(body))(), on a page that
    called link_drawn_by_fragment() before page_settings(). Its own reruns redraw the share box, which lies outside
    it: Streamlit lets them write there only where the page's full run saw the fragment write (else
    StreamlitInvalidLayoutContextError), so the fragment draws the link into the box on every run, and the sidebar
    leaves the box empty for it. The page must not draw the box after the fragment did: that left a new visit blank
    ("Cannot set a node at a delta path": tests/browser/test_fragment_pages.py). So a page whose own controls follow
    its fragment runs the fragment last, in a place kept for it (pages/kv_cache.py)."""

    def run() -> None:
        state = st.session_state
        if not state.get(_BOX_TAKEN):  # the page's full run: the language it decided (only a full run changes it)
            state[_BOX_TAKEN] = True
            state.pop(_BOX_AWAITS, None)
            state[_FRAGMENT_LANGUAGE] = i18n.language()
            if _SHARE_BOX in state:
                state[_SHARE_BOX] = state[_SHARE_BOX].empty()  # its place in the box, for its own reruns
        with i18n.speaking(state.get(_FRAGMENT_LANGUAGE, i18n.DEFAULT)):
            if _SHARE_BOX in state:
                _show_link(state[_SHARE_BOX])
            body()

    return run


def _current_link() -> str:
    """This view's link for a class: its language, page, step and settings, never presenter mode (a projector's
    sizes on a student's phone: explorer/present.py), which the presenter's own address bar keeps."""
    base = (st.context.url or "").split("?")[0]
    shared = {name: value for name, value in st.query_params.to_dict().items() if name != PRESENT.name}
    return f"{base}?{urlencode(shared)}"


def _show_link(box: DeltaGenerator) -> None:
    link = _current_link()
    with box.container():
        show_verbatim(link)
        _warn_if_local(link)


def _warn_if_local(link: str) -> None:
    if points_at_this_machine(link):
        st.warning(
            _(
                "This link points at this computer (localhost): students' devices cannot open it. Share the hosted "
                "copy's address, or this computer's address on the network."
            ),
            icon=":material/computer:",
        )


def _qr_code() -> None:
    """The link as a QR code, large enough to scan from a projector's screen across a room; a link too long for that
    is said to be, and offered (as a code too, if that one scans) without its free text."""
    link = _current_link()
    if scannable(link):
        _qr_image(link)
        _warn_if_local(link)
        show_verbatim(link)
        return
    short = without_text(link)
    st.info(
        _(
            "This link is too long to scan from across a room ({n} characters: its code's squares would be under "
            "{px} px on a 1024×768 projector).",
            n=len(link),
            px=MIN_MODULE_PX,
        )
        + " "
        + (
            _(
                "Below, the same view without its text ({n} characters): it opens with the page's own text.",
                n=len(short),
            )
            if short != link
            else _("Share the link itself, below.")
        )
    )
    _warn_if_local(link)
    if short != link:
        if scannable(short):
            _qr_image(short)
        show_verbatim(short)
    st.caption(_("The whole link:"))
    show_verbatim(link)


def _qr_image(link: str) -> None:
    if (image := qr_data_uri(link)) is not None:
        alt = html.escape(_("QR code of the link: {link}", link=link))
        st.html(f'<img class="share-qr" src="{image}" alt="{alt}">')


# segno draws QR codes in pure Python (no image library, no native code), with the standard's error correction and
# mask selection; a hand-written encoder would have to get all of that right.
QR_SCALE = 4  # pixels per module: a long link (QR version ~15, 77 modules) stays near 330 px, sharp on a projector


@lru_cache(maxsize=64)
def qr_png(link: str) -> bytes:
    """The link as a QR code, PNG. Error correction M (15 %): a code on a projector is read from far, not damaged;
    segno raises it for free when the link leaves room in the same version."""
    buffer = io.BytesIO()
    segno.make(link, error="m", micro=False).save(buffer, kind="png", scale=QR_SCALE, border=4)
    return buffer.getvalue()


# The code is drawn min(100 %, 60vh) wide (assets/app.css img.share-qr): 460 px on a 1024x768 projector. A phone reads
# it from a few metres when each square (module) is at least this many px there.
MIN_MODULE_PX = 5
QR_DRAWN_PX = 0.6 * 768
QR_BORDER = 4  # modules of quiet zone each side (qr_png)


def scannable(link: str) -> bool:
    """Whether the link's QR code has squares of MIN_MODULE_PX or more where a projector shows it (a 2,000-character
    link's had ~3 px: unreadable from a seat)."""
    try:
        modules = segno.make(link, error="m", micro=False).symbol_size(border=QR_BORDER)[0]
    except segno.DataOverflowError:
        return False
    return QR_DRAWN_PX / modules >= MIN_MODULE_PX


def without_text(link: str) -> str:
    """The link without its free-text parameters (explorer.params.TEXT_NAMES): the same view with the page's own
    text, short enough to scan."""
    parts = urlsplit(link)
    kept = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True) if name not in TEXT_NAMES]
    return parts._replace(query=urlencode(kept)).geturl()


def qr_data_uri(link: str) -> str | None:
    """The QR code as a data: URI for an <img>, or None for a link longer than any QR code holds (~2,300 bytes at
    this error correction)."""
    try:
        png = qr_png(link)
    except segno.DataOverflowError:
        return None
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def points_at_this_machine(link: str) -> bool:
    """True for a link whose host is localhost or a loopback address: only the computer that opened it can follow it."""
    host = urlsplit(link).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
