"""One design of each axis of the trade-off, recomputed from its recipe: the first evaluation piece's NLL sum and the
cache at a context against the stored row the chart draws (assets/lab_table.json, window_table.json,
cache_bits_table.json). The lab table's and the window table's own checks of a row are here too: they recompute the
same piece of the same model, scored once for this file (pieces of 512 and 2,048 tokens: seconds each)."""

from __future__ import annotations

import json
import math

import pytest

from attn_core.pretrained import global_layers, with_cache_bits, with_window
from benchmarks.window_sinks import PIECE
from explorer import lab
from explorer.lab import axes_points, stored

pytestmark = pytest.mark.slow  # scores pieces of 512 and 2,048 tokens with five models


def stored_row(path, key):
    table = json.loads(path.read_text(encoding="utf-8"))
    if table["evaluation"]["text_sha256"] != lab.text_sha256(lab.reference_text()):
        pytest.skip("this Python's pydoc_data text is not the one the table was measured on")
    return table["evaluation"]["window"], next(row for row in table["rows"] if row["key"] == key)


def first_piece(model, eval_ids, piece) -> tuple[float, int]:
    """(NLL sum, tokens scored) of the first evaluation piece, as the tables' scripts score it."""
    return lab.window_nll_sums(model, eval_ids[:piece], piece)[0]


@pytest.fixture(scope="module")
def piece_nll(lab_ids):
    """first_piece of the model a stored row names, scored once for this file: nll(key, piece, make_model)."""
    found: dict[tuple[str, int], tuple[float, int]] = {}

    def nll(key, piece, make):
        if (key, piece) not in found:
            found[key, piece] = first_piece(make(), lab_ids[0], piece)
        return found[key, piece]

    return nll


# A 4-bit cache rounds each number to one of 16 codes: float32 sums that differ in their last bit between CPUs (the
# kernels torch picks for the processor) move a few numbers across a code's boundary, and the piece's NLL by up to
# ~0.1 % (0.07 % seen on an AVX-512 Xeon against the table's machine; the same row on the same machine is identical).
# Another design differs by percents: 2 bits or keys per token against per channel, a window of 64 against 128.
QUANTISED_REL = 2e-3


def windowed(lm, row):
    source = with_cache_bits(lm, **row["cache_bits"]) if "cache_bits" in row else lm
    return with_window(source, row["window"], row["sink_tokens"], global_layers(row["pattern"], lm.config.n_layers))


def mean_pooled(lm):
    return lab.convert_point(lm, lab.POINTS_BY_KEY["mqa-mean"], None)


def test_fewer_kv_heads_mean_pooled_is_its_stored_row(lm, piece_nll):
    piece, row = stored_row(lab.TABLE_PATH, "mqa-mean")
    assert piece_nll("mqa-mean", piece, lambda: mean_pooled(lm))[0] == pytest.approx(
        row["window_nll_sums"][0][0], rel=1e-5
    )
    assert lab.cache_bytes_per_token(mean_pooled(lm)) == row["cache_bytes_per_token"]


def test_a_latent_is_its_stored_row(lm, lab_ids):
    piece, row = stored_row(lab.TABLE_PATH, "mla-128-32")
    model = lab.convert_point(lm, lab.POINTS_BY_KEY["mla-128-32"], lab.lab_calibration(lm, lab_ids[1]))
    assert first_piece(model, lab_ids[0], piece)[0] == pytest.approx(row["window_nll_sums"][0][0], rel=1e-5)
    assert lab.cache_bytes_per_token(model) == row["cache_bytes_per_token"]


@pytest.mark.parametrize(
    ("key", "axis"), [("w128-s1-every", "window"), ("w128-s1-gemma3", "layers"), ("w128-s1-gemma3-b4", "combined")]
)
def test_a_window_a_layer_pattern_and_a_window_over_4_bits_are_their_stored_rows(lm, piece_nll, key, axis):
    piece, row = stored_row(axes_points.WINDOW_TABLE_PATH, key)
    model = windowed(lm, row)
    rel = QUANTISED_REL if "cache_bits" in row else 1e-5
    assert piece_nll(key, piece, lambda: model)[0] == pytest.approx(row["window_nll_sums"][0][0], rel=rel)
    assert row["cache_nbytes"]["8192"] == model.cache_nbytes(8192)
    assert next(p for p in axes_points.load_points() if p.key == key).axis == axis


def test_four_bits_keys_per_channel_is_its_stored_row(lm, lab_ids):
    piece, row = stored_row(axes_points.CACHE_BITS_TABLE_PATH, "b4-channel-r0")
    model = with_cache_bits(lm, bits=4, group_size=row["group_size"], residual=row["residual"], keys="channel")
    assert first_piece(model, lab_ids[0], piece)[0] == pytest.approx(row["window_nll_sums"][0][0], rel=QUANTISED_REL)
    assert row["cache_nbytes"]["8192"] == model.cache_nbytes(8192)


# --- the tables' own checks of one row (the same pieces as above, scored once) --------------------------------------
def test_the_lab_table_is_reproduced_for_one_point(lm, piece_nll):
    """Recompute the first evaluation window of the mean-pooled MQA point (no calibration needed: the cheapest)
    and compare with what the table stored; check the table's totals and cache figures against the formula."""
    if not stored.TABLE_PATH.exists():
        pytest.fail(f"{stored.TABLE_PATH} is missing: run `python benchmarks/lab_table.py`")
    table = stored.load_table()
    if table["evaluation"]["text_sha256"] != lab.text_sha256(lab.reference_text()):
        pytest.skip("this Python's pydoc_data text is not the one the table was measured on")
    rows = {row["key"]: row for row in table["rows"]}
    assert set(rows) == {point.key for point in lab.LAB_POINTS}  # the window points' rows are window_table.json's
    for row in rows.values():
        assert row["perplexity"] == pytest.approx(lab.perplexity_of(row["window_nll_sums"]), rel=1e-12)
        per_layer = row["cache_bytes_per_token_per_layer"]
        assert row["cache_bytes_per_token"] == per_layer * lm.config.n_layers
        attention = row["attention"]
        elements = (
            attention["kv_lora_rank"] + attention["qk_rope_head_dim"]
            if attention["variant"] == "mla"
            else 2 * attention["n_kv_heads"] * attention["head_dim"]
        )
        assert per_layer == elements * 4
    assert table["evaluation"]["window"] == lab.WINDOW
    stored_sum, stored_count = rows["mqa-mean"]["window_nll_sums"][0]
    recomputed = piece_nll("mqa-mean", lab.WINDOW, lambda: mean_pooled(lm))
    assert recomputed[1] == stored_count
    assert math.isclose(recomputed[0], stored_sum, rel_tol=1e-4), (recomputed, stored_sum)


def test_a_window_tables_row_is_recomputed_from_its_recipe(lm, piece_nll):
    piece, row = stored_row(axes_points.WINDOW_TABLE_PATH, "w128-s1-every")
    assert piece == PIECE
    model = windowed(lm, row)
    assert row["global_layers"] == list(model.global_layers)
    loss_sum, _scored = piece_nll("w128-s1-every", PIECE, lambda: model)
    assert loss_sum == pytest.approx(row["window_nll_sums"][0][0], rel=1e-5)
    assert row["cache_nbytes"]["8192"] == model.cache_nbytes(8192)
    assert math.isclose(row["cache_nbytes"]["512"] / 512, model.cache_bytes_per_token(512))
