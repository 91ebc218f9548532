"""CI's short wire benchmark: `python benchmarks/wire.py --quick` (the heatmaps page in four chromium tabs:
websocket compression off and on, loopback and a throttled link) exits 0 only if every press redrew a chart and
compression sent fewer bytes a press than plain frames; its bytes, times and ratios are printed, never judged here
(the machine is shared)."""

from __future__ import annotations

from tests.quick_benchmark import run_quick


def test_the_quick_wire_benchmark_redraws_every_press_and_compression_sends_fewer_bytes(chromium_path):
    run_quick("wire.py", timeout=900)
