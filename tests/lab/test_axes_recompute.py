"""One design of each axis of the trade-off, recomputed from its recipe: the first evaluation piece's NLL sum and the
cache at a context against the stored row the chart draws (assets/lab_table.json, window_table.json,
cache_bits_table.json)."""

from __future__ import annotations

import json

import pytest

from attn_core.pretrained import global_layers, with_cache_bits, with_window
from explorer import lab
from explorer.lab import axes_points

pytestmark = pytest.mark.slow  # scores pieces of 512 and 2,048 tokens with five models


def stored_row(path, key):
    table = json.loads(path.read_text(encoding="utf-8"))
    if table["evaluation"]["text_sha256"] != lab.text_sha256(lab.reference_text()):
        pytest.skip("this Python's pydoc_data text is not the one the table was measured on")
    return table["evaluation"]["window"], next(row for row in table["rows"] if row["key"] == key)


def first_piece_nll(model, eval_ids, piece):
    return float(model.token_nll(eval_ids[:piece], piece).double().sum())


# A 4-bit cache rounds each number to one of 16 codes: float32 sums that differ in their last bit between CPUs (the
# kernels torch picks for the processor) move a few numbers across a code's boundary, and the piece's NLL by up to
# ~0.1 % (0.07 % seen on an AVX-512 Xeon against the table's machine; the same row on the same machine is identical).
# Another design differs by percents: 2 bits or keys per token against per channel, a window of 64 against 128.
QUANTISED_REL = 2e-3


def windowed(lm, row):
    source = with_cache_bits(lm, **row["cache_bits"]) if "cache_bits" in row else lm
    return with_window(source, row["window"], row["sink_tokens"], global_layers(row["pattern"], lm.config.n_layers))


def test_fewer_kv_heads_mean_pooled_is_its_stored_row(lm, lab_ids):
    piece, row = stored_row(lab.TABLE_PATH, "mqa-mean")
    model = lab.convert_point(lm, lab.POINTS_BY_KEY["mqa-mean"], None)
    assert first_piece_nll(model, lab_ids[0], piece) == pytest.approx(row["window_nll_sums"][0][0], rel=1e-5)
    assert lab.cache_bytes_per_token(model) == row["cache_bytes_per_token"]


def test_a_latent_is_its_stored_row(lm, lab_ids):
    piece, row = stored_row(lab.TABLE_PATH, "mla-128-32")
    model = lab.convert_point(lm, lab.POINTS_BY_KEY["mla-128-32"], lab.lab_calibration(lm, lab_ids[1]))
    assert first_piece_nll(model, lab_ids[0], piece) == pytest.approx(row["window_nll_sums"][0][0], rel=1e-5)
    assert lab.cache_bytes_per_token(model) == row["cache_bytes_per_token"]


@pytest.mark.parametrize(
    ("key", "axis"), [("w128-s1-every", "window"), ("w128-s1-gemma3", "layers"), ("w128-s1-gemma3-b4", "combined")]
)
def test_a_window_a_layer_pattern_and_a_window_over_4_bits_are_their_stored_rows(lm, lab_ids, key, axis):
    piece, row = stored_row(axes_points.WINDOW_TABLE_PATH, key)
    model = windowed(lm, row)
    rel = QUANTISED_REL if "cache_bits" in row else 1e-5
    assert first_piece_nll(model, lab_ids[0], piece) == pytest.approx(row["window_nll_sums"][0][0], rel=rel)
    assert row["cache_nbytes"]["8192"] == model.cache_nbytes(8192)
    assert next(p for p in axes_points.load_points() if p.key == key).axis == axis


def test_four_bits_keys_per_channel_is_its_stored_row(lm, lab_ids):
    piece, row = stored_row(axes_points.CACHE_BITS_TABLE_PATH, "b4-channel-r0")
    model = with_cache_bits(lm, bits=4, group_size=row["group_size"], residual=row["residual"], keys="channel")
    assert first_piece_nll(model, lab_ids[0], piece) == pytest.approx(row["window_nll_sums"][0][0], rel=QUANTISED_REL)
    assert row["cache_nbytes"]["8192"] == model.cache_nbytes(8192)
