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
