"""CI's short benchmark: `python benchmarks/app.py --quick` must finish without a crash or a leak between sessions."""

from __future__ import annotations

from tests.quick_benchmark import run_quick


def test_the_quick_app_benchmark_exits_cleanly(chromium_path):
    report = run_quick("app.py", timeout=600)
    assert "every session ends showing its own settings: yes" in report, report
