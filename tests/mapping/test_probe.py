"""explorer.probes.mapping: the mapping read off real layers, the shapes along the path, MLA's two ways."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_core import AttentionConfig, build_attention, kv_cache_bytes
from explorer.probes.mapping import (
    READ_THRESHOLD,
    compare_mla_ways,
    morph_configs,
    narrowed,
    path_shapes,
    read_mapping,
    read_morph,
    store_names,
)

from .references import random_settings, reads_by_gradient

GROUPED = [("mha", 8, 8), ("gqa", 8, 4), ("gqa", 8, 2), ("mqa", 8, 1), ("gqa", 6, 3), ("mha", 1, 1), ("mqa", 1, 1)]


def grouped_cfg(variant: str, heads: int, groups: int, d_model: int = 96) -> AttentionConfig:
    return AttentionConfig(variant, d_model=d_model, n_heads=heads, n_kv_heads=groups)


@pytest.mark.parametrize(("variant", "heads", "groups"), GROUPED)
def test_each_head_reads_the_kv_head_of_its_group(variant, heads, groups):
    found = read_mapping(grouped_cfg(variant, heads, groups), seed=3)
    group_size = heads // groups
    expected = np.array([[h // group_size == g for h in range(heads)] for g in range(groups)])
    assert found.stores == [f"kv{g}" for g in range(groups)]
    np.testing.assert_array_equal(found.reads, expected)


def test_every_mla_head_reads_the_latent_and_the_shared_rotary_key():
    found = read_mapping(AttentionConfig("mla", d_model=64, n_heads=4, kv_lora_rank=16, qk_rope_head_dim=4), seed=0)
    assert found.stores == ["c_kv", "k_rope"]
    assert found.reads.shape == (2, 4)
    assert found.reads.all()


@pytest.mark.parametrize("case", range(6))
def test_mapping_equals_the_one_autograd_finds_for_random_settings(case):
    settings = random_settings(100 + case)
    for variant in ("gqa", "mla"):
        cfg = settings.config(variant)
        found = read_mapping(cfg, seed=settings.seed)
        np.testing.assert_array_equal(found.reads, reads_by_gradient(cfg, settings.seed), err_msg=str(cfg))


@pytest.mark.parametrize(("variant", "heads", "groups"), GROUPED[:4])
def test_readers_move_far_more_than_round_off_and_others_not_at_all(variant, heads, groups):
    found = read_mapping(grouped_cfg(variant, heads, groups), seed=1)
    assert found.change[found.reads].min() > 100 * READ_THRESHOLD
    if (~found.reads).any():
        assert found.change[~found.reads].max() < READ_THRESHOLD / 100


@pytest.mark.parametrize(
    "cfg",
    [
        AttentionConfig("gqa", d_model=8192, n_heads=128, n_kv_heads=8),
        AttentionConfig("mla", d_model=7168, n_heads=128, kv_lora_rank=512, qk_rope_head_dim=64),
    ],
    ids=["gqa", "mla"],
)
def test_a_narrowed_layer_keeps_every_per_head_width_and_the_cache(cfg):
    narrow = narrowed(cfg, 64)
    assert narrow.d_model == 64
    for name in ("n_heads", "n_kv_heads", "head_dim", "qk_head_dim", "value_head_dim", "cache_elements_per_token"):
        assert getattr(narrow, name) == getattr(cfg, name), name
    assert kv_cache_bytes(narrow, 2, 10) == kv_cache_bytes(cfg, 2, 10)
    assert store_names(narrow) == store_names(cfg)


def test_the_mapping_of_a_narrowed_layer_equals_the_full_layers():
    for cfg in (
        grouped_cfg("gqa", 16, 4, d_model=1024),
        AttentionConfig("mla", d_model=1024, n_heads=8, kv_lora_rank=32),
    ):
        full = read_mapping(cfg, seed=7).reads
        np.testing.assert_array_equal(read_mapping(narrowed(cfg, 64), seed=7).reads, full)


def test_morph_steps_run_mha_then_every_group_count_down_then_mqa_then_mla():
    steps = morph_configs(512, 8, 128, 32)
    assert [key for key, _ in steps] == ["mha", "gqa:4", "gqa:2", "mqa", "mla"]
    assert [cfg.n_kv_heads for _, cfg in steps[:4]] == [8, 4, 2, 1]
    assert [key for key, _ in morph_configs(96, 1, 8, 2)] == ["mha", "mqa", "mla"]
    keys = [key for key, _ in morph_configs(768, 96, 128, 4)]
    assert keys[1:-2] == [f"gqa:{g}" for g in (48, 32, 24, 16, 12, 8, 6, 4, 3, 2)]


def test_read_morph_reads_every_step_off_its_own_layer():
    frames = read_morph(64, 4, 16, 4, seed=2)
    assert [f.key for f in frames] == ["mha", "gqa:2", "mqa", "mla"]
    assert [f.reads.shape for f in frames] == [(4, 4), (2, 4), (1, 4), (2, 4)]


# --- shapes along the path ------------------------------------------------------------------------------------------
def test_grouped_path_shapes_match_the_formulas():
    b, s, d, h, g = 2, 10, 64, 8, 2
    rows = {row.step: row for row in path_shapes(grouped_cfg("gqa", h, g, d_model=d), batch=b, seq_len=s)}
    hd = d // h
    assert rows["x"].prefill == (b, s, d)
    assert rows["x"].decode == (b, 1, d)
    assert rows["q = x · W_q"].prefill == (b, h, s, hd)
    assert rows["k = x · W_k"].prefill == (b, g, s, hd)
    assert rows["cache k, v"].prefill == (b, g, s, hd)
    assert rows["cache k, v"].decode == (b, g, s + 1, hd)
    assert rows["k, v as each query head sees them"].decode == (b, h, s + 1, hd)
    assert rows["scores = softmax(q kᵀ / √d)"].prefill == (b, h, s, s)
    assert rows["scores = softmax(q kᵀ / √d)"].decode == (b, h, 1, s + 1)
    assert rows["heads' outputs, side by side"].prefill == (b, s, h * hd)
    assert rows["out = · W_o"].decode == (b, 1, d)


def test_latent_path_shapes_match_the_formulas_both_ways():
    cfg = AttentionConfig("mla", d_model=64, n_heads=4, kv_lora_rank=24, qk_rope_head_dim=4)
    b, s, h = 3, 7, 4
    rows = path_shapes(cfg, batch=b, seq_len=s)
    by_way = {(row.step, row.way): row for row in rows}
    nope, rope, dc, dv = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.kv_lora_rank, cfg.v_head_dim
    assert by_way[("cache c_kv, k_rope", "both")].decode == ((b, 1, s + 1, dc), (b, 1, s + 1, rope))
    up = by_way[("k = [c_kv · W_uk ; k_rope], v = c_kv · W_uv", "naive")]
    assert up.decode == ((b, h, s + 1, nope + rope), (b, h, s + 1, dv))
    assert by_way[("W_uk, W_uv (slices of kv_b_proj)", "absorbed")].prefill == ((h, nope, dc), (h, dv, dc))
    assert by_way[("q_nope · W_uk, then [ · ; q_rope]", "absorbed")].decode == (b, h, 1, dc + rope)
    assert by_way[("keys = cached [c_kv ; k_rope]", "absorbed")].decode == (b, 1, s + 1, dc + rope)
    for way in ("naive", "absorbed"):
        assert by_way[("scores = softmax(q kᵀ / √d)", way)].decode == (b, h, 1, s + 1)
        assert by_way[("heads' outputs, side by side", way)].prefill == (b, s, h * dv)


def test_path_shapes_at_the_largest_settings_cost_no_memory():
    rows = path_shapes(
        AttentionConfig("mla", d_model=8192, n_heads=128, kv_lora_rank=4096, qk_rope_head_dim=64),
        batch=128,
        seq_len=8192,
    )
    assert rows[-1].prefill == (128, 8192, 8192)


# --- MLA's two ways -------------------------------------------------------------------------------------------------
def test_the_two_mla_ways_agree_to_float32_round_off():
    cfg = AttentionConfig("mla", d_model=64, n_heads=4, kv_lora_rank=32, qk_rope_head_dim=4)
    ways = compare_mla_ways(cfg, seed=0, context_len=20, repeats=2)
    assert ways.context_len == 20
    assert ways.repeats == 2
    assert ways.max_abs_diff <= 1e-5 * max(1.0, ways.output_scale)
    assert ways.naive_ms > 0
    assert ways.absorbed_ms > 0


def test_the_two_ways_difference_is_that_of_the_layers_own_outputs():
    """The reported difference equals the one between the layer's naive and absorbed outputs on a prefilled cache."""
    cfg = AttentionConfig("mla", d_model=32, n_heads=2, kv_lora_rank=8, qk_rope_head_dim=2)
    ways = compare_mla_ways(cfg, seed=5, context_len=6, repeats=1)
    layer = build_attention(cfg, seed=5)
    generator = torch.Generator().manual_seed(5)
    context, token = torch.randn(1, 6, 32, generator=generator), torch.randn(1, 1, 32, generator=generator)
    outs = []
    with torch.inference_mode():
        for absorb in (False, True):
            cache = layer.new_cache(1)
            layer(context, cache=cache)  # a full prefill this time, not compress + append
            outs.append(layer(token, cache=cache, absorb=absorb)[0])
    assert ways.max_abs_diff == pytest.approx((outs[1] - outs[0]).abs().max().item(), abs=1e-6)
    assert ways.output_scale == pytest.approx(outs[0].abs().max().item(), rel=1e-5)


def test_only_mla_has_two_ways():
    with pytest.raises(ValueError, match="MLA"):
        compare_mla_ways(grouped_cfg("gqa", 8, 2), seed=0, context_len=4)
