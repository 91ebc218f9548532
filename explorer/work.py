"""Heavy probes take turns: at most one per core runs at a time, across every session of the server.

Each session runs its script in a thread of its own, with one torch thread (explorer.state.page_settings), so a class
arriving at once would otherwise build twenty layers side by side: no sooner done (the cores are shared either way),
but each holding its weights in memory meanwhile (a page of 16 heads at d_model 8192 is 128 MB). Taking turns bounds
that memory by the number of cores.

cached_probe(probe) is what a page's computed.py makes of a probe: a call cached for the server (st.cache_data), that
takes its turn on a miss, with the probe's own signature.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar, cast

import streamlit as st

SLOTS = max(1, os.cpu_count() or 1)
_slots = threading.BoundedSemaphore(SLOTS)
_held = threading.local()  # .slot: this thread holds a slot, so a probe inside a probe does not wait for itself

Result = TypeVar("Result")
Args = ParamSpec("Args")


def takes_turns(probe: Callable[Args, Result]) -> Callable[Args, Result]:
    """Run probe only while holding one of the SLOTS. Put it under st.cache_data, so a cache hit does not wait."""

    @functools.wraps(probe)
    def in_turn(*args: Args.args, **kwargs: Args.kwargs) -> Result:
        if getattr(_held, "slot", False):
            return probe(*args, **kwargs)
        with _slots:
            _held.slot = True
            try:
                return probe(*args, **kwargs)
            finally:
                _held.slot = False

    return in_turn


_in_turn = takes_turns  # cached_probe's keyword of that name hides the function


def cached_probe(
    probe: Callable[Args, Result], *, max_entries: int | None = None, takes_turns: bool = True
) -> Callable[Args, Result]:
    """probe, cached for the server by its arguments (st.cache_data, at most max_entries results) and, on a miss, run
    in its turn (takes_turns=False for a probe too light to queue, such as a pass on the meta device).

    The cached call keeps the probe's signature, so a page's computed.py does not restate it. Its cache is the
    probe's own: st.cache_data keys a function by its module, qualified name and source, which functools.wraps and
    inspect (following __wrapped__) take from the probe. No spinner: a page shows its own, in the reader's language.
    """
    run = _in_turn(probe) if takes_turns else probe

    @functools.wraps(probe)
    def cached(*args: Args.args, **kwargs: Args.kwargs) -> Result:
        return run(*args, **kwargs)

    return cast("Callable[Args, Result]", st.cache_data(max_entries=max_entries, show_spinner=False)(cached))
