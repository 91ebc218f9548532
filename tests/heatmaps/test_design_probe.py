"""The kinds' attention maps (explorer/kinds/): the designs after MLA's weights, each held against an independent reference (a
mask formula, a softmax written here, torch.topk of the indexer's scores, the compressor's own entries)."""

from __future__ import annotations

import numpy as np
import torch

from attn_core import (
    AttentionOptions,
    CompressedAttention,
    DeepSeekSparseAttention,
    build_attention,
)
from explorer.kinds import compressed, dsa, grouped
from tests.small_designs import GQA, small_dsa, v4_layer

LENGTH = 14


def inputs(length: int = LENGTH, d_model: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.randn(1, length, d_model, generator=torch.Generator().manual_seed(seed)) * 2


def band_formula(length: int, window: int, sinks: int) -> np.ndarray:
    """[L, L]: query i reads key j when j <= i and (i - j < window or j < sinks)."""
    i, j = np.arange(length)[:, None], np.arange(length)[None]
    return (j <= i) & ((i - j < window) | (j < sinks))


def test_a_sliding_layers_read_keys_are_its_band_and_kept_first_tokens():
    layer = build_attention(GQA, seed=1, options=AttentionOptions(window=4, sink_tokens=2))
    result = grouped.band_map(layer, inputs())
    read = ~np.isnan(result.weights)
    for head in range(4):
        assert np.array_equal(read[head], band_formula(LENGTH, 4, 2))
    assert result.sink is None
    assert np.allclose(np.nansum(result.weights, axis=-1), 1.0, atol=1e-5)


def test_a_learned_sinks_weight_is_its_logits_share_of_the_softmax():
    layer = build_attention(GQA, seed=2, options=AttentionOptions(window=5, learned_sinks=True))
    x = inputs(seed=3)
    result = grouped.band_map(layer, x)
    with torch.no_grad():
        q, k, _ = layer.rotated_qkv(x, 0)
        k = k.repeat_interleave(2, dim=1)  # each KV head read by 2 query heads
        logits = (q @ k.transpose(-1, -2))[0] * layer.scale  # [H, L, L]
        allowed = torch.from_numpy(band_formula(LENGTH, 5, 0))
        logits = logits.masked_fill(~allowed, float("-inf"))
        sink = layer.sinks[:, None, None].expand(-1, LENGTH, 1)
        expected = torch.softmax(torch.cat((logits, sink), dim=-1), dim=-1)[..., -1]
    assert result.sink is not None
    assert np.allclose(result.sink, expected.numpy(), atol=1e-6)
    assert (result.sink > 0).all()


DSA = small_dsa(topk=4)


def test_dsa_reads_each_querys_top_k_of_the_indexer_scores_and_leaves_the_rest_blank():
    layer = DeepSeekSparseAttention(DSA)
    layer.init_from_seed(5)
    result = dsa.sparse_map(layer, inputs(seed=6))
    scores = torch.from_numpy(np.nan_to_num(result.index_scores, nan=-np.inf))
    for query in range(LENGTH):
        top = set(torch.topk(scores[query], 4).indices.tolist())
        expected = set(range(query + 1)) if query + 1 <= 4 else top
        assert set(np.flatnonzero(result.chosen[query]).tolist()) == expected, query
        for head in range(4):
            assert set(np.flatnonzero(~np.isnan(result.weights[head, query])).tolist()) == expected
    assert np.array_equal(np.isnan(result.index_scores), ~band_formula(LENGTH, LENGTH, 0))


def test_an_hca_layer_reads_its_window_then_every_finished_entry():
    result = compressed.compressed_map(v4_layer("hca", seed=7), inputs(seed=8))
    read = ~np.isnan(result.weights[0])
    assert np.array_equal(read[:, :LENGTH], band_formula(LENGTH, 5, 0))
    entries = read[:, LENGTH:]
    assert entries.shape[1] == LENGTH // 3
    i, e = np.arange(LENGTH)[:, None], np.arange(LENGTH // 3)[None]
    assert np.array_equal(entries, e < (i + 1) // 3)  # entry e is finished once token 3e + 2 has arrived
    assert np.allclose(np.nansum(result.weights, axis=-1) + result.sink, 1.0, atol=1e-5)


def test_a_csa_layer_reads_at_most_top_k_of_its_finished_entries():
    result = compressed.compressed_map(v4_layer("csa", seed=7), inputs(seed=9))
    entries = ~np.isnan(result.weights[0, :, LENGTH:])
    finished = (np.arange(LENGTH) + 1) // 3
    assert np.array_equal(entries.sum(axis=1), np.minimum(finished, 2))
    assert not (entries & (np.arange(LENGTH // 3)[None] >= finished[:, None])).any()


def entries_after(layer: CompressedAttention, x: torch.Tensor) -> torch.Tensor:
    cache = layer.new_cache(1)
    with torch.no_grad():
        layer(x, cache=cache)
    return cache.states["compressor"].entries[0, 0]


def test_each_entry_pools_exactly_the_tokens_its_span_names():
    for kind in ("hca", "csa"):
        layer, x = v4_layer(kind, seed=7), inputs(seed=10)
        spans = compressed.entry_spans(kind, 3, LENGTH // 3)
        before = entries_after(layer, x)
        for token in range(LENGTH // 3 * 3):
            moved = x.clone()
            moved[0, token] += 1.0
            changed = (entries_after(layer, moved) - before).abs().amax(dim=-1) > 1e-6
            inside = [first <= token <= last for first, last in spans]
            assert changed.tolist() == inside, (kind, token)
