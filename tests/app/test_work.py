"""explorer.work: heavy probes take turns across sessions (threads), and a probe inside a probe does not deadlock."""

from __future__ import annotations

import threading
import time

from explorer import work


def test_no_more_probes_run_at_once_than_there_are_slots():
    running, most, lock = 0, 0, threading.Lock()

    @work.takes_turns
    def probe():
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    threads = [threading.Thread(target=probe) for _ in range(4 * work.SLOTS + 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert most == work.SLOTS  # every slot used, never more


def test_a_probe_called_inside_a_probe_does_not_wait_for_itself():
    @work.takes_turns
    def inner():
        return "inner"

    @work.takes_turns
    def outer():
        return inner()

    results = []
    threads = [threading.Thread(target=lambda: results.append(outer())) for _ in range(work.SLOTS + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert results == ["inner"] * (work.SLOTS + 1)


RUNS: list[str] = []


def first_probe(x: int, *, scale: int = 1) -> tuple[str, int]:
    """The first of two probes that take the same arguments."""
    RUNS.append("first")
    return "first", x * scale


def second_probe(x: int, *, scale: int = 1) -> tuple[str, int]:
    RUNS.append("second")
    return "second", x * scale


def test_a_cached_probe_keeps_its_signature_and_a_cache_of_its_own():
    import inspect

    first = work.cached_probe(first_probe, max_entries=4)
    second = work.cached_probe(second_probe, max_entries=4, takes_turns=False)
    first.clear()
    second.clear()
    RUNS.clear()
    assert inspect.signature(first) == inspect.signature(first_probe)
    assert first.__name__ == "first_probe"
    assert first.__doc__ == first_probe.__doc__
    # the same arguments, two probes: each answers from its own cache
    assert first(3, scale=2) == ("first", 6)
    assert second(3, scale=2) == ("second", 6)
    assert first(3, scale=2) == ("first", 6)
    assert second(3, scale=2) == ("second", 6)
    assert RUNS == ["first", "second"]  # each ran once, then was read back
    assert first._info.show_spinner is False  # the page shows its own spinner, in the reader's language
