"""Llama 4's chunked local attention and NoPE layers, and SmolLM3's NoPE layers, without HF (test_peer_llama4_smollm3
holds them against HF's modules): what the caches hold and a decoding step reads, against closed forms written here
from the configs' numbers; cached decoding against one full forward; a chunk against the same layer run on that chunk
alone; the layers' kinds as transformers' config classes lay them out; and every malformed new field refused by name.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_core import describe_model, published_config
from attn_core.chunked import ChunkedKVCache, QueryTemperature
from attn_core.hf import build_layer, design_for, read_layer
from attn_core.options import AttentionOptions

from .examples import PROPERTY_SETTINGS, randn

GiB = 1 << 30
BF16 = 2
SCOUT_TOKEN = 2 * 8 * 128 * BF16  # keys and values of one token in one Scout layer: 8 KV heads of 128


def small_llama4(**changes) -> dict:
    return {
        "model_type": "llama4_text",
        "hidden_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "num_hidden_layers": 4,
        "attention_chunk_size": 5,
        "floor_scale": 3,
        "attn_scale": 0.5,
    } | changes


def small_smollm3(**changes) -> dict:
    return {
        "model_type": "smollm3",
        "hidden_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 4,
    } | changes


# --- what Scout holds --------------------------------------------------------------------------------------------------
def test_scout_holds_7_125_gib_at_128k_tokens_in_bf16():
    model = describe_model(published_config("Llama 4 Scout"))
    # 12 NoPE layers hold every token, 36 chunked layers one 8,192-token chunk
    held = 12 * 131072 * SCOUT_TOKEN + 36 * 8192 * SCOUT_TOKEN
    assert held == 7.125 * GiB
    assert model.cache_bytes(tokens=131072, batch=1, dtype="bfloat16") == held
    assert model.formula_bytes(tokens=131072, batch=1, dtype="bfloat16") == held


def test_scout_would_hold_24_gib_were_every_layer_global():
    config = published_config("Llama 4 Scout")
    config["text_config"]["layer_types"] = ["full_attention"] * 48
    held = 48 * 131072 * SCOUT_TOKEN
    assert held == 24 * GiB
    assert describe_model(config).cache_bytes(tokens=131072) == held


def test_scouts_layers_are_three_chunked_then_one_nope():
    model = describe_model(published_config("Llama 4 Scout"))
    assert model.layer_kinds == ["chunked", "chunked", "chunked", "nope"] * 12


# tokens seen -> tokens a chunked layer holds, and reads at the step of the last of them (C = 8192)
SAW = {1: 1, 2: 2, 8191: 8191, 8192: 8192, 8193: 1, 12000: 12000 - 8192, 16384: 8192, 16385: 1, 131073: 1}


@pytest.mark.parametrize(("tokens", "held"), SAW.items())
def test_a_chunked_layer_holds_and_reads_its_latest_chunk_rising_and_falling_like_a_saw(tokens, held):
    kinds = {k.kind: k for k in describe_model(published_config("Llama 4 Scout")).kinds(tokens=tokens)}
    assert kinds["chunked"].nbytes == 36 * held * SCOUT_TOKEN
    assert kinds["chunked"].read_nbytes == 36 * held * SCOUT_TOKEN
    assert kinds["nope"].nbytes == kinds["nope"].read_nbytes == 12 * tokens * SCOUT_TOKEN


def test_the_chunked_formula_names_the_chunk():
    formula = describe_model(published_config("Llama 4 Scout")).kinds(tokens=1)[0].formula
    assert formula == "2 · G · D · ((T − 1) mod C + 1) · B · b, G=8, D=128, C=8192"


def test_smollm3_3b_holds_every_token_in_all_36_layers():
    model = describe_model(published_config("SmolLM3-3B"))
    assert model.layer_kinds == ["full", "full", "full", "nope"] * 9
    # 4 KV heads of 2048 / 16 = 128
    assert model.cache_bytes(tokens=65536) == 36 * 2 * 4 * 128 * 65536 * BF16 == 4.5 * GiB


# --- a real chunked layer's cache, step by step ----------------------------------------------------------------------
def test_a_chunked_cache_measured_step_by_step_is_its_closed_form_and_its_meta_twin():
    config = small_llama4()
    layer = build_layer(config, 0, seed=0)
    _, shape = read_layer(config, 0)
    cache = layer.new_cache(2)
    x = randn(2, 23, 32)
    token = 2 * 2 * 8 * 4  # keys and values, 2 KV heads of 8, float32
    layer(x[:, :7], cache=cache)
    for t in range(7, 23):
        layer(x[:, t : t + 1], cache=cache)
        seen = t + 1
        held = (seen - 1) % 5 + 1
        assert isinstance(cache, ChunkedKVCache)
        assert cache.nbytes == cache.read_nbytes == 2 * held * token
        assert cache.nbytes == design_for(shape).cache_bytes(shape, seen, 2, 4)
        assert cache.nbytes == layer.cache_after(seen, batch_size=2).nbytes
        assert cache.k.shape == (2, 2, held, 8)


@pytest.mark.parametrize("layer_idx", [0, 3])  # chunked, NoPE with the query temperature
def test_cached_decoding_token_by_token_is_one_full_forward(layer_idx):
    layer = build_layer(small_llama4(), layer_idx, seed=1)
    x = randn(1, 17, 32, seed=2)
    full = layer(x)[0]
    cache = layer.new_cache(1)
    steps = torch.cat([layer(x[:, t : t + 1], cache=cache)[0] for t in range(17)], dim=1)
    assert (full - steps).abs().max().item() <= 1e-5


@PROPERTY_SETTINGS
@given(chunk=st.integers(1, 7), cuts=st.lists(st.integers(1, 14), max_size=4, unique=True))
def test_a_prompt_fed_in_any_pieces_is_one_full_pass_and_the_cache_its_closed_form(chunk, cuts):
    layer = build_layer(small_llama4(attention_chunk_size=chunk), 0, seed=4)
    x = randn(1, 15, 32, seed=5)
    full = layer(x)[0]
    cache = layer.new_cache(1)
    bounds = [0, *sorted(cuts), 15]
    pieces = [layer(x[:, a:b], cache=cache)[0] for a, b in itertools.pairwise(bounds)]
    assert (torch.cat(pieces, dim=1) - full).abs().max().item() <= 1e-5
    assert cache.nbytes == cache.read_nbytes == ((15 - 1) % chunk + 1) * 2 * 2 * 8 * 4


def test_a_chunk_attends_as_the_same_layer_run_on_that_chunk_alone():
    # RoPE scores depend on distances only, and a query sees nothing before its chunk
    layer = build_layer(small_llama4(), 0, seed=2)
    x = randn(1, 15, 32, seed=3)
    whole = layer(x)[0]
    for start in (0, 5, 10):
        alone = layer(x[:, start : start + 5])[0]
        assert (whole[:, start : start + 5] - alone).abs().max().item() <= 1e-5


def test_a_prompts_weights_stay_in_each_querys_chunk_and_give_the_same_output():
    layer = build_layer(small_llama4(), 0, seed=3)
    x = randn(1, 12, 32, seed=4)
    out, weights = layer(x, return_weights=True)
    assert weights is not None
    positions = torch.arange(12)
    outside = (positions[None, :] > positions[:, None]) | (positions[None, :] // 5 != positions[:, None] // 5)
    assert weights[..., outside].abs().max().item() == 0.0
    assert (weights.sum(-1) - 1).abs().max().item() <= 1e-6
    assert (out - layer(x)[0]).abs().max().item() <= 1e-6  # without weights: whole chunks side by side


def test_the_query_temperature_is_one_until_floor_scale_then_grows_by_log():
    temperature = QueryTemperature(floor_scale=8192, attn_scale=0.1)
    assert [temperature.factor(p) for p in (0, 8190)] == [1.0, 1.0]
    assert temperature.factor(8191) == pytest.approx(1 + 0.1 * math.log(2))
    assert temperature.factor(131071) == pytest.approx(1 + 0.1 * math.log(17))
    q = torch.ones(1, 1, 3, 2)
    scaled = temperature.scaled(q, 8190)
    assert scaled[0, 0, :, 0].tolist() == pytest.approx([temperature.factor(p) for p in (8190, 8191, 8192)])


def test_llama4s_qk_norm_has_no_parameters_so_the_state_dict_is_the_four_projections():
    names = set(build_layer(small_llama4(attention_bias=False), 0).state_dict())
    assert names == {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight"}


# --- kinds as transformers' config classes lay them out --------------------------------------------------------------
def test_llama4_kinds_follow_its_config_classs_layer_types_and_no_rope_layers():
    transformers = pytest.importorskip("transformers")
    config = transformers.Llama4TextConfig(num_hidden_layers=8, no_rope_layers=[1, 0, 1, 1, 0, 1, 1, 1])
    model = describe_model(config.to_dict())
    names = {"chunked_attention": "chunked", "full_attention": "nope"}
    assert model.layer_kinds == [names[t] for t in config.layer_types]
    wrapped = transformers.Llama4Config(text_config=config.to_dict()).to_dict()
    assert describe_model(wrapped).layer_kinds == model.layer_kinds


def test_an_empty_no_rope_layers_is_derived_for_llama4_but_refused_for_smollm3():
    assert describe_model(small_llama4(no_rope_layers=[])).layer_kinds == ["chunked"] * 3 + ["nope"]
    with pytest.raises(ValueError, match="no_rope_layers"):
        describe_model(small_smollm3(no_rope_layers=[]))


def test_smollm3_kinds_follow_its_config_class():
    transformers = pytest.importorskip("transformers")
    config = transformers.SmolLM3Config(num_hidden_layers=6, no_rope_layer_interval=3)
    assert describe_model(config.to_dict()).layer_kinds == [
        "full" if rope else "nope" for rope in config.no_rope_layers
    ]
    windowed = transformers.SmolLM3Config(num_hidden_layers=4, use_sliding_window=True, sliding_window=64)
    assert describe_model(windowed.to_dict()).layer_kinds == ["full", "full", "full", "sliding_nope"]


def test_a_nope_layer_holds_what_a_full_layer_holds():
    rope, nope = (describe_model(small_smollm3()).kinds(tokens=100)[i] for i in (0, 1))
    assert (rope.kind, nope.kind) == ("full", "nope")
    assert rope.nbytes / rope.count == nope.nbytes / nope.count


# --- bad input -------------------------------------------------------------------------------------------------------
LLAMA4_BAD = [
    ("attention_chunk_size", 0),
    ("attention_chunk_size", -8192),
    ("attention_chunk_size", 8.5),
    ("attention_chunk_size", "8192"),
    ("attention_chunk_size", None),
    ("no_rope_layers", [1, 1, 0]),
    ("no_rope_layers", [1, 2, 1, 0]),
    ("no_rope_layers", [1.0, 1.0, 1.0, 0.0]),
    ("no_rope_layers", "1110"),
    ("no_rope_layers", {"0": 1}),
    ("attn_temperature_tuning", "yes"),
    ("attn_temperature_tuning", -1),
    ("floor_scale", 0),
    ("floor_scale", 1.5),
    ("attn_scale", 0),
    ("attn_scale", -0.1),
    ("use_qk_norm", "true"),
    ("layer_types", ["sliding_attention"] * 4),
    ("layer_types", ["chunked_attention"] * 3),
]


@pytest.mark.parametrize(("field", "value"), LLAMA4_BAD)
def test_a_malformed_llama4_field_is_a_value_error_naming_it(field, value):
    config = small_llama4(**{field: value})
    with pytest.raises(ValueError, match=field):
        describe_model(config)
    with pytest.raises(ValueError, match=field):
        describe_model({"model_type": "llama4", "text_config": config})


def test_no_rope_layer_interval_is_checked_where_it_lays_out_the_layers():
    with pytest.raises(ValueError, match="no_rope_layer_interval"):
        describe_model(small_llama4(no_rope_layer_interval=0))
    with pytest.raises(ValueError, match="no_rope_layer_interval"):
        describe_model(small_smollm3(no_rope_layer_interval=-4))


SMOLLM3_BAD = [
    ("no_rope_layers", [1, 1]),
    ("no_rope_layers", [1, 1, 1, -1]),
    ("use_sliding_window", "no"),
    ("layer_types", ["sliding_attention"] * 4),
]


@pytest.mark.parametrize(("field", "value"), SMOLLM3_BAD)
def test_a_malformed_smollm3_field_is_a_value_error_naming_it(field, value):
    with pytest.raises(ValueError, match=field):
        describe_model(small_smollm3(**{field: value}))


def test_a_window_of_zero_on_smollm3s_nope_layers_is_refused_by_name():
    with pytest.raises(ValueError, match="sliding_window"):
        describe_model(small_smollm3(use_sliding_window=True, sliding_window=0))


def test_the_chunk_option_refuses_zero_and_a_window_beside_it():
    with pytest.raises(ValueError, match="chunk"):
        AttentionOptions(chunk=0)
    with pytest.raises(ValueError, match="chunk and window"):
        AttentionOptions(chunk=8, window=4)


def test_a_chunked_layer_has_no_quantised_cache():
    with pytest.raises(ValueError, match="chunks"):
        build_layer(small_llama4(), 0).new_cache(1, bits=4)
