"""CI's short load tests: `python benchmarks/classroom.py --quick` (3 students speaking Streamlit's websocket protocol
to 2 replicas behind HAProxy) exits 0 only if every student opened the page and every press finished with the link
carrying the new value, without an error; `--pages all` does the same with one student on every page, each pressing
a widget its page reads; `--capacity` measures two small levels on 1 replica and on 2 and prints the capacity
figures."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from explorer.pages import PAGES
from tests.quick_benchmark import run_quick

if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):
    pytest.skip("Debian's haproxy is not installed: run `make balancer`", allow_module_level=True)


def test_the_quick_classroom_benchmark_serves_every_student_without_an_error():
    report = run_quick("classroom.py", timeout=900)
    row = next(line for line in report.splitlines() if line.startswith("| 3 | 2 |"))
    assert "| 0 |" in row, report  # the errors column


def test_students_on_every_page_press_a_widget_it_reads_without_an_error():
    report = run_quick("classroom.py", "--pages", "all", timeout=900)
    rows = {line.split(" | ")[0].strip("| "): line for line in report.splitlines() if line.startswith("| ")}
    for page in PAGES:
        # students, presses, p50 / p95 / max, errors: one student, at least one press, no error
        cells = re.fullmatch(r"\| \S+ \| \S+ \| 1, (\d+), [\d,]+ / [\d,]+ / [\d,]+ ms, (\d+) \|", rows[page])
        assert cells, (page, report)
        assert int(cells[1]) >= 1, (page, report)
        assert cells[2] == "0", (page, report)


def test_the_capacity_search_measures_levels_on_one_replica_and_two():
    report = run_quick("classroom.py", "--capacity", timeout=900)
    levels = re.findall(r"^\s+(\d+) students, (\d) replica\(s\): +([\d.]+) presses/s .* errors (\d+)", report, re.M)
    assert {replicas for _, replicas, _, _ in levels} == {"1", "2"}, report
    assert all(float(rate) > 0 and errors == "0" for _, _, rate, errors in levels), report
    assert re.search(r"^capacity: ", report, re.M), report
    for replicas in (1, 2):
        assert re.search(rf"^  {replicas} replica\(s\): ", report, re.M), report
