"""Outputs against independent references: float64 textbook attention and torch SDPA over repeated KV heads."""

from __future__ import annotations

import pytest
import torch

from attn_core import AttentionConfig, build_attention

from .examples import ALL, EXAMPLES, GROUPED, LATENT, randn
from .references import end_aligned_causal, sdpa_grouped_repeated_kv, textbook, textbook_grouped

TOL = 1e-5  # float32 against float64 on these small layers


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.double() - b.double()).abs().max().item()


def layer_for(name: str, seed: int = 0):
    return build_attention(EXAMPLES[name], seed=seed).eval()


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


# --- prefill ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_prefill_matches_float64_textbook(name):
    layer, x = layer_for(name), randn(2, 9, EXAMPLES[name].d_model)
    assert max_diff(layer(x)[0], textbook(layer, x)[0]) <= TOL


@pytest.mark.parametrize("name", GROUPED)
def test_grouped_prefill_matches_sdpa_over_repeated_kv_heads(name):
    layer, x = layer_for(name), randn(2, 9, EXAMPLES[name].d_model)
    assert max_diff(layer(x)[0], sdpa_grouped_repeated_kv(layer, x)) <= TOL


@pytest.mark.parametrize("name", GROUPED)
def test_grouped_queries_and_keys_are_what_the_forward_pass_caches_and_attends_with(name):
    layer, x = layer_for(name), randn(1, 7, EXAMPLES[name].d_model)
    cache = layer.new_cache()
    _, weights = layer(x, cache=cache, return_weights=True)
    k, v = layer.keys_values(x, 0)
    assert torch.equal(cache.k, k)
    assert torch.equal(cache.v, v)
    q, cfg = layer.queries(x, 0).joined(), layer.cfg
    scores = q @ k.repeat_interleave(cfg.group_size, dim=1).mT * cfg.head_dim**-0.5
    causal = end_aligned_causal(7, 7)
    assert max_diff(torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1), weights) <= TOL


@pytest.mark.parametrize("interleave", [False, True])
def test_grouped_prefill_without_rope_matches_textbook(interleave):
    layer = build_attention(
        AttentionConfig("gqa", d_model=24, n_heads=4, n_kv_heads=2, rope=False, rope_interleave=interleave), seed=1
    )
    x = randn(1, 6, 24)
    assert max_diff(layer(x)[0], textbook(layer, x)[0]) <= TOL


def test_grouped_interleaved_rope_matches_textbook_pairwise_rotation():
    layer = build_attention(AttentionConfig("gqa", d_model=32, n_heads=4, n_kv_heads=2, rope_interleave=True), seed=2)
    x = randn(1, 7, 32)
    assert max_diff(layer(x)[0], textbook(layer, x)[0]) <= TOL


def test_non_causal_self_attention_matches_textbook():
    layer, x = layer_for("gqa"), randn(2, 5, 48)
    assert max_diff(layer(x, causal=False)[0], textbook(layer, x, causal=False)[0]) <= TOL


def test_rope_makes_scores_depend_on_relative_position_only():
    # Two tokens at positions 0, 1 and the same two at 5, 6 (after a cache of unrelated tokens): the second one
    # splits its attention between the pair in the same proportion, since only their distance differs from zero.
    layer = build_attention(AttentionConfig("mha", d_model=16, n_heads=2), seed=3)
    pair = randn(1, 2, 16, seed=1)
    _, near = layer(pair, return_weights=True)
    cache = layer.new_cache(1)
    layer(randn(1, 5, 16, seed=2), cache=cache)
    _, shifted = layer(pair, cache=cache, return_weights=True)
    shifted_pair = shifted[..., -1, -2:] / shifted[..., -1, -2:].sum(-1, keepdim=True)
    assert max_diff(near[..., -1, :], shifted_pair) <= 1e-6


def test_rope_changes_scores_with_relative_position():
    layer = build_attention(AttentionConfig("mha", d_model=16, n_heads=2), seed=3)
    x = randn(1, 1, 16, seed=1).expand(1, 3, 16)  # one token three times: only position tells the copies apart
    _, weights = layer(x, return_weights=True)
    assert max_diff(weights[..., -1, 0], weights[..., -1, 1]) > 1e-3


# --- masks -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_chunk_after_cache_sees_all_cached_tokens_and_new_ones_up_to_itself(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    cache = layer.new_cache(1)
    layer(randn(1, 4, cfg.d_model, seed=1), cache=cache)
    _, weights = layer(randn(1, 3, cfg.d_model, seed=2), cache=cache, return_weights=True)  # [1, H, 3, 7]
    assert torch.equal(weights[0, 0] > 0, end_aligned_causal(3, 7))


@pytest.mark.parametrize("name", ALL)
def test_chunked_decode_output_matches_textbook_end_aligned_mask(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    x = randn(2, 7, cfg.d_model)
    cache = layer.new_cache(2)
    layer(x[:, :4], cache=cache)
    out, _ = layer(x[:, 4:], cache=cache)
    assert max_diff(out, textbook(layer, x)[0][:, 4:]) <= TOL


@pytest.mark.parametrize("name", ALL)
def test_right_padding_leaves_real_tokens_as_if_alone(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    long, short = randn(1, 6, cfg.d_model, seed=1), randn(1, 4, cfg.d_model, seed=2)
    batch = torch.cat((long, torch.cat((short, randn(1, 2, cfg.d_model, seed=3)), dim=1)))
    real = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    out, _ = layer(batch, key_padding_mask=real)
    assert max_diff(out[1, :4], layer(short)[0][0]) <= TOL
    assert max_diff(out[0], layer(long)[0][0]) <= TOL


@pytest.mark.parametrize("name", ALL)
def test_padded_keys_get_zero_weight(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    real = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    _, weights = layer(randn(2, 6, cfg.d_model), key_padding_mask=real, return_weights=True)
    assert torch.all(weights[1, :, :, 4:] == 0)


@pytest.mark.parametrize("name", ALL)
def test_key_padding_mask_with_a_cache_covers_cached_and_new_keys(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    x = randn(2, 6, cfg.d_model)
    real = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    cache = layer.new_cache(2)
    layer(x[:, :4], cache=cache, key_padding_mask=real[:, :4])
    out, _ = layer(x[:, 4:], cache=cache, key_padding_mask=real)
    assert max_diff(out, textbook(layer, x, key_padding_mask=real)[0][:, 4:]) <= TOL


@pytest.mark.parametrize("name", ["gqa", "mla"])
def test_key_padding_mask_of_the_wrong_length_is_refused(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    with pytest.raises(ValueError, match="key_padding_mask covers 3 positions but there are 5 keys"):
        layer(randn(1, 5, cfg.d_model), key_padding_mask=torch.ones(1, 3, dtype=torch.bool))


# --- cross-attention ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GROUPED)
def test_cross_attention_matches_textbook_without_mask_or_rope(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    x, memory = randn(2, 3, cfg.d_model, seed=1), randn(2, 8, cfg.d_model, seed=2)
    assert max_diff(layer(x, kv_input=memory)[0], textbook_grouped(layer, x, kv_input=memory)[0]) <= TOL


@pytest.mark.parametrize("name", GROUPED)
def test_cross_attention_lets_every_query_see_every_key(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    _, weights = layer(randn(1, 4, cfg.d_model, seed=1), kv_input=randn(1, 4, cfg.d_model, seed=2), return_weights=True)
    assert torch.all(weights > 0)


def test_cross_attention_honours_key_padding_of_the_memory():
    layer = layer_for("gqa")
    x, memory = randn(2, 3, 48, seed=1), randn(2, 5, 48, seed=2)
    real = torch.tensor([[True] * 5, [True] * 2 + [False] * 3])
    out, _ = layer(x, kv_input=memory, key_padding_mask=real)
    assert max_diff(out, textbook_grouped(layer, x, kv_input=memory, key_padding_mask=real)[0]) <= TOL


def test_cross_attention_with_a_cache_is_refused():
    layer = layer_for("gqa")
    with pytest.raises(ValueError, match="Cross-attention \\(kv_input\\) takes no cache"):
        layer(randn(1, 2, 48), kv_input=randn(1, 4, 48), cache=layer.new_cache(1))


# --- attention weights ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_asking_for_weights_gives_the_fast_paths_output(name):
    layer, x = layer_for(name), randn(2, 8, EXAMPLES[name].d_model)
    assert max_diff(layer(x, return_weights=True)[0], layer(x)[0]) <= 1e-6


@pytest.mark.parametrize("name", ALL)
def test_asking_for_weights_during_cached_decode_gives_the_fast_paths_output(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    x = randn(1, 6, cfg.d_model)
    fast, explicit = layer.new_cache(1), layer.new_cache(1)
    for cache in (fast, explicit):
        layer(x[:, :5], cache=cache)
    assert max_diff(layer(x[:, 5:], cache=explicit, return_weights=True)[0], layer(x[:, 5:], cache=fast)[0]) <= 1e-6


@pytest.mark.parametrize("name", ALL)
def test_weights_are_none_unless_asked_for(name):
    assert layer_for(name)(randn(1, 3, EXAMPLES[name].d_model))[1] is None


@pytest.mark.parametrize("name", ALL)
def test_weights_have_one_row_per_head_and_query_over_all_keys(name):
    _, weights = layer_for(name)(randn(2, 5, EXAMPLES[name].d_model), return_weights=True)
    assert weights.shape == (2, EXAMPLES[name].n_heads, 5, 5)


@pytest.mark.parametrize("name", ALL)
def test_weight_rows_sum_to_one(name):
    _, weights = layer_for(name)(randn(2, 7, EXAMPLES[name].d_model), return_weights=True)
    assert max_diff(weights.sum(-1), torch.ones(weights.shape[:-1])) <= 1e-6


@pytest.mark.parametrize("name", ALL)
def test_weights_above_the_diagonal_are_zero(name):
    _, weights = layer_for(name)(randn(2, 7, EXAMPLES[name].d_model), return_weights=True)
    above_diagonal = torch.ones(7, 7, dtype=torch.bool).triu(diagonal=1)
    assert torch.all(weights[..., above_diagonal] == 0)


@pytest.mark.parametrize("name", ALL)
def test_weights_match_textbook_softmax(name):
    layer, x = layer_for(name), randn(2, 7, EXAMPLES[name].d_model)
    assert max_diff(layer(x, return_weights=True)[1], textbook(layer, x)[1]) <= TOL


# --- MLA: absorbed and naive are the same function ---------------------------------------------------------------------


@pytest.mark.parametrize("name", LATENT)
def test_mla_absorbed_prefill_equals_naive_prefill(name):
    layer, x = layer_for(name), randn(2, 9, EXAMPLES[name].d_model)
    assert max_diff(layer(x, absorb=True)[0], layer(x, absorb=False)[0]) <= 1e-5


@pytest.mark.parametrize("name", LATENT)
def test_mla_absorbed_decode_equals_naive_decode(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    x = randn(2, 9, cfg.d_model)
    absorbed, naive = layer.new_cache(2), layer.new_cache(2)
    for cache in (absorbed, naive):
        layer(x[:, :6], cache=cache)
    for t in range(6, 9):
        step = x[:, t : t + 1]
        assert max_diff(layer(step, cache=absorbed, absorb=True)[0], layer(step, cache=naive, absorb=False)[0]) <= 1e-5


@pytest.mark.parametrize("name", LATENT)
def test_mla_absorbed_weights_equal_naive_weights(name):
    layer, x = layer_for(name), randn(1, 6, EXAMPLES[name].d_model)
    assert (
        max_diff(layer(x, absorb=True, return_weights=True)[1], layer(x, absorb=False, return_weights=True)[1]) <= 1e-6
    )


@pytest.mark.parametrize("name", LATENT)
def test_mla_decode_with_a_cache_never_up_projects_the_cache(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    cache = layer.new_cache(1)
    layer(randn(1, 5, cfg.d_model), cache=cache)
    calls = []
    handle = layer.kv_b_proj.register_forward_hook(lambda module, args, out: calls.append(args[0].shape))
    try:
        layer(randn(1, 1, cfg.d_model, seed=1), cache=cache)
    finally:
        handle.remove()
    assert calls == []


@pytest.mark.parametrize("name", LATENT)
def test_mla_prefill_without_a_cache_up_projects_once(name):
    layer, cfg = layer_for(name), EXAMPLES[name]
    calls = []
    layer.kv_b_proj.register_forward_hook(lambda module, args, out: calls.append(tuple(args[0].shape)))
    layer(randn(1, 5, cfg.d_model))
    assert calls == [(1, 5, cfg.kv_lora_rank)]


@pytest.mark.parametrize("length", [1, 7, 600], ids=["one", "memoised", "past-the-memo"])
def test_causal_bias_is_zero_where_allowed_and_minus_infinity_elsewhere(length):
    from attn_core.attend import causal_bias

    allowed = end_aligned_causal(length, length)
    expected = torch.zeros(length, length).masked_fill(~allowed, float("-inf"))
    assert torch.equal(causal_bias(length, "cpu", torch.float32), expected)
