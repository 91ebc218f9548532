"""CI's short wire benchmark: `python benchmarks/wire.py --quick` (two pages, each in four chromium tabs: websocket
compression off and on, loopback and a throttled link) exits 0 only if every press redrew a chart; its printout gives
each page's bytes, times and ratios (never judged here: the machine is shared)."""

from __future__ import annotations

import re

from tests.quick_benchmark import run_quick


def test_the_quick_wire_benchmark_measures_bytes_and_both_links_for_each_page(chromium_path):
    report = run_quick("wire.py", timeout=900)
    for page in ("overview", "heatmaps"):
        row = next((line for line in report.splitlines() if line.startswith(f"| {page} |")), None)
        assert row is not None, report
        assert "FAILED" not in row, report
        # bytes opening the page and per press, both times, the ratio, compression's bytes and CPU
        assert re.search(r"\| [\d,]+ kB \| [\d,]+ kB \| [\d,]+ ms \| [\d,]+ ms \| [\d.]+x (ok|OVER) \|", row), row
        off, on = map(float, re.search(r"\| ([\d,]+) kB / ([\d,]+) kB \(", row).groups())
        assert 0 < on <= off, row  # permessage-deflate sends fewer bytes than plain frames
