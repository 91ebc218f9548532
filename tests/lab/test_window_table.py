"""The stored window table (assets/window_table.json, written by benchmarks/window_sinks.py) against a fresh
measurement: its inputs' hashes, its arithmetic, and one piece of one row recomputed from the row's recipe."""

from __future__ import annotations

import json
import math

import pytest

from attn_core.pretrained import global_layers, with_window
from benchmarks.window_sinks import PIECE, TABLE_PATH
from explorer import lab

pytestmark = pytest.mark.slow  # scores a piece of 2,048 tokens

CHECKED_KEY = "w128-s1-every"


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


def test_a_stored_row_is_recomputed_from_its_recipe(lm, table):
    row = next(row for row in table["rows"] if row["key"] == CHECKED_KEY)
    windowed = with_window(lm, row["window"], row["sink_tokens"], global_layers(row["pattern"], lm.config.n_layers))
    assert row["global_layers"] == list(windowed.global_layers)
    eval_ids, _ = lab.split_tokens(lm)
    piece = eval_ids[:PIECE]
    loss_sum = float(windowed.token_nll(piece, PIECE).double().sum())
    assert loss_sum == pytest.approx(row["window_nll_sums"][0][0], rel=1e-5)
    assert row["cache_nbytes"]["8192"] == windowed.cache_nbytes(8192)
    assert math.isclose(row["cache_nbytes"]["512"] / 512, windowed.cache_bytes_per_token(512))
