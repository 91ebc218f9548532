"""build_attention: the right module, weights that depend on the seed alone, published parameter names."""
from __future__ import annotations

import pytest
import torch

from attn_core import AttentionConfig, GroupedQueryAttention, MultiHeadLatentAttention, build_attention

from .examples import ALL, EXAMPLES, GROUPED, LATENT, randn


@pytest.mark.parametrize("name", GROUPED)
def test_grouped_variants_build_the_grouped_module(name):
    assert type(build_attention(EXAMPLES[name])) is GroupedQueryAttention


@pytest.mark.parametrize("name", LATENT)
def test_mla_builds_the_latent_module(name):
    assert type(build_attention(EXAMPLES[name])) is MultiHeadLatentAttention


@pytest.mark.parametrize("name", ALL)
def test_same_seed_gives_identical_weights(name):
    first = build_attention(EXAMPLES[name], seed=7).state_dict()
    torch.manual_seed(123)  # the global generator must not matter
    second = build_attention(EXAMPLES[name], seed=7).state_dict()
    assert all(torch.equal(first[key], second[key]) for key in first)


@pytest.mark.parametrize("name", ALL)
def test_different_seeds_give_different_weights(name):
    first = build_attention(EXAMPLES[name], seed=0).state_dict()
    second = build_attention(EXAMPLES[name], seed=1).state_dict()
    assert all(not torch.equal(first[key], second[key]) for key in first if key.endswith("proj.weight"))


@pytest.mark.parametrize("name", ALL)
def test_same_seed_gives_identical_outputs(name):
    x = randn(1, 5, EXAMPLES[name].d_model)
    with torch.no_grad():
        first = build_attention(EXAMPLES[name], seed=3)(x)[0]
        second = build_attention(EXAMPLES[name], seed=3)(x)[0]
    assert torch.equal(first, second)


def test_grouped_parameters_carry_llamas_names():
    layer = build_attention(AttentionConfig("gqa", d_model=16, n_heads=4, n_kv_heads=2, bias=True))
    assert sorted(layer.state_dict()) == sorted(
        f"{proj}.{kind}" for proj in ("q_proj", "k_proj", "v_proj", "o_proj") for kind in ("weight", "bias")
    )


def test_qwen2_style_bias_puts_biases_on_q_k_v_only():
    layer = build_attention(AttentionConfig("gqa", d_model=16, n_heads=4, n_kv_heads=2, bias=True, o_bias=False))
    assert sorted(key for key in layer.state_dict() if key.endswith("bias")) == ["k_proj.bias", "q_proj.bias", "v_proj.bias"]


def test_mla_with_full_rank_query_carries_deepseek_v3s_names():
    layer = build_attention(EXAMPLES["mla"])
    assert sorted(layer.state_dict()) == sorted(
        ["q_proj.weight", "kv_a_proj_with_mqa.weight", "kv_a_layernorm.weight", "kv_b_proj.weight", "o_proj.weight"]
    )


def test_mla_with_low_rank_query_carries_deepseek_v3s_names():
    layer = build_attention(AttentionConfig("mla", d_model=32, n_heads=4, q_lora_rank=8))
    assert sorted(layer.state_dict()) == sorted(
        ["q_a_proj.weight", "q_a_layernorm.weight", "q_b_proj.weight", "kv_a_proj_with_mqa.weight",
         "kv_a_layernorm.weight", "kv_b_proj.weight", "o_proj.weight"]
    )


def test_grouped_module_refuses_an_mla_config():
    with pytest.raises(ValueError, match="GroupedQueryAttention takes mha, mqa or gqa"):
        GroupedQueryAttention(EXAMPLES["mla"])


def test_latent_module_refuses_a_grouped_config():
    with pytest.raises(ValueError, match="MultiHeadLatentAttention takes variant='mla'"):
        MultiHeadLatentAttention(EXAMPLES["gqa"])


@pytest.mark.parametrize("name", ALL)
def test_dtype_argument_sets_the_weights_and_cache_dtype(name):
    layer = build_attention(EXAMPLES[name], seed=0, dtype=torch.bfloat16)
    cache = layer.new_cache(1)
    with torch.no_grad():
        out, _ = layer(randn(1, 3, EXAMPLES[name].d_model, dtype=torch.bfloat16), cache=cache)
    assert {p.dtype for p in layer.parameters()} == {torch.bfloat16}
    assert out.dtype == torch.bfloat16 and cache.nbytes == 3 * EXAMPLES[name].cache_elements_per_token * 2
