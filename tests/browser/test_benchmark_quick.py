"""CI's short benchmark: `python benchmarks/app.py --quick` exits 0 only if every page reran without an exception and
every session of its classroom ended showing its own settings (a leak between sessions fails it); its figures are
printed, never judged here."""

from __future__ import annotations

from tests.quick_benchmark import run_quick


def test_the_quick_app_benchmark_finds_no_crash_and_no_leak_between_sessions(chromium_path):
    run_quick("app.py", timeout=600)
