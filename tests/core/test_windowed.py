"""The grouped layer's options on their own: a sliding window with kept first tokens (no HF module has those two
together: the reference here is softmax attention over every key with the mask written out position by position),
the rolling cache's bytes, and what the options refuse."""

from __future__ import annotations

import math

import pytest
import torch

from attn_core import AttentionConfig, AttentionOptions, RopeScaling, WindowedKVCache, build_attention

from .examples import randn

TOL = 1e-5
CFG = AttentionConfig("gqa", d_model=32, n_heads=4, n_kv_heads=2)


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def reference(layer, x: torch.Tensor, *, window: int, sink_tokens: int) -> torch.Tensor:
    """Every key scored, then masked from the definition: key j is visible to query i when j <= i and (i - j <
    window or j < sink_tokens); softmax with the learned sinks as one more logit when the layer has them."""
    length = x.shape[1]
    q = layer.queries(x, 0).joined()  # [B, H, L, D]
    k, v = layer.keys_values(x, 0)  # [B, G, L, D]
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-1, -2) * layer.scale
    visible = torch.tensor(
        [[j <= i and (i - j < window or j < sink_tokens) for j in range(length)] for i in range(length)]
    )
    scores = scores.masked_fill(~visible, float("-inf"))
    if layer.sinks is not None:
        sink = layer.sinks.view(1, -1, 1, 1).expand(*scores.shape[:3], 1)
        weights = torch.softmax(torch.cat((scores, sink), dim=-1), dim=-1)[..., :-1]
    else:
        weights = torch.softmax(scores, dim=-1)
    out = (weights @ v).transpose(1, 2).flatten(2)
    return layer.o_proj(out)


WINDOWED = {
    "window": AttentionOptions(window=4),
    "window-and-sinks": AttentionOptions(window=4, sink_tokens=2),
    "window-sinks-learned-sinks": AttentionOptions(window=3, sink_tokens=1, learned_sinks=True),
    "window-one": AttentionOptions(window=1),
    "window-qk-norm-scale": AttentionOptions(window=5, qk_norm="rms_unit_offset", scale=0.2),
}


def windowed_layer(name: str):
    layer = build_attention(CFG, seed=3, options=WINDOWED[name]).eval()
    if layer.sinks is not None:
        layer.sinks.normal_(0, 1, generator=torch.Generator().manual_seed(0))
    return layer


@pytest.mark.parametrize("name", WINDOWED)
def test_prefill_matches_the_masked_reference(name):
    layer, options = windowed_layer(name), WINDOWED[name]
    x = randn(2, 11, CFG.d_model)
    expected = reference(layer, x, window=options.window, sink_tokens=options.sink_tokens)
    assert (layer(x)[0] - expected).abs().max() <= TOL


@pytest.mark.parametrize("name", WINDOWED)
def test_token_by_token_decode_with_the_rolling_cache_matches_the_reference(name):
    layer, options = windowed_layer(name), WINDOWED[name]
    x = randn(2, 14, CFG.d_model, seed=1)
    expected = reference(layer, x, window=options.window, sink_tokens=options.sink_tokens)
    cache = layer.new_cache(2)
    out = torch.cat([layer(x[:, t : t + 1], cache=cache)[0] for t in range(14)], dim=1)
    assert (out - expected).abs().max() <= TOL


@pytest.mark.parametrize("name", WINDOWED)
def test_chunks_then_tokens_match_the_reference(name):
    layer, options = windowed_layer(name), WINDOWED[name]
    x = randn(1, 15, CFG.d_model, seed=2)
    expected = reference(layer, x, window=options.window, sink_tokens=options.sink_tokens)
    cache, outs, start = layer.new_cache(1), [], 0
    for size in (1, 6, 1, 1, 3, 1, 2):
        outs.append(layer(x[:, start : start + size], cache=cache)[0])
        start += size
    assert (torch.cat(outs, dim=1) - expected).abs().max() <= TOL


def streaming_llm_reference(layer, x: torch.Tensor, *, window: int, sink_tokens: int) -> torch.Tensor:
    """StreamingLLM's positions written out query by query: the keys query i sees (sinks, then its window) numbered
    0, 1, ... inside the cache once the window has left the sinks behind (the query last), their own positions
    before that; each key and the query rotated at those positions, then plain softmax attention."""
    outs = []
    for i in range(x.shape[1]):
        seen = sorted(set(range(min(sink_tokens, i + 1))) | set(range(max(0, i - window + 1), i + 1)))
        moved = i > sink_tokens + window - 1
        positions = range(len(seen)) if moved else seen
        q = layer.queries(x[:, i : i + 1], positions[-1]).joined()  # [B, H, 1, D]
        kv = [layer.keys_values(x[:, j : j + 1], p) for j, p in zip(seen, positions, strict=True)]
        k, v = torch.cat([k for k, _ in kv], dim=2), torch.cat([v for _, v in kv], dim=2)
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        weights = torch.softmax(q @ k.transpose(-1, -2) * layer.scale, dim=-1)
        outs.append(layer.o_proj((weights @ v).transpose(1, 2).flatten(2)))
    return torch.cat(outs, dim=1)


CACHE_POSITIONS = AttentionOptions(window=4, sink_tokens=2, sink_positions="cache")


def test_sinks_at_cache_positions_prefill_matches_streaming_llms_renumbering():
    layer = build_attention(CFG, seed=3, options=CACHE_POSITIONS).eval()
    x = randn(2, 13, CFG.d_model, seed=5)
    expected = streaming_llm_reference(layer, x, window=4, sink_tokens=2)
    assert (layer(x)[0] - expected).abs().max() <= TOL
    # and it differs from the sinks at their own positions: the comparison can fail
    own = reference(layer, x, window=4, sink_tokens=2)
    assert (own - expected).abs().max() > 1e-3


def test_sinks_at_cache_positions_chunks_then_tokens_match_streaming_llms_renumbering():
    layer = build_attention(CFG, seed=3, options=CACHE_POSITIONS).eval()
    x = randn(1, 16, CFG.d_model, seed=6)
    expected = streaming_llm_reference(layer, x, window=4, sink_tokens=2)
    cache, outs, start = layer.new_cache(1), [], 0
    for size in (3, 1, 1, 1, 5, 1, 1, 2, 1):
        outs.append(layer(x[:, start : start + size], cache=cache)[0])
        start += size
    assert (torch.cat(outs, dim=1) - expected).abs().max() <= TOL


def test_sinks_at_cache_positions_token_by_token_with_weights_match_streaming_llms_renumbering():
    layer = build_attention(CFG, seed=3, options=CACHE_POSITIONS).eval()
    x = randn(1, 12, CFG.d_model, seed=7)
    cache = layer.new_cache(1)
    outs = [layer(x[:, t : t + 1], cache=cache, return_weights=True) for t in range(12)]
    expected = streaming_llm_reference(layer, x, window=4, sink_tokens=2)
    assert (torch.cat([out for out, _ in outs], dim=1) - expected).abs().max() <= TOL
    assert outs[-1][1].shape == (1, 4, 1, 6)  # the two sinks and the window of four


def test_weights_come_in_position_order_over_the_sinks_and_the_window():
    layer = windowed_layer("window-and-sinks")  # window 4, two sinks
    x = randn(1, 10, CFG.d_model, seed=4)
    cache = layer.new_cache(1)
    layer(x[:, :9], cache=cache)
    _, weights = layer(x[:, 9:], cache=cache, return_weights=True)
    # position 9 reads the sinks 0, 1 and its window 6..9: six keys, held ones first, in order
    assert weights.shape == (1, 4, 1, 6)
    assert torch.allclose(weights.sum(-1), torch.ones(1, 4, 1))


def test_learned_sinks_take_a_share_of_the_weights():
    layer = windowed_layer("window-sinks-learned-sinks")
    _, weights = layer(randn(1, 6, CFG.d_model), return_weights=True)
    assert (weights.sum(-1) < 1).all()


@pytest.mark.parametrize(("tokens", "held"), [(0, 0), (1, 1), (2, 2), (4, 4), (5, 5), (6, 5), (100, 5)])
def test_the_cache_holds_the_sinks_and_window_minus_one_tokens(tokens, held):
    layer = windowed_layer("window-and-sinks")  # two sinks + 4 - 1 latest
    cache = layer.new_cache(3)
    for t in range(tokens):
        layer(randn(3, 1, CFG.d_model, seed=t), cache=cache)
    assert cache.seq_len == tokens
    assert cache.nbytes == 2 * 2 * 8 * held * 3 * 4  # 2 (K, V) · G · D · held · B · float32
    assert cache.shapes() == {"k": (3, 2, held, 8), "v": (3, 2, held, 8)}


def test_the_cache_never_allocates_more_than_sinks_plus_window():
    layer = windowed_layer("window-and-sinks")
    cache = layer.new_cache(1)
    layer(randn(1, 50, CFG.d_model), cache=cache)
    for t in range(20):
        layer(randn(1, 1, CFG.d_model, seed=t), cache=cache)
    assert cache.capacity_nbytes == 2 * 2 * 8 * (2 + 4) * 4


def test_a_decoding_step_reads_as_much_at_32k_tokens_as_at_1k():
    layer = build_attention(CFG, options=AttentionOptions(window=128), device="meta")
    short, long = layer.cache_after(1024), layer.cache_after(32768)
    assert isinstance(long, WindowedKVCache)
    assert long.read_nbytes == short.read_nbytes == 2 * 2 * 8 * 128 * 4
    assert long.nbytes == short.nbytes == 2 * 2 * 8 * 127 * 4
    assert (long.seq_len, short.seq_len) == (32768, 1024)


def test_cache_after_matches_a_real_prefill():
    layer = windowed_layer("window-and-sinks")
    cache = layer.new_cache(2)
    layer(randn(2, 9, CFG.d_model), cache=cache)
    measured = layer.cache_after(9, batch_size=2)
    assert (measured.nbytes, measured.read_nbytes, measured.seq_len) == (cache.nbytes, cache.read_nbytes, 9)


def test_the_same_seed_draws_the_same_sinks_and_a_head_subset_takes_its_heads():
    options = AttentionOptions(window=4, learned_sinks=True, qk_norm="rms")
    full = build_attention(CFG, seed=7, options=options)
    assert torch.equal(full.sinks, build_attention(CFG, seed=7, options=options).sinks)
    half = build_attention(CFG, seed=7, options=options, heads=range(2, 4))
    assert torch.equal(half.sinks, full.sinks[2:4])
    assert torch.equal(full.q_norm.weight, torch.ones(8))


def test_gemma_norms_start_at_zero_so_they_scale_by_one():
    layer = build_attention(CFG, seed=0, options=AttentionOptions(qk_norm="rms_unit_offset"))
    assert torch.equal(layer.k_norm.weight, torch.zeros(8))


def test_a_layer_without_options_is_the_layer_it_was():
    x = randn(1, 6, CFG.d_model)
    plain, with_none = build_attention(CFG, seed=1), build_attention(CFG, seed=1, options=AttentionOptions())
    assert torch.equal(plain(x)[0], with_none(x)[0])
    assert set(plain.state_dict()) == set(with_none.state_dict())


def test_linear_rope_scaling_is_positions_divided_by_the_factor():
    # linear scaling at position p is plain RoPE at position p / factor: compare one query at 8 with plain at 2
    scaled = build_attention(CFG, seed=1, options=AttentionOptions(rope_scaling=RopeScaling("linear", factor=4.0)))
    plain = build_attention(CFG, seed=1)
    x = randn(1, 1, CFG.d_model)
    assert torch.allclose(scaled.queries(x, 8).joined(), plain.queries(x, 2).joined(), atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": 0}, "window must be a positive whole number"),
        ({"window": 2.5}, "window must be a positive whole number"),
        ({"sink_tokens": 2}, "set window too"),
        ({"window": 4, "sink_tokens": -1}, "sink_tokens must be a whole number"),
        ({"qk_norm": "layer"}, "qk_norm='layer'"),
        ({"window": 4, "sink_tokens": 1, "sink_positions": "renumbered"}, "sink_positions='renumbered'"),
        ({"scale": -1.0}, "scale must be a positive number"),
    ],
)
def test_bad_options_are_value_errors_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AttentionOptions(**kwargs)


def test_mla_refuses_a_window():
    cfg = AttentionConfig("mla", d_model=32, n_heads=4)
    with pytest.raises(ValueError, match="window is an option of the grouped variants"):
        build_attention(cfg, options=AttentionOptions(window=4))


def test_a_windowed_layer_refuses_cross_attention():
    layer = windowed_layer("window")
    with pytest.raises(ValueError, match="causal self-attention"):
        layer(randn(1, 3, CFG.d_model), kv_input=randn(1, 5, CFG.d_model))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"rope_type": "dynamic", "factor": 2.0}, "'dynamic' is not supported"),
        (
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": None},
            "'rope_parameters.original_max_position_embeddings' is missing",
        ),
        ({"rope_type": "linear"}, "'rope_parameters.factor' is missing"),
        ({"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5}, "partial_rotary_factor"),
    ],
)
def test_unsupported_rope_parameters_are_value_errors(params, message):
    with pytest.raises(ValueError, match=message):
        RopeScaling.from_hf(params, None)


def test_yarn_attention_factor_follows_the_factor():
    assert RopeScaling.from_hf({"rope_type": "yarn", "factor": 32.0}, 131072).attention_factor == pytest.approx(
        0.1 * math.log(32.0) + 1.0
    )
