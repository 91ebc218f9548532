"""CI's short load test: `python benchmarks/classroom.py --quick` (3 students speaking Streamlit's websocket protocol
to 2 replicas behind HAProxy) exits 0 only if every student opened the page and every press finished with the link
carrying the new value, without an error."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.quick_benchmark import run_quick

if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):
    pytest.skip("Debian's haproxy is not installed: run `make balancer`", allow_module_level=True)


def test_the_quick_classroom_benchmark_serves_every_student_without_an_error():
    report = run_quick("classroom.py", timeout=900)
    row = next(line for line in report.splitlines() if line.startswith("| 3 | 2 |"))
    assert "| 0 |" in row, report  # the errors column
