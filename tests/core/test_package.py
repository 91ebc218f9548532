"""attn_core is a library a notebook can pip install: the wheel built from pyproject.toml holds the core (and its
pretrained subpackage), installs into a fresh virtual environment, and imports there with neither streamlit nor plotly
importable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # `make test-fast` leaves it out (pytest.ini)

REPO = Path(__file__).resolve().parents[2]

# Run inside the fresh environment, from a folder without the repository: the app's packages are made unimportable,
# then the core is imported and used, and the file it came from is printed.
CHECK = """
import sys
sys.modules["streamlit"] = None  # an import of either now raises ImportError
sys.modules["plotly"] = None
import torch
from attn_core import AttentionConfig, build_attention
import attn_core.pretrained
layer = build_attention(AttentionConfig(variant="gqa", d_model=64, n_heads=4, n_kv_heads=2), seed=0)
cache = layer.new_cache(batch_size=1)
layer(torch.randn(1, 5, 64), cache=cache)
assert cache.seq_len == 5 and cache.nbytes == 2 * 2 * 16 * 5 * 4, cache.nbytes
import attn_core
print(attn_core.__file__)
"""


def test_the_wheel_installs_and_imports_without_the_apps_packages(tmp_path):
    wheels = tmp_path / "wheels"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)],
        check=True,
        env=env | {"TMPDIR": str(tmp_path)},
        cwd=tmp_path,
    )
    shutil.rmtree(REPO / "build", ignore_errors=True)  # older setuptools build in the source tree
    (wheel,) = wheels.glob("attn_core-*.whl")
    # The fresh environment sees the machine's torch, numpy and einops (a CPU torch is large to install again); the
    # check above blocks the app's packages, which it would also see.
    venv.create(tmp_path / "venv", with_pip=True, system_site_packages=True)
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, env=env)
    run = subprocess.run([python, "-c", CHECK], check=True, capture_output=True, text=True, cwd=tmp_path, env=env)
    installed = Path(run.stdout.strip())
    assert installed.is_relative_to(tmp_path / "venv"), installed  # the wheel's copy, not the repository's
