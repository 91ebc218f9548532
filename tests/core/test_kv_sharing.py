"""Gemma 3n's and Gemma 4's caches as describe_model measures them (on the meta device), against closed forms written
here from the published configs' numbers, and the configurations the reader refuses."""

from __future__ import annotations

import math

import pytest
import torch

from attn_core import RopeScaling, build_layer, describe_model, published_config
from attn_core.hf import read_layer
from attn_core.kv_sharing import BorrowedCache, KeyValueCache

MIB = 1 << 20
TOKENS = 32768
BF16 = 2


def kv(layers: int, kv_heads: int, head_dim: int, held: int, tensors: int = 2) -> int:
    """Bytes of `layers` layers caching `tensors` [1, kv_heads, held, head_dim] tensors in bf16."""
    return layers * tensors * kv_heads * head_dim * held * BF16


def small(**changes) -> dict:
    """A six-layer Gemma 3n: sliding and full in turn, the last two reading layers 2 and 3."""
    return {
        "model_type": "gemma3n_text",
        "hidden_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "num_hidden_layers": 6,
        "layer_types": ["sliding_attention", "full_attention"] * 3,
        "sliding_window": 4,
        "num_kv_shared_layers": 2,
        **changes,
    }


def test_gemma3n_e4b_holds_about_272_mib_at_32k_tokens_in_bf16():
    # 20 layers keep caches: one full in five (4 of them, every token) and 16 sliding ones (the 511 latest tokens)
    expected = kv(4, 2, 256, TOKENS) + kv(16, 2, 256, 511)
    held = describe_model(published_config("Gemma 3n E4B")).cache_bytes(tokens=TOKENS, batch=1, dtype="bfloat16")
    assert held == expected
    assert held / MIB == pytest.approx(272, abs=0.5)


def test_gemma3n_e4b_would_hold_about_476_mib_without_sharing():
    config = published_config("Gemma 3n E4B")
    config["text_config"]["num_kv_shared_layers"] = 0
    held = describe_model(config).cache_bytes(tokens=TOKENS, batch=1, dtype="bfloat16")
    assert held == kv(7, 2, 256, TOKENS) + kv(28, 2, 256, 511)
    assert held / MIB == pytest.approx(476, abs=0.5)


def test_gemma3n_e4b_names_the_layer_each_shared_one_reads_and_counts_it_nothing():
    model = describe_model(published_config("Gemma 3n E4B"))
    assert model.kv_sources == [None] * 20 + [19 if (i + 1) % 5 == 0 else 18 for i in range(20, 35)]
    shared = [k for k in model.kinds(tokens=TOKENS) if k.kind == "shared"]
    assert [(k.count, k.nbytes) for k in shared] == [(15, 0)]


def test_a_shared_layer_reads_what_its_source_reads():
    model = describe_model(published_config("Gemma 3n E4B"))
    shared = next(k for k in model.kinds(tokens=TOKENS) if k.kind == "shared")
    # 12 read layer 18's window (its 511 held and the new token), 3 read layer 19's every token
    assert shared.read_nbytes == kv(12, 2, 256, 512) + kv(3, 2, 256, TOKENS)


def test_gemma4_31b_global_layers_cache_the_value_alone():
    model = describe_model(published_config("Gemma 4 31B"))
    sizes = {k.kind: (k.count, k.nbytes) for k in model.kinds(tokens=TOKENS)}
    assert sizes == {"sliding": (50, kv(50, 16, 256, 1023)), "full": (10, kv(10, 4, 512, TOKENS, tensors=1))}
    layer = build_layer(published_config("Gemma 4 31B"), 5, device="meta")
    cache = layer.cache_after(7)
    assert isinstance(cache, KeyValueCache)
    assert cache.shapes() == {"kv": (1, 4, 7, 512)}


@pytest.mark.parametrize("name", ["Gemma 3n E4B", "Gemma 4 31B"])
@pytest.mark.parametrize("tokens", [0, 1, 511, 512, 1025, 100_000])
def test_measured_bytes_equal_the_closed_form(name, tokens):
    model = describe_model(published_config(name))
    assert model.cache_bytes(tokens=tokens, batch=3) == model.formula_bytes(tokens=tokens, batch=3)


def test_gemma4_global_layers_take_the_global_width_heads_and_proportional_rope():
    _, config = read_layer(published_config("Gemma 4 31B"), 5)
    assert (config.n_kv_heads, config.head_dim, config.k_eq_v, config.window) == (4, 512, True, None)
    assert config.rope_scaling == RopeScaling("proportional", partial_rotary_factor=0.25)
    _, sliding = read_layer(published_config("Gemma 4 31B"), 0)
    assert (sliding.n_kv_heads, sliding.head_dim, sliding.k_eq_v, sliding.window) == (16, 256, False, 1024)


def test_proportional_rope_turns_the_first_pairs_at_the_whole_heads_frequencies():
    theta, dim = 1_000_000.0, 16
    expected = [theta ** (-2 * i / dim) for i in range(2)] + [0.0] * 6  # a quarter of 8 pairs turn
    got = RopeScaling("proportional", partial_rotary_factor=0.25).inv_freq(dim, theta)
    assert got.tolist() == pytest.approx(expected, rel=1e-6)


def test_a_shared_layer_is_called_with_its_sources_cache():
    producer, consumer = build_layer(small(), 2, seed=0), build_layer(small(), 4, seed=1)
    x = torch.randn(1, 6, 32)
    cache = producer.new_cache()
    producer(x, cache=cache)
    out, _ = consumer(x, cache=cache)
    assert out.shape == (1, 6, 32)
    assert torch.isfinite(out).all()
    assert isinstance(consumer.cache_after(6), BorrowedCache)
    assert consumer.cache_after(6).nbytes == 0


def test_a_shared_layer_has_no_cache_of_its_own():
    consumer = build_layer(small(), 5, seed=0)
    with pytest.raises(ValueError, match="reads layer 3's cache"):
        consumer.new_cache()
    with pytest.raises(ValueError, match="reads layer 3's cache"):
        consumer(torch.randn(1, 2, 32))


def test_a_shared_layer_refuses_tokens_its_source_has_not_seen():
    producer, consumer = build_layer(small(), 3, seed=0), build_layer(small(), 5, seed=0)
    cache = producer.new_cache()
    producer(torch.randn(1, 2, 32), cache=cache)
    with pytest.raises(ValueError, match="run layer 3 on these tokens first"):
        consumer(torch.randn(1, 3, 32), cache=cache)


@pytest.mark.parametrize("shared", [6, 7])
def test_shared_layers_must_leave_a_layer_that_computes_keys(shared):
    with pytest.raises(ValueError, match="num_kv_shared_layers"):
        describe_model(small(num_kv_shared_layers=shared))


def test_a_shared_layer_needs_an_earlier_layer_of_its_type():
    types = ["sliding_attention"] * 4 + ["full_attention"] * 2  # the full layers are both shared: no producer
    with pytest.raises(ValueError, match="num_kv_shared_layers and layer_types"):
        read_layer(small(layer_types=types), 0)


def test_a_negative_shared_layer_count_is_named():
    with pytest.raises(ValueError, match="num_kv_shared_layers"):
        read_layer(small(num_kv_shared_layers=-1), 0)


def test_gemma4_all_bidirectional_attention_is_refused():
    config = published_config("Gemma 4 31B")
    config["text_config"]["use_bidirectional_attention"] = "all"
    with pytest.raises(ValueError, match="use_bidirectional_attention"):
        read_layer(config, 0)


def test_the_e4b_layers_build_on_the_meta_device_with_hfs_shapes():
    config = published_config("Gemma 3n E4B")
    own, shared = build_layer(config, 19, device="meta"), build_layer(config, 34, device="meta")
    assert own.k_proj.weight.shape == (2 * 256, 2048)
    assert {name.split(".")[0] for name in shared.state_dict()} == {"q_proj", "q_norm", "o_proj"}
    assert math.prod(shared.q_proj.weight.shape) == 8 * 256 * 2048


@pytest.mark.parametrize("name", ["Gemma 3n E4B", "Gemma 4 31B"])
def test_a_layer_types_rope_parameters_must_be_a_dict(name):
    config = published_config(name)
    config["text_config"]["rope_parameters"] = {"full_attention": "proportional"}
    with pytest.raises(ValueError, match=r"rope_parameters\.full_attention"):
        describe_model(config)
