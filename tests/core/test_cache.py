"""Caches hold only what each variant needs, grow by doubling, and hand out views rather than copies."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from attn_core import AttentionConfig, build_attention, kv_cache_bytes

from .examples import ALL, EXAMPLES, GROUPED, LATENT, randn
from .references import textbook

F32 = 4  # bytes


def filled(name: str, tokens: int, batch: int = 1, chunks: tuple[int, ...] | None = None):
    cfg = EXAMPLES[name]
    layer = build_attention(cfg, seed=0)
    cache = layer.new_cache(batch)
    x = randn(batch, tokens, cfg.d_model)
    start = 0
    with torch.no_grad():
        for size in chunks or (tokens,):
            layer(x[:, start : start + size], cache=cache)
            start += size
    return layer, cache, x


@pytest.mark.parametrize("name", ALL)
def test_new_cache_is_empty(name):
    cache = build_attention(EXAMPLES[name]).new_cache(2)
    assert (cache.seq_len, cache.nbytes) == (0, 0)


@pytest.mark.parametrize("name", ALL)
def test_seq_len_counts_tokens_over_chunks(name):
    _, cache, _ = filled(name, 9, chunks=(4, 1, 3, 1))
    assert cache.seq_len == 9


@pytest.mark.parametrize("name", GROUPED)
def test_grouped_cache_stores_n_kv_heads_not_the_repeated_copies(name):
    cfg = EXAMPLES[name]
    _, cache, _ = filled(name, 5, batch=2)
    assert cache.shapes() == {"k": (2, cfg.n_kv_heads, 5, cfg.head_dim), "v": (2, cfg.n_kv_heads, 5, cfg.head_dim)}


@pytest.mark.parametrize("name", GROUPED)
def test_grouped_cache_bytes_are_two_times_kv_heads_times_head_dim_per_token(name):
    cfg = EXAMPLES[name]
    _, cache, _ = filled(name, 5, batch=2)
    assert cache.nbytes == 2 * 5 * (2 * cfg.n_kv_heads * cfg.head_dim) * F32


def test_gqa_cache_is_a_quarter_of_mhas_with_four_heads_per_group():
    mha = AttentionConfig("mha", d_model=64, n_heads=8)
    gqa = AttentionConfig("gqa", d_model=64, n_heads=8, n_kv_heads=2)
    caches = []
    for cfg in (mha, gqa):
        layer = build_attention(cfg, seed=0)
        caches.append(layer.new_cache(1))
        with torch.no_grad():
            layer(randn(1, 6, 64), cache=caches[-1])
    assert caches[0].nbytes == 4 * caches[1].nbytes


@pytest.mark.parametrize("name", LATENT)
def test_mla_cache_stores_the_latent_and_the_rope_key_only(name):
    cfg = EXAMPLES[name]
    _, cache, _ = filled(name, 5, batch=2)
    assert cache.shapes() == {"c_kv": (2, 1, 5, cfg.kv_lora_rank), "k_rope": (2, 1, 5, cfg.qk_rope_head_dim)}


@pytest.mark.parametrize("name", LATENT)
def test_mla_cache_bytes_are_latent_plus_rope_width_per_token(name):
    cfg = EXAMPLES[name]
    _, cache, _ = filled(name, 5, batch=2)
    assert cache.nbytes == 2 * 5 * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) * F32


@pytest.mark.parametrize("name", ALL)
def test_cache_bytes_equal_the_closed_form(name):
    _, cache, _ = filled(name, 11, batch=3, chunks=(6, 1, 4))
    assert cache.nbytes == kv_cache_bytes(EXAMPLES[name], 3, 11, torch.float32)


def test_grouped_cache_holds_rotated_keys_and_plain_values():
    layer, cache, x = filled("gqa", 6, batch=2, chunks=(4, 2))
    with torch.no_grad():
        _, _, (k, v) = textbook(layer, x)
    assert torch.allclose(cache.k.double(), k, atol=1e-5)
    assert torch.allclose(cache.v.double(), v, atol=1e-5)


def test_mla_cache_holds_the_normalised_latent_and_the_rotated_shared_key():
    layer, cache, x = filled("mla", 6, batch=2, chunks=(4, 2))  # rotate-half layout, as the textbook's
    with torch.no_grad():
        _, _, (c_kv, k_rope) = textbook(layer, x)
    assert torch.allclose(cache.c_kv[:, 0].double(), c_kv, atol=1e-5)
    assert torch.allclose(cache.k_rope[:, 0].double(), k_rope, atol=1e-5)


# --- growth and views --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gqa", "mla"])
def test_capacity_doubles_when_tokens_outgrow_it(name):
    cfg = EXAMPLES[name]
    layer = build_attention(cfg, seed=0)
    cache = layer.new_cache(1)
    per_token = cfg.cache_elements_per_token * F32
    capacities = []
    with torch.no_grad():
        for t in range(70):
            layer(randn(1, 1, cfg.d_model, seed=t), cache=cache)
            capacities.append(cache.capacity_nbytes // per_token)
    assert sorted(set(capacities)) == [16, 32, 64, 128]
    assert all(capacity >= t + 1 for t, capacity in enumerate(capacities))


@pytest.mark.parametrize("name", ["gqa", "mla"])
def test_a_long_chunk_grows_capacity_to_the_next_doubling_at_once(name):
    _, cache, _ = filled(name, 100)
    assert cache.capacity_nbytes == 128 * EXAMPLES[name].cache_elements_per_token * F32


@pytest.mark.parametrize("name", ["gqa", "mla"])
def test_growing_keeps_what_was_held(name):
    layer, cache, _x = filled(name, 15)
    before = _first_buffer(cache).clone()
    with torch.no_grad():
        layer(randn(1, 5, EXAMPLES[name].d_model, seed=9), cache=cache)  # 15 -> 20 tokens: past 16, so it grows
    assert torch.equal(_first_buffer(cache)[:, :, :15], before)


def _first_buffer(cache) -> torch.Tensor:
    return cache.k if hasattr(cache, "k") else cache.latent


def test_grouped_cache_reads_are_views_of_one_storage():
    _, cache, _ = filled("gqa", 5)
    first, second = cache.k, cache.k
    assert first._base is not None
    assert first.data_ptr() == second.data_ptr()


def test_grouped_cache_append_writes_in_place_within_capacity():
    layer, cache, _ = filled("gqa", 5)
    before = cache.k.data_ptr()
    with torch.no_grad():
        layer(randn(1, 3, 48, seed=5), cache=cache)
    assert cache.k.data_ptr() == before
    assert cache.seq_len == 8


def test_mla_latent_and_rope_key_are_views_side_by_side_in_one_buffer():
    cfg = EXAMPLES["mla"]
    _, cache, _ = filled("mla", 5)
    c_kv, k_rope = cache.c_kv, cache.k_rope
    assert c_kv._base is not None
    assert k_rope._base is c_kv._base
    assert k_rope.data_ptr() == c_kv.data_ptr() + cfg.kv_lora_rank * c_kv.element_size()


def test_mla_cache_append_writes_in_place_within_capacity():
    layer, cache, _ = filled("mla", 5)
    before = cache.c_kv.data_ptr()
    with torch.no_grad():
        layer(randn(1, 3, 32, seed=5), cache=cache)
    assert cache.c_kv.data_ptr() == before
    assert cache.seq_len == 8


def largest_allocation_of_a_decode_step(name: str, cached: int = 1000) -> tuple[int, object]:
    """Bytes of the largest tensor any operation allocates during one decode step after `cached` tokens."""
    layer, cache, _ = filled(name, cached)
    step = randn(1, 1, EXAMPLES[name].d_model, seed=1)
    with torch.no_grad():
        layer(step, cache=cache)  # past any capacity doubling
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
            layer(step, cache=cache)
    return max(event.cpu_memory_usage for event in profiler.events()), cache


@pytest.mark.parametrize("name", ["gqa", "mqa"])
def test_grouped_decode_step_never_materialises_kv_repeated_for_every_query_head(name):
    largest, cache = largest_allocation_of_a_decode_step(name)
    repeated_keys = cache.nbytes // 2 * EXAMPLES[name].group_size
    assert largest < repeated_keys


@pytest.mark.parametrize("name", LATENT)
def test_mla_decode_step_never_materialises_the_latent_repeated_for_every_head(name):
    largest, cache = largest_allocation_of_a_decode_step(name)
    assert largest < cache.nbytes * EXAMPLES[name].n_heads
