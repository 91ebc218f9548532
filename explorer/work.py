"""Heavy probes take turns: at most one per core runs at a time, across every session of the server.

Each session runs its script in a thread of its own, with one torch thread (explorer.state.page_settings), so a class
arriving at once would otherwise build twenty layers side by side: no sooner done (the cores are shared either way),
but each holding its weights in memory meanwhile (a page of 16 heads at d_model 8192 is 128 MB). Taking turns bounds
that memory by the number of cores.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import TypeVar

SLOTS = max(1, os.cpu_count() or 1)
_slots = threading.BoundedSemaphore(SLOTS)
_held = threading.local()  # .slot: this thread holds a slot, so a probe inside a probe does not wait for itself

Result = TypeVar("Result")


def takes_turns(probe: Callable[..., Result]) -> Callable[..., Result]:
    """Run probe only while holding one of the SLOTS. Put it under st.cache_data, so a cache hit does not wait."""

    @functools.wraps(probe)
    def in_turn(*args: object, **kwargs: object) -> Result:
        if getattr(_held, "slot", False):
            return probe(*args, **kwargs)
        with _slots:
            _held.slot = True
            try:
                return probe(*args, **kwargs)
            finally:
                _held.slot = False

    return in_turn
