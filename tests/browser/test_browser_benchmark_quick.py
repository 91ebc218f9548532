"""CI's short browser benchmark: `python benchmarks/browser.py --quick` must finish without a crash (timings are
reported, never judged here: the machine is shared)."""

from __future__ import annotations

import subprocess
import sys

from deploy.served import REPO


def test_the_quick_browser_benchmark_exits_cleanly(chromium_path):
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "browser.py"), "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = run.stdout + run.stderr[-3000:]
    assert run.returncode == 0, report
    assert "overview" in run.stdout, report
    assert "bare" in run.stdout, report
