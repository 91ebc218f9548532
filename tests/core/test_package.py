"""attn_core is a library a notebook can pip install: the wheel built from pyproject.toml holds the core (and its
pretrained subpackage), installs into a fresh virtual environment, and imports there with neither streamlit nor plotly
importable."""

from __future__ import annotations

import os
import shutil
import site
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


def _site_folders() -> list[str]:
    """Where this interpreter's installed packages are: its environment's site-packages (and its base's, for a venv
    made with --system-site-packages), then the user's."""
    folders = site.getsitepackages()
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return [folder for folder in folders if Path(folder).is_dir()]


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
    # The fresh environment borrows this interpreter's torch, numpy and einops (a CPU torch is large to install
    # again) by listing its site-packages in a .pth file. Not system_site_packages: inside a virtual environment that
    # would be the base interpreter's, where torch may be missing. The check above blocks the app's packages, which
    # it also sees; the editable install of the repository stays invisible (a .pth file's folders have their own .pth
    # files left unread).
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    fresh_site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(fresh_site) / "borrowed.pth").write_text("\n".join(_site_folders()) + "\n")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, env=env)
    run = subprocess.run([python, "-c", CHECK], check=True, capture_output=True, text=True, cwd=tmp_path, env=env)
    installed = Path(run.stdout.strip())
    assert installed.is_relative_to(tmp_path / "venv"), installed  # the wheel's copy, not the repository's
