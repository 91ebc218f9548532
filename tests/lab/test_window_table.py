"""The stored window table (assets/window_table.json, written by benchmarks/window_sinks.py): its inputs' hashes and
its arithmetic. A row recomputed from its recipe: tests/lab/test_axes_recompute.py, which scores the same piece."""

from __future__ import annotations

import json

import pytest

from benchmarks.window_sinks import TABLE_PATH
from explorer import lab


@pytest.fixture(scope="module")
def table():
    table = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    if table["evaluation"]["text_sha256"] != lab.text_sha256(lab.reference_text()):
        pytest.skip("this Python's pydoc_data text is not the one the table was measured on")
    return table


def test_every_row_states_its_perplexity_and_ratio_from_its_own_sums(table):
    original = table["rows"][0]
    assert original["key"] == "original"
    for row in table["rows"]:
        sums = row["window_nll_sums"]
        assert sum(n for _s, n in sums) == table["evaluation"]["tokens"] - len(sums)
        assert row["perplexity"] == pytest.approx(lab.perplexity_of(sums), rel=1e-12), row["key"]
        assert row["times_original"] == pytest.approx(row["perplexity"] / original["perplexity"], rel=1e-12)
