"""A new visit to the lab draws the page down to its first chart, and the rest a moment later.

The lab is long (tables, a dozen charts, the live sections): a browser handed all of it in its first run drew the
first chart 1.45x later than a bare Streamlit app's (budget 1.3x), busy laying out what is below the fold. So a
session's first run stops after the first chart, leaving a one-second timer (a fragment's run_every) whose first tick
reruns the page whole; every later run draws everything at once. A run with no browser behind it (no websocket
request's headers: AppTest, a script) has nothing to wait for, and runs whole.
"""

from __future__ import annotations

import streamlit as st

_WHOLE = "_lab_whole"  # set once this session's lab has been deferred: later runs draw it whole
_ARMED = "_lab_rest_armed"  # the timer's fragment has run inline once; its next run is the tick
REST_AFTER_SECONDS = 1.0


def rest_deferred() -> bool:
    """True on this session's first run of the lab in a browser: the page stops here (st.stop), and the timer left
    in its place reruns it whole."""
    if st.session_state.get(_WHOLE) or not st.context.headers:
        return False
    st.session_state[_WHOLE] = True
    st.html('<div class="view-pending"></div>')  # what deploy.served.SCRIPT_IDLE waits to see gone
    st.fragment(run_every=REST_AFTER_SECONDS)(_rerun_on_tick)()
    return True


def _rerun_on_tick() -> None:
    if st.session_state.pop(_ARMED, False):
        st.rerun(scope="app")
    st.session_state[_ARMED] = True  # the call inside the first run itself
