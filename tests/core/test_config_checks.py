"""Any config.json, however malformed, gives a number or a ValueError naming the field and its value, within a second
(DESIGN.md's budget): the variants found to break the reader, each written out, then every published config mutated
at random (types, signs, sizes, nesting, deletions, wrong containers) through describe_model, cache_bytes, read_bytes
and build_layer on the meta device.

Times are CPU seconds of this process (time.process_time): on a machine shared with other jobs, wall time measures
the neighbours."""

from __future__ import annotations

import copy
import json
import math
import time
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from attn_core import MAX_LAYERS, PUBLISHED, ConfigFieldError, PastAnyMachine, describe_model
from attn_core.hf import build_layer

BUDGET_S = 1.0
LLAMA, KIMI, V3 = "Llama 3 8B", "Kimi Linear 48B-A3B", "DeepSeek-V3"


def changed(name: str, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of a published config with the field at path (keys of nested dicts) set to value."""
    config = copy.deepcopy(PUBLISHED[name])
    target = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return config


def outcome(config: Any, dtype: Any = "bfloat16", layer: int = 0) -> int | ValueError:
    """The bytes held and read at 128K tokens (and layer `layer` built on the meta device), or the ValueError."""
    try:
        model = describe_model(config)
        total = model.cache_bytes(tokens=131072, dtype=dtype) + model.read_bytes(tokens=131072, dtype=dtype)
        build_layer(config, layer, device="meta")
    except ValueError as error:
        return error
    return total


def timed(config: Any, dtype: Any = "bfloat16", layer: int = 0) -> tuple[int | ValueError, float]:
    start = time.process_time()
    result = outcome(config, dtype, layer)
    return result, time.process_time() - start


@pytest.fixture(scope="module", autouse=True)
def warm() -> None:
    """Each design's meta-device path once: torch loads some meta kernels at their first use (seconds, once per
    process), which is no config's doing."""
    for config in PUBLISHED.values():
        outcome(config)


# --- the variants that broke the reader, each named ---------------------------------------------------------------
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}
LLAMA3 = {**YARN, "rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0}
REFUSED = {  # config -> (field named, value named)
    "yarn factor as text": (changed(LLAMA, ("rope_scaling",), {**YARN, "factor": "4"}), "rope_scaling.factor", "'4'"),
    "yarn mscale as text": (changed(V3, ("rope_scaling", "mscale"), "1"), "rope_scaling.mscale", "'1'"),
    "yarn mscale_all_dim as text": (
        changed(V3, ("rope_scaling", "mscale_all_dim"), "1"),
        "rope_scaling.mscale_all_dim",
        "'1'",
    ),
    "yarn original length as text": (
        changed(LLAMA, ("rope_scaling",), {**YARN, "original_max_position_embeddings": "8192"}),
        "rope_scaling.original_max_position_embeddings",
        "'8192'",
    ),
    "yarn beta_fast as text": (changed(LLAMA, ("rope_scaling",), {**YARN, "beta_fast": "32"}), "beta_fast", "'32'"),
    "yarn truncate as text": (changed(LLAMA, ("rope_scaling",), {**YARN, "truncate": "no"}), "truncate", "'no'"),
    "yarn factor infinite": (changed(LLAMA, ("rope_scaling",), {**YARN, "factor": math.inf}), "factor", "inf"),
    "llama3 low_freq_factor as text": (
        changed(LLAMA, ("rope_scaling",), {**LLAMA3, "low_freq_factor": "1"}),
        "rope_scaling.low_freq_factor",
        "'1'",
    ),
    "llama3 high_freq_factor as text": (
        changed(LLAMA, ("rope_scaling",), {**LLAMA3, "high_freq_factor": "4"}),
        "rope_scaling.high_freq_factor",
        "'4'",
    ),
    "linear factor in a list": (
        changed(LLAMA, ("rope_scaling",), {"rope_type": "linear", "factor": [2]}),
        "rope_scaling.factor",
        "[2]",
    ),
    "dynamic scaling": (
        changed(LLAMA, ("rope_scaling",), {"rope_type": "dynamic", "factor": 2.0}),
        "rope_scaling.rope_type",
        "'dynamic'",
    ),
    "longrope scaling": (
        changed(LLAMA, ("rope_parameters",), {"rope_type": "longrope", "short_factor": [1.0]}),
        "rope_parameters.rope_type",
        "'longrope'",
    ),
    "rope_theta infinite": (changed(LLAMA, ("rope_theta",), math.inf), "rope_theta", "inf"),
    "ten million layers": (changed(LLAMA, ("num_hidden_layers",), 10**7), "num_hidden_layers", "10000000"),
    "one layer past the limit": (changed(LLAMA, ("num_hidden_layers",), MAX_LAYERS + 1), "num_hidden_layers", "4097"),
    "head_dim 2^40": (changed(LLAMA, ("head_dim",), 2**40), "head_dim", "1099511627776"),
    "hidden_size 10^15": (changed(LLAMA, ("hidden_size",), 10**15), "hidden_size", "1000000000000000"),
    "context 10^30": (changed(LLAMA, ("max_position_embeddings",), 10**30), "max_position_embeddings", "1" + "0" * 30),
    "bias as 1": (changed(LLAMA, ("attention_bias",), 1), "attention_bias", "1"),
    "kv heads not dividing heads": (changed(LLAMA, ("num_key_value_heads",), 5), "num_key_value_heads", "5"),
    "a Kimi layer full and KDA": (
        changed(KIMI, ("linear_attn_config", "kda_layers"), list(range(1, 28))),
        "linear_attn_config.kda_layers",
        "layer 4",
    ),
    "a Kimi layer past the last": (
        changed(KIMI, ("linear_attn_config", "full_attn_layers"), [4, 8, 12, 16, 20, 24, 27, 28]),
        "linear_attn_config.full_attn_layers",
        "layer 28",
    ),
    "a Kimi layer numbered 0": (
        changed(KIMI, ("linear_attn_config", "full_attn_layers"), [0, 4, 8, 12, 16, 20, 24, 27]),
        "linear_attn_config.full_attn_layers",
        "layer 0",
    ),
    "Kimi layers as text": (
        changed(KIMI, ("linear_attn_config", "full_attn_layers"), "4"),
        "linear_attn_config.full_attn_layers",
        "'4'",
    ),
    "Kimi layer numbers as floats": (
        changed(KIMI, ("linear_attn_config", "full_attn_layers"), [4.0, 8.0]),
        "linear_attn_config.full_attn_layers",
        "layer 4.0",
    ),
    "Kimi layer list null": (
        changed(KIMI, ("linear_attn_config", "kda_layers"), None),
        "linear_attn_config.kda_layers",
        "None",
    ),
    "Kimi head_dim as text": (
        changed(KIMI, ("linear_attn_config", "head_dim"), "128"),
        "linear_attn_config.head_dim",
        "'128'",
    ),
    "Kimi bias as text": (changed(KIMI, ("attention_bias",), "yes"), "attention_bias", "'yes'"),
    "Kimi linear_attn_config a list": (changed(KIMI, ("linear_attn_config",), [1]), "linear_attn_config", "[1]"),
    "Gemma text_config field as text": (
        changed("Gemma 3 27B", ("text_config", "sliding_window"), "1024"),
        "'text_config.sliding_window'",
        "'1024'",
    ),
    "model_type a list": (changed(LLAMA, ("model_type",), ["llama"]), "model_type", "['llama']"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_malformed_field_is_a_value_error_naming_the_field_and_its_value_within_a_second(case):
    config, name, value = REFUSED[case]
    result, seconds = timed(config)
    assert isinstance(result, ValueError), f"{case}: answered {result}"
    assert name in str(result), str(result)
    assert value in str(result), str(result)
    assert seconds < BUDGET_S


def test_a_kimi_layer_listed_twice_is_refused_not_silently_linear():
    config = changed(KIMI, ("linear_attn_config", "kda_layers"), list(range(1, 28)))
    with pytest.raises(ConfigFieldError) as refused:
        describe_model(config)
    assert refused.value.need.kind == "layer_once"
    assert (refused.value.field, refused.value.need.other) == (
        "linear_attn_config.kda_layers",
        "linear_attn_config.full_attn_layers",
    )


def test_a_field_error_carries_the_field_its_value_and_what_it_needs():
    with pytest.raises(ConfigFieldError) as refused:
        describe_model(changed(LLAMA, ("head_dim",), 2**40))
    error = refused.value
    assert (error.field, error.value, error.need.kind) == ("head_dim", 2**40, "whole")
    assert error.need.minimum <= 128 <= error.need.maximum < 2**40


@pytest.mark.parametrize("dtype", [torch.int8, torch.float64, torch.bool, "int8", 8, None, ["bfloat16"]])
def test_a_dtype_outside_the_offered_three_is_refused_whatever_its_type(dtype):
    result, _ = timed(PUBLISHED[LLAMA], dtype)
    assert isinstance(result, ValueError)
    assert "is not offered" in str(result)


def test_a_cache_past_any_machine_is_refused_naming_the_limit():
    """Llama 3 8B keeps 128 KiB per token in its 32 layers: 2^30 tokens of 2^16 sequences is 2^63 bytes."""
    with pytest.raises(PastAnyMachine, match="more than any machine holds") as refused:
        describe_model(PUBLISHED[LLAMA]).cache_bytes(tokens=2**30, batch=2**16)
    assert refused.value.footprint.nbytes == 2 * 8 * 128 * 2 * 32 * 2**46 == 2**63
    assert str(refused.value.limit) in str(refused.value).replace(",", "")


def test_weights_past_any_machine_are_refused_before_anything_is_allocated():
    """Widths each within bounds whose product is not: q_proj of 2^19 x 2^12·2^19 numbers is 2^52 float32 bytes."""
    config = changed(LLAMA, ("hidden_size",), 2**19)
    config |= {"num_attention_heads": 2**12, "num_key_value_heads": 2**12, "head_dim": 2**19}
    with pytest.raises(PastAnyMachine, match="one layer's weights"):
        build_layer(config, 0, seed=0)


# Fields that list every layer (a string pattern too): repeated to the layer limit
PER_LAYER = ("layer_types", "compress_ratios", "no_rope_layers", "attn_type_list", "hybrid_override_pattern")


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_a_published_model_at_the_layer_limit_is_answered_within_a_second(name):
    config = copy.deepcopy(PUBLISHED[name])
    text = config.get("text_config", config)
    text["num_hidden_layers"] = MAX_LAYERS
    for key in PER_LAYER:
        if key in text:
            text[key] = (text[key] * MAX_LAYERS)[:MAX_LAYERS]
    if "linear_attn_config" in text:
        text["linear_attn_config"] |= {
            "full_attn_layers": list(range(4, MAX_LAYERS + 1, 4)),
            "kda_layers": [i for i in range(1, MAX_LAYERS + 1) if i % 4],
        }
    result, seconds = timed(config)
    assert isinstance(result, int)
    assert result > 0
    assert seconds < BUDGET_S


# --- every published config, mutated ------------------------------------------------------------------------------
def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into nested dicts and lists: where a mutation can land."""
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in [(*prefix, key), *paths(item, (*prefix, key))]]
    if isinstance(value, list):
        return [p for i, item in enumerate(value[:3]) for p in [(*prefix, i), *paths(item, (*prefix, i))]]
    return []


def number_like(value: Any) -> list[Any]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [0, -1, 1.5, 2**63]
    return [-value, 0, value * 2**40, value * 10**30, value + 0.5, math.inf, math.nan, str(value), [value]]


MUTATIONS = ("type", "sign or size", "nest", "delete", "container", "extreme")


def mutated(value: Any, how: str, draw: Any) -> Any:
    """value changed one way; DELETE to drop its key."""
    if how == "type":
        return draw(st.sampled_from([str(value), [value], {"value": value}, True, False, None, 1.0, "", "8"]))
    if how == "sign or size":
        return draw(st.sampled_from(number_like(value)))
    if how == "nest":
        return {"nested": value} if draw(st.booleans()) else [value, value]
    if how == "container":
        if isinstance(value, dict):
            return list(value.items()) if draw(st.booleans()) else list(value)
        if isinstance(value, list):
            return dict(enumerate(value)) if draw(st.booleans()) else json.dumps(value)
        return {"value": value}
    if how == "extreme":
        return draw(st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=8)))
    return DELETE


DELETE = object()
PROFILE = hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROFILE
@given(
    st.sampled_from(list(PUBLISHED)),
    st.data(),
    st.sampled_from(MUTATIONS),
    st.sampled_from(["bfloat16", "float32", torch.float16, torch.int8, torch.float64, "int4", 16]),
)
def test_every_published_config_mutated_is_a_number_or_a_value_error_within_a_second(name, data, how, dtype):
    config = copy.deepcopy(PUBLISHED[name])
    path = data.draw(st.sampled_from(paths(config)))
    parent = config
    for key in path[:-1]:
        parent = parent[key]
    value = mutated(parent[path[-1]], how, data.draw)
    if value is DELETE and isinstance(parent, dict):
        del parent[path[-1]]
    elif value is not DELETE:
        parent[path[-1]] = value
    layer = data.draw(st.integers(0, 70))
    result, seconds = timed(config, dtype, layer)
    assert isinstance(result, ValueError | int), result
    if isinstance(result, int):
        assert result >= 0
    else:
        assert str(result), "a refusal says why"
    assert seconds < BUDGET_S, f"{name} {path} {how}: {seconds:.2f} s"
