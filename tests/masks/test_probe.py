"""The masks probe against independent references: padded keys get zero weight, the padded batch's real rows equal the
unpadded run, a chunk through the cache equals the full pass's last rows, and cross-attention equals a float64
textbook softmax(QK^T / sqrt(d)) V computed from the layer's own projections."""

import math
from dataclasses import fields

import numpy as np
import pytest
import torch

from attn_core import AttentionConfig, build_attention
from explorer.probes.masks import MAX_TOKENS, chunk_probe, cross_probe, explore_masks, padding_probe, token_vectors

SEED = 3


def small_config(variant: str) -> AttentionConfig:
    if variant == "gqa":
        return AttentionConfig("gqa", d_model=64, n_heads=4, n_kv_heads=2)
    return AttentionConfig(variant, d_model=64, n_heads=4)


VARIANTS = ("mha", "mqa", "gqa", "mla")


@pytest.fixture(scope="module", params=VARIANTS)
def layer(request):
    return build_attention(small_config(request.param), seed=SEED)


def unpadded_run(layer, n: int, causal: bool = True):
    with torch.no_grad():
        return layer(token_vectors(layer.cfg.d_model, SEED, "short", n), return_weights=True, causal=causal)


@pytest.mark.parametrize("causal", [True, False])
def test_padded_keys_get_exactly_zero_weight(layer, causal):
    with torch.no_grad():
        result = padding_probe(layer, SEED, 10, 4, causal)
    assert (result.short_weights[:, :, 4:] == 0).all()
    assert result.padded_key_weight_max == 0.0
    # the long sequence has no padding: no key of it is blocked by padding (only by the causal mask)
    assert result.key_padding_mask.tolist() == [[True] * 10, [True] * 4 + [False] * 6]


@pytest.mark.parametrize("causal", [True, False])
def test_real_rows_of_the_padded_batch_equal_the_unpadded_run(layer, causal):
    with torch.no_grad():
        result = padding_probe(layer, SEED, 9, 5, causal)
    _, alone_weights = unpadded_run(layer, 5, causal)
    torch.testing.assert_close(torch.from_numpy(result.short_weights[:, :5, :5]), alone_weights[0], atol=1e-5, rtol=0)
    # the probe's own reported differences agree with this independent run
    assert result.rows_weights_diff <= 1e-5
    assert result.rows_output_diff <= 1e-5


def test_allowed_mask_is_padding_and_causal_combined(layer):
    with torch.no_grad():
        result = padding_probe(layer, SEED, 8, 3, True)
    for b, real in enumerate((8, 3)):
        for i in range(8):
            for j in range(8):
                assert result.allowed[b, i, j] == (j <= i and j < real)


def test_chunk_rows_equal_the_full_pass_last_rows(layer):
    prefill, chunk = 6, 3
    with torch.no_grad():
        result = chunk_probe(layer, SEED, prefill, chunk)
        x = token_vectors(layer.cfg.d_model, SEED, "context", prefill + chunk)
        _, full = layer(x, return_weights=True)  # independent full pass, no cache
    torch.testing.assert_close(torch.from_numpy(result.chunk_weights), full[0, :, prefill:], atol=1e-5, rtol=0)
    assert result.rows_weights_diff <= 1e-5
    assert result.rows_output_diff <= 1e-5
    assert result.cached_tokens == prefill + chunk


def test_chunk_mask_is_causal_aligned_to_the_end(layer):
    with torch.no_grad():
        result = chunk_probe(layer, SEED, 5, 4)
    mask = result.chunk_mask
    assert mask.shape == (4, 9)
    for i in range(4):
        assert mask[i].tolist() == [j <= 5 + i for j in range(9)]
    assert (result.full_mask[5:] == mask).all()


def textbook_cross_attention(layer, queries, memory):
    """softmax(Q K^T / sqrt(d)) V in float64, from the layer's own q_proj / k_proj / v_proj / o_proj weights."""
    cfg = layer.cfg
    d, heads, kv_heads = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
    wq, wk, wv, wo = (p.weight.double() for p in (layer.q_proj, layer.k_proj, layer.v_proj, layer.o_proj))
    q = (queries[0].double() @ wq.T).reshape(-1, heads, d)  # [Lq, H, d]
    k = (memory[0].double() @ wk.T).reshape(-1, kv_heads, d)  # [Lkv, G, d]
    v = (memory[0].double() @ wv.T).reshape(-1, kv_heads, d)
    weights, outputs = [], []
    for h in range(heads):
        g = h // (heads // kv_heads)
        w = torch.softmax(q[:, h] @ k[:, g].T / math.sqrt(d), dim=-1)  # [Lq, Lkv]
        weights.append(w)
        outputs.append(w @ v[:, g])
    return torch.stack(weights), torch.cat(outputs, dim=-1) @ wo.T


@pytest.mark.parametrize("variant", ["mha", "mqa", "gqa"])
@pytest.mark.parametrize("lengths", [(5, 11), (7, 2), (1, 32)])
def test_cross_attention_equals_the_textbook_formula(variant, lengths):
    layer = build_attention(small_config(variant), seed=SEED)
    query_len, memory_len = lengths
    with torch.no_grad():
        result = cross_probe(layer, SEED, query_len, memory_len)
    queries = token_vectors(64, SEED, "queries", query_len)
    memory = token_vectors(64, SEED, "memory", memory_len)
    weights, output = textbook_cross_attention(layer, queries, memory)
    assert result.weights.shape == (4, query_len, memory_len)
    torch.testing.assert_close(torch.from_numpy(result.weights).double(), weights, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.from_numpy(result.output).double(), output, atol=1e-4, rtol=0)


def test_mla_has_no_cross_attention_here():
    layer = build_attention(small_config("mla"), seed=SEED)
    assert cross_probe(layer, SEED, 3, 4) is None


def test_bad_lengths_raise_sentences():
    layer = build_attention(small_config("mha"), seed=SEED)
    with pytest.raises(ValueError, match="short"):
        padding_probe(layer, SEED, 4, 4, True)
    with pytest.raises(ValueError, match="prefill"):
        chunk_probe(layer, SEED, 20, MAX_TOKENS)


def test_shorter_sequences_are_prefixes_of_longer_ones():
    assert torch.equal(token_vectors(32, 1, "long", 5), token_vectors(32, 1, "long", 12)[:, :5])


def test_explore_masks_gives_all_three_sections():
    result = explore_masks(
        small_config("gqa"),
        SEED,
        head=3,
        long_len=6,
        short_len=2,
        causal=True,
        prefill=3,
        chunk=2,
        query_len=4,
        memory_len=5,
    )
    assert {f.name for f in fields(result)} == {"padding", "chunk", "cross"}
    assert result.cross.weights.shape == (1, 4, 5)  # the one head asked for


@pytest.mark.parametrize("variant", ["mha", "gqa", "mla"])
def test_explore_masks_shows_that_head_of_the_whole_layer(variant):
    cfg = small_config(variant)
    result = explore_masks(
        cfg, SEED, head=2, long_len=6, short_len=2, causal=True, prefill=3, chunk=2, query_len=4, memory_len=5
    )
    x = token_vectors(cfg.d_model, SEED, "context", 5)
    with torch.no_grad():
        _, full = build_attention(cfg, seed=SEED)(x, return_weights=True)
    np.testing.assert_allclose(result.chunk.full_weights[0], full[0, 2].numpy(), atol=1e-6)
