"""DeepSeekSparseAttention.index_scores: the indexer's scores the layer picks its top-k from, exposed for the heatmaps
and mapping pages. Each query's keys with nonzero weight in forward() must be torch.topk of these scores."""

from __future__ import annotations

import pytest
import torch

from attn_core.dsa import DeepSeekSparseAttention, DSAConfig

from .examples import randn

TOP_K = 5
CONFIG = DSAConfig(
    d_model=48,
    n_heads=4,
    q_lora_rank=16,
    kv_lora_rank=24,
    qk_nope_head_dim=8,
    qk_rope_head_dim=8,
    v_head_dim=8,
    index_n_heads=4,
    index_head_dim=16,
    index_topk=TOP_K,
)


@pytest.fixture
def layer() -> DeepSeekSparseAttention:
    layer = DeepSeekSparseAttention(CONFIG)
    layer.init_from_seed(3)
    return layer


@torch.no_grad()
def test_a_prefills_weights_are_nonzero_exactly_on_each_querys_top_k_of_the_index_scores(layer):
    x = randn(1, 14, 48, seed=1)
    scores = layer.index_scores(x)[0]  # [L, S]
    _, weights = layer(x, return_weights=True)
    read = (weights[0] != 0).any(dim=0)  # [L, S]
    for query in range(14):
        earlier = query + 1
        expected = set(range(earlier)) if earlier <= TOP_K else set(torch.topk(scores[query], TOP_K).indices.tolist())
        assert set(torch.nonzero(read[query]).flatten().tolist()) == expected, query


@torch.no_grad()
def test_index_scores_are_minus_infinity_on_later_keys_and_finite_on_earlier_ones(layer):
    scores = layer.index_scores(randn(1, 9, 48, seed=2))[0]
    later = torch.ones(9, 9, dtype=torch.bool).triu(diagonal=1)
    assert torch.isneginf(scores[later]).all()
    assert torch.isfinite(scores[~later]).all()


@torch.no_grad()
def test_a_decoding_step_reads_the_top_k_of_its_index_scores_over_the_cache(layer):
    cache = layer.new_cache(1)
    layer(randn(1, 11, 48, seed=4), cache=cache)
    step = randn(1, 1, 48, seed=5)
    held = cache.index_k.clone()
    scores = layer.index_scores(step, cache=cache)[0, 0]  # [12]
    assert torch.equal(cache.index_k, held)  # read, not changed
    _, weights = layer(step, cache=cache, return_weights=True)
    read = torch.nonzero((weights[0, :, 0] != 0).any(dim=0)).flatten().tolist()
    assert read == sorted(torch.topk(scores, TOP_K).indices.tolist())
