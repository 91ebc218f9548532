"""CI runs each benchmark's --quick mode as a test: the script must exit 0; its printout is the report."""

from __future__ import annotations

import subprocess
import sys

from deploy.served import REPO


def quick_run(script: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run benchmarks/<script> --quick [args] to its end; what it printed and its exit status, unjudged."""
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), "--quick", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_quick(script: str, *args: str, timeout: float) -> str:
    """Run benchmarks/<script> --quick [args]; its standard output, after asserting it exited 0 (else its report)."""
    run = quick_run(script, *args, timeout=timeout)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    return run.stdout
