"""CI's short failover benchmark: `python benchmarks/failover.py --quick` (two replicas behind HAProxy, two students
in chromium, the replica holding one of them killed with SIGKILL while its press is in flight) exits 0 only if every
student of the killed replica came back to the same view on the other one and the other student saw nothing."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.quick_benchmark import run_quick

if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):
    pytest.skip("Debian's haproxy is not installed: run `make balancer`", allow_module_level=True)


def test_a_killed_replicas_students_come_back_to_their_views(chromium_path):
    run_quick("failover.py", timeout=900)
