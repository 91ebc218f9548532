"""CI's short benchmark: `python benchmarks/app.py --quick` must finish without a crash or a leak between sessions."""

from __future__ import annotations

import subprocess
import sys

from deploy.served import REPO


def test_the_quick_app_benchmark_exits_cleanly(chromium_path):
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "app.py"), "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = run.stdout + run.stderr[-3000:]
    assert run.returncode == 0, report
    assert "every session ends showing its own settings: yes" in run.stdout, report
