"""Properties over random valid configurations of every variant (hypothesis)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_core import AttentionConfig, build_attention, kv_cache_bytes, parameter_count

from .examples import PROPERTY_SETTINGS, any_configs, chunkings, grouped_configs, latent_configs, randn


def run_in_chunks(layer, x, chunks):
    cache = layer.new_cache(x.shape[0])
    outs, start = [], 0
    for size in chunks:
        outs.append(layer(x[:, start : start + size], cache=cache)[0])
        start += size
    return torch.cat(outs, dim=1), cache


@PROPERTY_SETTINGS
@given(cfg=any_configs(), chunks=chunkings(), batch=st.integers(1, 2), seed=st.integers(0, 2**16))
def test_cached_decode_in_any_chunks_equals_one_full_forward(cfg, chunks, batch, seed):
    layer = build_attention(cfg, seed=seed)
    x = randn(batch, sum(chunks), cfg.d_model, seed=seed)
    with torch.no_grad():
        full, _ = layer(x)
        chunked, _ = run_in_chunks(layer, x, chunks)
    assert (full - chunked).abs().max().item() <= 1e-5


@PROPERTY_SETTINGS
@given(cfg=any_configs(), chunks=chunkings(), batch=st.integers(1, 2))
def test_cache_bytes_equal_the_closed_form_after_every_chunk(cfg, chunks, batch):
    layer = build_attention(cfg, seed=0)
    cache = layer.new_cache(batch)
    x = randn(batch, sum(chunks), cfg.d_model)
    measured, expected, start = [], [], 0
    with torch.no_grad():
        for size in chunks:
            layer(x[:, start : start + size], cache=cache)
            start += size
            measured.append(cache.nbytes)
            expected.append(kv_cache_bytes(cfg, batch, start, torch.float32))
    assert measured == expected


@PROPERTY_SETTINGS
@given(
    cfg=any_configs(),
    dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]),
    batch=st.integers(1, 4),
    prompt=st.integers(1, 5000),
)
def test_cache_bytes_equal_the_closed_form_in_every_dtype_on_meta(cfg, dtype, batch, prompt):
    layer = build_attention(cfg, device="meta", dtype=dtype)
    cache = layer.new_cache(batch)
    layer(torch.empty(batch, prompt, cfg.d_model, device="meta", dtype=dtype), cache=cache)
    layer(torch.empty(batch, 1, cfg.d_model, device="meta", dtype=dtype), cache=cache)
    assert cache.nbytes == kv_cache_bytes(cfg, batch, prompt + 1, dtype)


@PROPERTY_SETTINGS
@given(cfg=any_configs())
def test_parameter_count_equals_the_modules_parameters(cfg):
    assert parameter_count(cfg) == sum(p.numel() for p in build_attention(cfg, device="meta").parameters())


@st.composite
def head_shapes(draw):
    return dict(
        d_model=draw(st.integers(4, 32)),
        n_heads=draw(st.integers(1, 6)),
        head_dim=2 * draw(st.integers(1, 6)),
        bias=draw(st.booleans()),
        rope_theta=draw(st.sampled_from([10000.0, 500000.0])),
    )


@PROPERTY_SETTINGS
@given(shape=head_shapes(), length=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_mha_equals_gqa_with_one_group_per_head(shape, length, seed):
    mha = build_attention(AttentionConfig("mha", **shape), seed=seed)
    gqa = build_attention(AttentionConfig("gqa", n_kv_heads=shape["n_heads"], **shape))
    gqa.load_state_dict(mha.state_dict())
    x = randn(1, length, shape["d_model"], seed=seed)
    with torch.no_grad():
        assert (mha(x)[0] - gqa(x)[0]).abs().max().item() <= 1e-6


@PROPERTY_SETTINGS
@given(shape=head_shapes(), length=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_mqa_equals_gqa_with_a_single_group(shape, length, seed):
    mqa = build_attention(AttentionConfig("mqa", **shape), seed=seed)
    gqa = build_attention(AttentionConfig("gqa", n_kv_heads=1, **shape))
    gqa.load_state_dict(mqa.state_dict())
    x = randn(1, length, shape["d_model"], seed=seed)
    with torch.no_grad():
        assert (mqa(x)[0] - gqa(x)[0]).abs().max().item() <= 1e-6


@PROPERTY_SETTINGS
@given(cfg=grouped_configs(), seed=st.integers(0, 2**16))
def test_gqa_equals_mha_with_each_kv_head_copied_to_its_group(cfg, seed):
    # The definition of grouping: MHA whose key and value weights are shared within each group of query heads.
    gqa = build_attention(cfg, seed=seed)
    mha = build_attention(AttentionConfig(**(cfg.as_dict() | {"variant": "mha", "n_kv_heads": None})))
    weights = gqa.state_dict()
    for name in ("k_proj.weight", "v_proj.weight", "k_proj.bias", "v_proj.bias"):
        if name in weights:
            per_head = weights[name].unflatten(0, (cfg.n_kv_heads, cfg.head_dim))
            weights[name] = per_head.repeat_interleave(cfg.group_size, dim=0).flatten(0, 1)
    mha.load_state_dict(weights)
    x = randn(2, 6, cfg.d_model, seed=seed)
    with torch.no_grad():
        assert (gqa(x)[0] - mha(x)[0]).abs().max().item() <= 1e-5


@PROPERTY_SETTINGS
@given(cfg=latent_configs(), chunks=chunkings(), seed=st.integers(0, 2**16))
def test_mla_absorbed_equals_naive_in_any_chunks(cfg, chunks, seed):
    layer = build_attention(cfg, seed=seed)
    x = randn(1, sum(chunks), cfg.d_model, seed=seed)
    absorbed, naive = layer.new_cache(1), layer.new_cache(1)
    start, worst = 0, 0.0
    with torch.no_grad():
        for size in chunks:
            chunk = x[:, start : start + size]
            a, _ = layer(chunk, cache=absorbed, absorb=True)
            n, _ = layer(chunk, cache=naive, absorb=False)
            worst = max(worst, (a - n).abs().max().item())
            start += size
    assert worst <= 1e-5


@st.composite
def configs_with_head_ranges(draw):
    """Any config, and a range of its heads that a smaller layer can hold: whole KV groups, or heads within one."""
    cfg = draw(any_configs())
    size = cfg.group_size
    if draw(st.booleans()):  # whole groups
        first = draw(st.integers(0, cfg.n_kv_heads - 1))
        last = draw(st.integers(first, cfg.n_kv_heads - 1))
        heads = range(first * size, (last + 1) * size)
    else:  # within one group
        group = draw(st.integers(0, cfg.n_kv_heads - 1))
        start = draw(st.integers(0, size - 1))
        stop = draw(st.integers(start + 1, size))
        heads = range(group * size + start, group * size + stop)
    return cfg, heads


@PROPERTY_SETTINGS
@given(configs_with_head_ranges(), st.integers(0, 2**31 - 1))
def test_a_layer_of_some_heads_computes_what_they_compute_in_the_full_layer(case, seed):
    """Per-head seeding: a head's weights do not depend on which other heads are built, so its attention is the
    same in the full layer and in a layer of some heads, decode through the cache included."""
    cfg, heads = case
    x = randn(1, 5, cfg.d_model, seed=seed % 1000)
    full_layer, part_layer = build_attention(cfg, seed=seed), build_attention(cfg, seed=seed, heads=heads)
    with torch.no_grad():
        _, full = full_layer(x, return_weights=True)
        _, part = part_layer(x, return_weights=True)
        full_cache, part_cache = full_layer.new_cache(1), part_layer.new_cache(1)
        full_layer(x[:, :4], cache=full_cache)
        part_layer(x[:, :4], cache=part_cache)
        _, full_step = full_layer(x[:, 4:], cache=full_cache, return_weights=True)
        _, part_step = part_layer(x[:, 4:], cache=part_cache, return_weights=True)
    torch.testing.assert_close(part, full[:, heads.start : heads.stop], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(part_step, full_step[:, heads.start : heads.stop], rtol=1e-5, atol=1e-6)
