"""CI runs each benchmark's --quick mode as a test: the script must exit 0; its printout is the report."""

from __future__ import annotations

import subprocess
import sys

from deploy.served import REPO


def run_quick(script: str, *args: str, timeout: float) -> str:
    """Run benchmarks/<script> --quick [args]; its standard output, after asserting it exited 0 (else its report)."""
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), "--quick", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    return run.stdout
