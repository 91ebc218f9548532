"""CI's short load tests: `python benchmarks/classroom.py --quick` (3 students speaking Streamlit's websocket protocol
to 2 replicas behind HAProxy) exits 0 only if every student opened the page and every press finished with the link
carrying the new value, without an error; `--pages all` does the same with one student on every page, each pressing
a widget its page reads, and fails a page on which no press finished; `--capacity` measures two small levels on
1 replica and on 2, and fails if either number of replicas measured no level or a level served no press. The
figures are printed, never judged here (the machine is shared)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.quick_benchmark import run_quick

if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):
    pytest.skip("Debian's haproxy is not installed: run `make balancer`", allow_module_level=True)


def test_the_quick_classroom_benchmark_serves_every_student_without_an_error():
    run_quick("classroom.py", timeout=900)


def test_students_on_every_page_press_a_widget_it_reads_without_an_error():
    run_quick("classroom.py", "--pages", "all", timeout=900)


def test_the_capacity_search_measures_levels_on_one_replica_and_two():
    run_quick("classroom.py", "--capacity", timeout=900)
