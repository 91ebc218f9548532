"""benchmarks/gpu.py's CPU mode, the run a machine without a GPU makes: every published layer kind measured, and
the JSON says the GPU figures need a GPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gpu

from benchmarks.published_small import LAYER_KINDS


def test_cpu_mode_measures_every_layer_kind_and_says_the_gpu_figures_need_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gpu.json"
    assert gpu.main(["--cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert "GPU figures need a GPU" in capsys.readouterr().err
    assert "need a GPU" in report["mode"]
    assert report["failed"] == []
    assert report["skipped"] == []
    kinds = {(name, kind) for name, kind, _ in LAYER_KINDS}
    assert {(row["model"], row["kind"]) for row in report["decode"]} == kinds
    assert {(row["model"], row["kind"]) for row in report["prefill"]} == kinds
    for row in report["decode"]:
        assert row["ms"] > 0
        assert row["cache_read_bytes"] > 0
        assert row["fraction_of_card"] is None
        assert row["bytes_per_s"] == pytest.approx((row["weight_bytes"] + row["cache_read_bytes"]) / row["ms"] * 1e3)
    llama = [row for row in report["prefill"] if row["model"] in gpu.HF_PEERS]
    assert llama
    assert all(row["hf_ms"] > 0 and row["hf_max_abs_diff"] < 1e-5 for row in llama)
