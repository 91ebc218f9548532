"""A new visit to the lab draws the page down to its first chart, and the rest a moment later.

The lab is long (tables, a dozen charts, the live sections): a browser handed all of it in its first run drew the
first chart 1.45x later than a bare Streamlit app's (budget 1.3x), busy laying out what is below the fold. So a
session's first run stops after the first chart, leaving a one-second timer (a fragment's run_every) whose first tick
reruns the page whole; every later run draws everything at once. A run with no browser behind it (no websocket
request's headers: AppTest, a script) has nothing to wait for, and runs whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

_WHOLE = "_lab_whole"  # set once this session's lab has been deferred: later runs draw it whole
_ARMED = "_lab_rest_armed"  # the timer's fragment has run inline once; its next run is the tick
_DUE = "_lab_rest_due"  # the next run is the tick's: the one that draws the rest
REST_AFTER_SECONDS = 1.0
PENDING = '<div class="view-pending"></div>'  # what deploy.served.SCRIPT_IDLE waits to see gone


@dataclass
class Rest:
    """This run's part in a first visit: deferred (the page stops after its first chart), or drawing the rest with
    the marker kept in place until drawn() (the page's last line). Replaced by the rest's first element, the marker
    went while the rest was still being drawn, and a reader waiting for the page to settle read it half drawn."""

    deferred: bool
    marker: DeltaGenerator | None = None

    def drawn(self) -> None:
        if self.marker is not None:
            self.marker.empty()


def rest() -> Rest:
    """Deferred on this session's first run of the lab in a browser: the timer left in its place reruns it whole."""
    if not st.context.headers:
        return Rest(deferred=False)
    if st.session_state.pop(_DUE, False):
        marker = st.empty()
        marker.html(PENDING)
        return Rest(deferred=False, marker=marker)
    if st.session_state.get(_WHOLE):
        return Rest(deferred=False)
    st.session_state[_WHOLE] = True
    st.html(PENDING)
    st.fragment(run_every=REST_AFTER_SECONDS)(_rerun_on_tick)()
    return Rest(deferred=True)


def _rerun_on_tick() -> None:
    if st.session_state.pop(_ARMED, False):
        st.session_state[_DUE] = True
        st.rerun(scope="app")
    st.session_state[_ARMED] = True  # the call inside the first run itself
