"""The core and the app type-check (mypy.ini: its files, complete hints, Optional enforced), as `make typecheck`.

A test rather than a step before the suite: from a fresh clone mypy takes one core for one to two minutes (torch's
types), and as a test it runs beside the others on the second core instead of holding both idle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # `make test-fast` leaves it out: `make typecheck` is the quick way while working

ROOT = Path(__file__).parents[2]


def test_the_core_and_the_app_type_check():
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
        ]  # the files mypy.ini names, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
