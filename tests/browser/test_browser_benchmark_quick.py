"""CI's short browser benchmark: `python benchmarks/browser.py --quick` exits 0 only if every page it times (the overview
once, heatmaps beside the bare app) redrew its chart after each press (timings are reported, never judged here: the
machine is shared)."""

from __future__ import annotations

from tests.quick_benchmark import run_quick


def test_the_quick_browser_benchmark_redraws_every_pages_chart(chromium_path):
    run_quick("browser.py", timeout=900)
