"""CI's short browser benchmark: `python benchmarks/browser.py --quick` must finish without a crash (timings are
reported, never judged here: the machine is shared)."""

from __future__ import annotations

from tests.quick_benchmark import run_quick


def test_the_quick_browser_benchmark_exits_cleanly(chromium_path):
    report = run_quick("browser.py", timeout=900)
    assert "overview" in report, report
    assert "bare" in report, report
