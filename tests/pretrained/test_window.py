"""with_window: the trained model with sliding-window layers and attention sinks, against HF transformers' Llama
modules run layer by layer with a sliding-window mask of their own, and against its own recomputation."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attn_core import GroupedQueryAttention
from attn_core.cache import WindowedKVCache
from attn_core.pretrained import convert_attention, global_layers, with_window

pytestmark = pytest.mark.slow  # loads the model

PROSE = (
    "Attention lets every token look at the tokens before it. In grouped-query attention, several query heads share "
    "one key and value head, which shrinks the cache that a model keeps while it writes. "
)
WINDOW, SINKS = 16, 2  # small, so a short text crosses the window many times


def hf_windowed_logits(hf_model, ids: torch.Tensor, window: int, sinks: int, full: set[int]) -> torch.Tensor:
    """HF's embeddings, rotary embedding, decoder layers, norm and head, in order, each windowed layer given an
    additive mask of its own: key j visible to query i when j <= i and (i - j < window or j < sinks)."""
    length = ids.shape[1]
    i, j = torch.arange(length)[:, None], torch.arange(length)[None, :]
    causal = j <= i
    windowed = causal & ((i - j < window) | (j < sinks))
    additive = {
        kind: torch.zeros(length, length).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]
        for kind, allowed in (("full", causal), ("window", windowed))
    }
    model = hf_model.model
    positions = torch.arange(length)[None]
    hidden = model.embed_tokens(ids)
    rotary = model.rotary_emb(hidden, position_ids=positions)
    for index, layer in enumerate(model.layers):
        mask = additive["full" if index in full else "window"]
        hidden = layer(hidden, attention_mask=mask, position_ids=positions, position_embeddings=rotary)
    return hf_model.lm_head(model.norm(hidden))


@pytest.mark.parametrize("pattern", ["every", "gemma3"])
def test_windowed_perplexity_equals_hf_layers_with_a_sliding_window_mask(lm, hf_model, pattern):
    full = global_layers(pattern, lm.config.n_layers)
    windowed = with_window(lm, WINDOW, SINKS, full, sink_positions="original")  # HF's one position per token
    ids = windowed.encode(PROSE * 2)
    assert len(ids) > 4 * WINDOW
    with torch.inference_mode():
        theirs = hf_windowed_logits(hf_model, torch.tensor([ids]), WINDOW, SINKS, set(full))[0]
        reference = F.cross_entropy(theirs[:-1], torch.tensor(ids[1:])).item()
        dense = F.cross_entropy(hf_model(torch.tensor([ids])).logits[0, :-1], torch.tensor(ids[1:])).item()
    ours = windowed.token_nll(ids).mean().item()
    assert ours == pytest.approx(reference, abs=1e-4)
    assert abs(ours - dense) > 1e-2  # the window changes the figure: the comparison above can fail
    assert windowed.perplexity(PROSE * 2) == pytest.approx(math.exp(reference), rel=1e-4)


def test_windowed_layers_are_grouped_layers_with_the_window_over_the_same_tensors(lm):
    windowed = with_window(lm, 128, 1, range(5, 30, 6))
    for index, (mine, theirs) in enumerate(zip(windowed.decoder_layers, lm.decoder_layers, strict=True)):
        attention = mine.self_attn
        assert isinstance(attention, GroupedQueryAttention)
        assert attention is not theirs.self_attn
        assert attention.q_proj.weight.data_ptr() == theirs.self_attn.q_proj.weight.data_ptr()  # no copy
        assert attention.options.window == (None if index in range(5, 30, 6) else 128)
        assert mine.mlp is theirs.mlp


@pytest.mark.parametrize("sink_positions", ["original", "cache"])
def test_cached_decoding_equals_recomputing_with_the_same_pattern(lm, sink_positions):
    layers = global_layers("gpt-oss", lm.config.n_layers)
    windowed = with_window(lm, WINDOW, SINKS, layers, sink_positions=sink_positions)
    ids = torch.tensor([windowed.encode(PROSE)[:60]])
    with torch.inference_mode():
        recomputed, _ = windowed(ids)
        cache = windowed.new_cache()
        prompt, _ = windowed(ids[:, :20], cache)  # a prompt longer than the window, then one token at a time
        steps = [windowed(ids[:, t : t + 1], cache)[0] for t in range(20, ids.shape[1])]
    cached = torch.cat([prompt, *steps], dim=1)
    assert (cached - recomputed).abs().max().item() <= 1e-4


def test_generating_keeps_at_most_window_and_sinks_in_a_windowed_layer(lm):
    windowed = with_window(lm, WINDOW, SINKS, global_layers("gemma3", lm.config.n_layers))
    ids = windowed.encode(PROSE)[:30]
    cache = windowed.new_cache()
    new = windowed.generate(ids, max_new_tokens=10, cache=cache, stop_at_eos=False)
    seen = len(ids) + len(new) - 1  # the last token yielded is not in the cache yet
    assert cache.seq_len == seen
    for index, layer_cache in enumerate(cache.layers):
        if index in windowed.global_layers:
            assert layer_cache.shapes()["k"] == (1, 3, seen, 64)
        else:
            assert isinstance(layer_cache, WindowedKVCache)
            assert layer_cache.shapes()["k"] == (1, 3, SINKS + WINDOW - 1, 64)
    assert cache.nbytes == windowed.cache_nbytes(seen)


def test_cache_bytes_count_each_windowed_layer_at_its_window_and_the_global_ones_in_full(lm):
    windowed = with_window(lm, 128, 1, range(5, 30, 6))
    per_token = 2 * 3 * 64 * 4  # float32 keys and values of 3 KV heads of width 64
    assert windowed.cache_nbytes(100) == lm.cache_nbytes(100) == 30 * 100 * per_token
    assert windowed.cache_nbytes(8192) == 5 * 8192 * per_token + 25 * (1 + 127) * per_token
    assert windowed.cache_bytes_per_token(8192) == windowed.cache_nbytes(8192) / 8192
    assert windowed.kv_cache_bytes_per_token() == lm.kv_cache_bytes_per_token() == per_token


def test_a_grouped_conversion_takes_a_window_and_mla_is_refused_by_name(lm):
    mqa = convert_attention(lm, "gqa", n_kv_heads=1).model
    windowed = with_window(mqa, 64)
    assert windowed.cache_nbytes(1000) == 30 * 63 * 2 * 64 * 4
    ids = torch.tensor([lm.encode(PROSE)[:8]])
    with torch.inference_mode():  # shorter than the window: the conversion's own numbers
        assert torch.equal(windowed(ids)[0], mqa(ids)[0])


def test_healing_trains_the_students_own_copies_and_its_sink_logits(lm):
    from attn_core.pretrained import heal_end_to_end

    windowed = with_window(lm, WINDOW, global_layers=range(5, 30, 6), learned_sinks=True)
    sinks = windowed.decoder_layers[0].self_attn.sinks
    assert torch.equal(sinks, torch.zeros(9))  # 0 until healed
    before = [p.detach().clone() for p in lm.parameters()]
    heal_end_to_end(windowed, lm, PROSE * 2, steps=1, lr=1e-4, window=64)
    assert all(torch.equal(a, b) for a, b in zip(before, lm.parameters(), strict=True))
    trained = windowed.decoder_layers[0].self_attn.sinks
    # Adam's first step moves each parameter by about its lr: the sink logits learn at SINK_LR_SCALE times lr
    assert trained.abs().max().item() == pytest.approx(1e-2, rel=1e-3)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"window": 0}, "window"),
        ({"window": 8193}, "window"),
        ({"window": None, "sink_tokens": 1}, "sink_tokens"),
        ({"window": 128, "global_layers": [30]}, "global_layers"),
        ({"window": 128, "global_layers": [-1]}, "global_layers"),
        ({"window": 128, "global_layers": range(30)}, "global_layers"),
        ({"window": 128, "sink_tokens": -1}, "sink_tokens"),
        ({"window": 128, "sink_tokens": 1, "sink_positions": "shifted"}, "sink_positions"),
    ],
)
def test_bad_arguments_raise_a_value_error_naming_the_argument(lm, arguments, named):
    with pytest.raises(ValueError, match=named):
        with_window(lm, **arguments)


def test_mla_layers_cannot_be_windowed(lm):
    mla = convert_attention(lm, "mla", kv_lora_rank=64, qk_rope_head_dim=32, calibration_text=PROSE * 3).model
    with pytest.raises(ValueError, match="global_layers"):
        with_window(mla, 128)


def test_a_windowed_model_is_not_windowed_again(lm):
    with pytest.raises(ValueError, match="made from"):
        with_window(with_window(lm, 128), 64)
