"""Closed forms (FLOPs, parameters, cache bytes) against independent counts of the real modules."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from torch.utils.flop_counter import FlopCounterMode

from attn_core import (
    PRESETS,
    AttentionConfig,
    as_dtype,
    build_attention,
    decode_flops_per_token,
    kv_cache_bytes,
    parameter_count,
    repeated_kv_cache_bytes,
)

from .examples import PROPERTY_SETTINGS, grouped_configs, latent_configs, randn


def counted_decode_flops(cfg: AttentionConfig, prompt: int, **forward_kwargs) -> tuple[int, int]:
    """FLOPs torch's FlopCounterMode counts in one real decode step after `prompt` tokens, and the keys attended.

    The step asks for weights: that path computes the same products as einsum/bmm, which the counter sees (it has no
    formula for the fused CPU attention kernel). Only matrix products are counted, as in the closed form.
    """
    layer = build_attention(cfg, seed=0)
    cache = layer.new_cache(1)
    with torch.no_grad():
        layer(randn(1, prompt, cfg.d_model), cache=cache)
        with FlopCounterMode(display=False) as counter:
            layer(randn(1, 1, cfg.d_model, seed=1), cache=cache, return_weights=True, **forward_kwargs)
    counts = counter.get_flop_counts()["Global"]
    matmuls = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear"}
    assert {op.__name__.split(".")[0] for op in counts} <= matmuls, counts  # nothing else is counted
    return sum(counts.values()), cache.seq_len


# context_len is the number of keys the new token attends to: the cached tokens and itself.

# einsum turns a contraction of length 1 into an elementwise product, which the counter does not see as a matmul:
# keep the contracted widths of the absorbed products (d_nope, d_c) above 1.
countable_latent_configs = latent_configs().filter(lambda cfg: cfg.qk_nope_head_dim > 1 and cfg.kv_lora_rank > 1)


@PROPERTY_SETTINGS
@given(cfg=grouped_configs())
def test_decode_flops_of_grouped_variants_equal_the_counted_matmuls(cfg):
    counted, keys = counted_decode_flops(cfg, prompt=9)
    assert keys == 10
    assert decode_flops_per_token(cfg, 9) == counted


@PROPERTY_SETTINGS
@given(cfg=countable_latent_configs)
def test_decode_flops_of_absorbed_mla_equal_the_counted_matmuls(cfg):
    counted, keys = counted_decode_flops(cfg, prompt=9)  # the default after a prefill: absorbed
    assert keys == 10
    assert decode_flops_per_token(cfg, 9, absorbed=True) == counted


@PROPERTY_SETTINGS
@given(cfg=countable_latent_configs)
def test_decode_flops_of_naive_mla_equal_the_counted_matmuls(cfg):
    counted, keys = counted_decode_flops(cfg, prompt=9, absorb=False)
    assert keys == 10
    assert decode_flops_per_token(cfg, 9, absorbed=False) == counted


def test_absorbed_mla_decode_is_cheaper_than_naive_at_deepseek_v3_scale():
    cfg = PRESETS["DeepSeek-V3"].attention
    assert decode_flops_per_token(cfg, 32768, absorbed=False) > 10 * decode_flops_per_token(cfg, 32768, absorbed=True)


# --- parameters ------------------------------------------------------------------------------------------------------


def test_deepseek_v3_attention_layer_has_the_hand_counted_parameters():
    expected = (
        7168 * 1536
        + 1536  # q_a_proj, q_a_layernorm
        + 1536 * 128 * (128 + 64)  # q_b_proj
        + 7168 * (512 + 64)
        + 512  # kv_a_proj_with_mqa, kv_a_layernorm
        + 512 * 128 * (128 + 128)  # kv_b_proj
        + 128 * 128 * 7168  # o_proj
    )
    assert expected == 187_107_328
    cfg = PRESETS["DeepSeek-V3"].attention
    assert parameter_count(cfg) == expected == sum(p.numel() for p in build_attention(cfg, device="meta").parameters())


def test_llama3_70b_attention_layer_has_the_hand_counted_parameters():
    expected = 2 * 8192 * 8192 + 2 * 8192 * 8 * 128  # q and o; k and v of 8 heads of 128
    assert expected == 150_994_944
    cfg = PRESETS["Llama 3 70B"].attention
    assert parameter_count(cfg) == expected == sum(p.numel() for p in build_attention(cfg, device="meta").parameters())


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_parameter_count_of_every_preset_equals_its_modules_parameters(name):
    cfg = PRESETS[name].attention
    assert parameter_count(cfg) == sum(p.numel() for p in build_attention(cfg, device="meta").parameters())


# --- cache bytes -----------------------------------------------------------------------------------------------------


def test_cache_bytes_scale_with_element_size():
    cfg = AttentionConfig("gqa", d_model=64, n_heads=8, n_kv_heads=2)
    assert (
        kv_cache_bytes(cfg, 2, 10, "float32")
        == 2 * kv_cache_bytes(cfg, 2, 10, "bfloat16")
        == 2 * 2 * 10 * 2 * 2 * 8 * 4 // 2
    )


def test_caching_repeated_kv_heads_costs_as_much_as_mha():
    gqa = AttentionConfig("gqa", d_model=64, n_heads=8, n_kv_heads=2)
    mha = AttentionConfig("mha", d_model=64, n_heads=8)
    assert repeated_kv_cache_bytes(gqa, 1, 100) == kv_cache_bytes(mha, 1, 100) == 4 * kv_cache_bytes(gqa, 1, 100)


def test_repeated_kv_cache_bytes_refuse_mla():
    with pytest.raises(ValueError, match="MLA has no repeated heads"):
        repeated_kv_cache_bytes(AttentionConfig("mla", d_model=64, n_heads=4), 1, 10)


def test_dtype_names_map_to_torch_dtypes():
    assert [as_dtype(name) for name in ("float32", "bfloat16", "float16")] == [
        torch.float32,
        torch.bfloat16,
        torch.float16,
    ]


def test_unknown_dtype_name_is_refused_listing_the_choices():
    with pytest.raises(ValueError, match="dtype='int8' is not offered: choose one of float32, bfloat16, float16"):
        as_dtype("int8")
