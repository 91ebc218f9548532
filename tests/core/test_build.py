"""build_attention: the right module, weights that depend on the seed alone, published parameter names."""

from __future__ import annotations

import pytest
import torch

from attn_core import (
    AttentionConfig,
    GroupedQueryAttention,
    MultiHeadLatentAttention,
    build_attention,
    seeded_generator,
)

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
    assert sorted(key for key in layer.state_dict() if key.endswith("bias")) == [
        "k_proj.bias",
        "q_proj.bias",
        "v_proj.bias",
    ]


def test_mla_with_full_rank_query_carries_deepseek_v3s_names():
    layer = build_attention(EXAMPLES["mla"])
    assert sorted(layer.state_dict()) == sorted(
        ["q_proj.weight", "kv_a_proj_with_mqa.weight", "kv_a_layernorm.weight", "kv_b_proj.weight", "o_proj.weight"]
    )


def test_mla_with_low_rank_query_carries_deepseek_v3s_names():
    layer = build_attention(AttentionConfig("mla", d_model=32, n_heads=4, q_lora_rank=8))
    assert sorted(layer.state_dict()) == sorted(
        [
            "q_a_proj.weight",
            "q_a_layernorm.weight",
            "q_b_proj.weight",
            "kv_a_proj_with_mqa.weight",
            "kv_a_layernorm.weight",
            "kv_b_proj.weight",
            "o_proj.weight",
        ]
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
    assert out.dtype == torch.bfloat16
    assert cache.nbytes == 3 * EXAMPLES[name].cache_elements_per_token * 2


# --- layers of some heads ---------------------------------------------------------------------------------------------
HEAD_RANGES = {  # per example: ranges of whole KV groups or within one group
    "mha": [range(0, 1), range(1, 3), range(0, 4)],
    "mqa": [range(0, 1), range(1, 3), range(2, 4)],
    "gqa": [range(0, 3), range(3, 6), range(1, 3), range(4, 5)],  # groups of 3 heads
    "mla": [range(0, 1), range(1, 4)],
    "mla_q_lora": [range(2, 3), range(0, 2)],
}
SUBSET_CASES = [(name, heads) for name, ranges in HEAD_RANGES.items() for heads in ranges]


@pytest.mark.parametrize(("name", "heads"), SUBSET_CASES)
def test_a_layer_of_some_heads_attends_as_those_heads_of_the_full_layer(name, heads):
    cfg = EXAMPLES[name]
    x = randn(2, 6, cfg.d_model, seed=4)
    with torch.no_grad():
        _, full = build_attention(cfg, seed=9)(x, return_weights=True)
        part_layer = build_attention(cfg, seed=9, heads=heads)
        _, part = part_layer(x, return_weights=True)
    assert part_layer.cfg == cfg.head_subset(heads)
    # same weights and inputs; only the matrix product's blocking differs with its shape (last bits)
    torch.testing.assert_close(part, full[:, heads.start : heads.stop], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_the_outputs_of_layers_of_some_heads_add_up_to_the_full_output(name):
    cfg = EXAMPLES[name]
    pages = [range(0, 3), range(3, 6)] if name == "gqa" else [range(0, 1), range(1, 3), range(3, 4)]
    x = randn(1, 5, cfg.d_model, seed=5)
    with torch.no_grad():
        full, _ = build_attention(cfg, seed=2)(x)
        parts = [build_attention(cfg, seed=2, heads=heads) for heads in pages]
        total = sum(part(x)[0] for part in parts)
    o_bias = parts[0].o_proj.bias
    if o_bias is not None:  # each layer of some heads adds o_proj's bias once
        total = total - (len(pages) - 1) * o_bias
    torch.testing.assert_close(total, full, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_each_head_block_is_its_own_seeded_stream(name):
    """A head's block of q_proj (or q_b_proj) is the first numbers of the stream (seed, parameter, head), scaled to
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)): what any other implementation of this init can reproduce."""
    cfg = EXAMPLES[name]
    layer = build_attention(cfg, seed=11)
    proj = "q_b_proj" if cfg.q_lora_rank else "q_proj"
    weight = layer.get_submodule(proj).weight
    width = cfg.qk_head_dim
    bound = weight.shape[1] ** -0.5
    reference = torch.empty(width, weight.shape[1]).uniform_(
        -bound, bound, generator=seeded_generator(f"11/{proj}.weight/2")
    )
    assert torch.equal(weight[2 * width : 3 * width], reference)


def test_a_head_keeps_its_weights_whatever_the_number_of_kv_groups():
    """GQA's KV head 0 is MHA's head 0: the heads a change of groups keeps do not change."""
    mha = build_attention(AttentionConfig("mha", d_model=32, n_heads=4), seed=1)
    gqa = build_attention(AttentionConfig("gqa", d_model=32, n_heads=4, n_kv_heads=2), seed=1)
    assert torch.equal(mha.q_proj.weight, gqa.q_proj.weight)
    assert torch.equal(mha.o_proj.weight, gqa.o_proj.weight)
    assert torch.equal(mha.k_proj.weight[:16], gqa.k_proj.weight)


@pytest.mark.parametrize("heads", [range(1, 4), range(2, 5), range(0, 0), range(5, 7), range(0, 6, 3)])
def test_a_range_that_splits_a_kv_group_or_leaves_the_layer_is_refused(heads):
    with pytest.raises(ValueError, match="heads"):
        build_attention(EXAMPLES["gqa"], seed=0, heads=heads)
