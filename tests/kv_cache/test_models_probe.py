"""Published models' caches, measured on the meta device, against values computed by hand from their configs."""

from __future__ import annotations

import pytest

from attn_core import PRESETS, describe_model, kv_cache_bytes, published_config
from explorer.probes.kv_cache import (
    Fit,
    ModelRow,
    memory_budget,
    model_bytes,
    model_rows,
    sequences_that_fit,
    what_fits,
    what_if_configs,
)

GIB = 2**30


def rows_by_key(name: str, **what_if) -> dict[str, ModelRow]:
    args = {"groups": 8, "latent": 512, "rope_dim": 64, "dtype": "bfloat16", "batch": 1} | what_if
    return {row.key: row for row in model_rows(name, **args)}


def test_deepseek_v3_keeps_576_numbers_per_token_per_layer():
    row = rows_by_key("DeepSeek-V3")["published"]
    assert row.elements_per_token_layer == 576  # d_c 512 + d_h^R 64
    assert row.bytes_per_token_layer == 1152  # bfloat16
    assert row.bytes_per_token_model == 70_272  # x 61 layers
    assert row.tokens_held == 163_840
    assert row.model_bytes_measured == 11_513_364_480  # 576 x 2 bytes x 61 layers x 163,840 tokens (10.72 GiB)
    assert row.shapes == {"c_kv": (1, 1, 163_840, 512), "k_rope": (1, 1, 163_840, 64)}


def test_llama_3_70b_keeps_2_x_8_x_128_numbers_per_token_per_layer():
    row = rows_by_key("Llama 3 70B")["published"]
    assert row.elements_per_token_layer == 2 * 8 * 128
    assert row.bytes_per_token_model == 2 * 8 * 128 * 2 * 80  # 327,680 bytes: 320 KiB a token
    assert row.model_bytes_measured == 2_684_354_560  # x 8,192 tokens: 2.5 GiB
    assert row.shapes == {"k": (1, 8, 8192, 128), "v": (1, 8, 8192, 128)}


def test_deepseek_v2_mla_caches_as_much_as_gqa_with_2_25_groups_far_below_mha():
    rows = rows_by_key("DeepSeek-V2")
    assert rows["published"].gqa_equivalent_groups == 2.25  # the paper's claim: 576 = 2 x 2.25 x 128
    assert rows["mha"].elements_per_token_layer == 2 * 128 * 128
    assert rows["published"].ratio_to_mha == pytest.approx(576 / 32_768)


def test_the_course_notes_llama_7b_example_is_8192_vs_640_numbers():
    rows = rows_by_key("Llama 2 7B", latent=512, rope_dim=128)
    assert rows["mha"].elements_per_token_layer == 32 * 128 * 2 == 8192
    assert rows["mla"].elements_per_token_layer == 512 + 128 == 640
    assert rows["mha"].elements_per_token_layer / rows["mla"].elements_per_token_layer == 12.8


def test_mistral_sliding_window_bounds_each_layer_at_4095_tokens():
    """A window of W: the next query computes its own key, so W - 1 are held (as HF's DynamicSlidingWindowLayer)."""
    row = rows_by_key("Mistral 7B")["published"]
    assert row.tokens_held == 4095
    assert row.model_bytes_measured == 32 * 4095 * (2 * 8 * 128) * 2


def test_mistral_whole_model_cache_agrees_with_the_axes_page_measurement():
    """/axes measures published models with attn_core.describe_model: both pages give one number."""
    preset = PRESETS["Mistral 7B"]
    row = rows_by_key("Mistral 7B")["published"]
    described = describe_model(published_config("Mistral 7B"))
    for tokens in (1, 4095, 4096, preset.context_len):
        assert model_bytes(preset, preset.attention, batch=1, tokens=tokens, dtype="bfloat16") == (
            described.cache_bytes(tokens=tokens, dtype="bfloat16")
        )
    assert row.model_bytes_measured == described.cache_bytes(tokens=preset.context_len, dtype="bfloat16")


@pytest.mark.parametrize("name", PRESETS)
def test_every_row_measured_on_the_meta_device_equals_the_closed_form(name):
    preset = PRESETS[name]
    groups = 8 if preset.attention.n_heads % 8 == 0 else 1
    rows = model_rows(name, groups=groups, latent=256, rope_dim=32, dtype="float16", batch=3, repeated_heads=True)
    configs = what_if_configs(preset, groups=groups, latent=256, rope_dim=32)
    for row in rows:
        assert row.layer_bytes_measured == row.layer_bytes_formula, row.key
        assert row.model_bytes_batch_measured == row.model_bytes_batch_formula, row.key
        assert row.elements_per_token_layer == row.elements_per_token_layer_formula, row.key
        if not row.repeated_heads:
            held = min(preset.context_len, preset.sliding_window - 1 if preset.sliding_window else preset.context_len)
            assert row.model_bytes_batch_measured == preset.n_layers * kv_cache_bytes(
                configs[row.key], 3, held, "float16"
            )
    assert any(row.repeated_heads for row in rows) == (preset.attention.variant != "mla")


def test_what_ifs_keep_width_heads_and_head_dim():
    preset = PRESETS["Gemma 2 9B"]  # head_dim 256 is wider than d_model / heads: it must be kept
    configs = what_if_configs(preset, groups=4, latent=512, rope_dim=64)
    assert configs["mha"].cache_elements_per_token == 2 * 16 * 256
    assert configs["gqa"].cache_elements_per_token == 2 * 4 * 256
    assert configs["mqa"].cache_elements_per_token == 2 * 256
    assert configs["mla"].cache_elements_per_token == 512 + 64
    with pytest.raises(ValueError, match="do not divide"):
        what_if_configs(preset, groups=3, latent=512, rope_dim=64)


def test_what_fits_in_an_80_gib_gpu_beside_llama_3_8b():
    preset = PRESETS["Llama 3 8B"]
    budget = memory_budget(preset, gpu_gib=80, gpus=1, dtype="bfloat16")
    assert budget.weights == int(8.03e9 * 2)
    assert budget.left == 80 * GIB - int(8.03e9 * 2)
    row = rows_by_key("Llama 3 8B")["published"]
    per_token = 2 * 8 * 128 * 2 * 32  # 131,072 bytes: 128 KiB a token for the whole model
    assert row.bytes_per_token_model == per_token
    assert what_fits(preset, row, budget_left=budget.left, batch=64).tokens_per_sequence == 8192  # the model's limit
    fit = what_fits(preset, row, budget_left=budget.left, batch=128)
    assert fit.tokens_per_sequence == budget.left // (per_token * 128) == 4162
    assert fit.users_at_context == budget.left // (per_token * 8192) == 65
    assert sequences_that_fit(preset, per_token, budget_left=budget.left, tokens=1000) == budget.left // (
        per_token * 1000
    )
    assert sequences_that_fit(preset, per_token, budget_left=-5, tokens=1000) == 0


def test_a_rolling_window_lets_mistral_sequences_grow_to_the_full_context():
    preset = PRESETS["Mistral 7B"]
    row = rows_by_key("Mistral 7B")["published"]
    per_token = 2 * 8 * 128 * 2 * 32  # bfloat16, 32 layers
    window_cache = per_token * 4095  # what one sequence ever holds: 512 MiB less one token
    fit = what_fits(preset, row, budget_left=10 * window_cache, batch=10)
    assert fit == Fit(tokens_per_sequence=32_768, users_at_context=10, window_bound=True)
    short = what_fits(preset, row, budget_left=10 * window_cache - 1, batch=10)
    assert not short.window_bound
    assert short.tokens_per_sequence == 4094
