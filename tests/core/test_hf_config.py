"""describe_model and build_layer read published config.json files: every layer's kind, its cache measured on the
meta device equal to the per-kind formula written out here (not the library's), and clear errors for bad input."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from attn_core.hf import build_layer, describe_model, read_layer
from attn_core.published import DEEPSEEK_V3, GEMMA3_27B, GPT_OSS_120B, LLAMA3_8B, MISTRAL_7B, PUBLISHED, QWEN3_8B

BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


# --- the formulas, per layer kind, written from the papers' definitions ------------------------------------------
def full(kv_heads: int, head_dim: int):
    """A full layer keeps keys and values of every token: 2 · G · D numbers per token."""
    return lambda tokens, batch, size: 2 * kv_heads * head_dim * tokens * batch * size


def sliding(kv_heads: int, head_dim: int, window: int):
    """A sliding layer keeps the window - 1 latest tokens (the next query's window besides itself)."""
    return lambda tokens, batch, size: 2 * kv_heads * head_dim * min(tokens, window - 1) * batch * size


def latent(kv_lora_rank: int, rope_dim: int):
    """MLA keeps the latent and the shared rotary key: d_c + d_h^R numbers per token."""
    return lambda tokens, batch, size: (kv_lora_rank + rope_dim) * tokens * batch * size


# (kind, count, formula) per model, from the configs' numbers in attn_core.published (the models whose designs this
# file specifies; the others are specified with their designs)
EXPECTED = {
    "gpt-oss-120b": [("sliding", 18, sliding(8, 64, 128)), ("full", 18, full(8, 64))],
    "Gemma 3 27B": [("sliding", 52, sliding(16, 128, 1024)), ("full", 10, full(16, 128))],
    "Llama 3 8B": [("full", 32, full(8, 4096 // 32))],
    "Mistral 7B": [("sliding", 32, sliding(8, 4096 // 32, 4096))],
    "Qwen3-8B": [("full", 36, full(8, 128))],
    "DeepSeek-V3": [("mla", 61, latent(512, 64))],
    "SmolLM2-135M": [("full", 30, full(3, 576 // 9))],
}
LENGTHS = [0, 1, 127, 128, 129, 1023, 1024, 1025, 4096, 131072, 1 << 20]


@pytest.mark.parametrize("model", EXPECTED)
def test_layer_kinds_are_the_published_pattern(model):
    kinds = describe_model(PUBLISHED[model]).layer_kinds
    assert [(kind, kinds.count(kind)) for kind in dict.fromkeys(kinds)] == [
        (kind, count) for kind, count, _ in EXPECTED[model]
    ]


def test_gemma3_has_one_global_layer_in_six():
    kinds = describe_model(GEMMA3_27B).layer_kinds
    assert [i for i, kind in enumerate(kinds) if kind == "full"] == list(range(5, 62, 6))


@pytest.mark.parametrize("model", EXPECTED)
@pytest.mark.parametrize("tokens", LENGTHS)
def test_cache_bytes_equal_the_per_kind_formula(model, tokens):
    expected = sum(count * formula(tokens, 1, 2) for _, count, formula in EXPECTED[model])
    assert describe_model(PUBLISHED[model]).cache_bytes(tokens=tokens, batch=1, dtype="bfloat16") == expected


@pytest.mark.parametrize("model", EXPECTED)
@pytest.mark.parametrize(("batch", "dtype"), [(3, "float32"), (8, "float16")])
def test_cache_bytes_scale_with_batch_and_element_size(model, batch, dtype):
    tokens = 5000
    expected = sum(count * formula(tokens, batch, BYTES[dtype]) for _, count, formula in EXPECTED[model])
    assert describe_model(PUBLISHED[model]).cache_bytes(tokens=tokens, batch=batch, dtype=dtype) == expected


@pytest.mark.parametrize("model", EXPECTED)
def test_each_kind_reports_its_count_bytes_and_formula(model):
    tokens = 200_000
    summaries = describe_model(PUBLISHED[model]).kinds(tokens=tokens, batch=1, dtype="bfloat16")
    assert [(s.kind, s.count, s.nbytes) for s in summaries] == [
        (kind, count, count * formula(tokens, 1, 2)) for kind, count, formula in EXPECTED[model]
    ]
    for summary in summaries:
        assert "· T · B · b" in summary.formula or "min(T" in summary.formula


def test_the_sliding_formula_names_its_window():
    (sliding_kind, full_kind) = describe_model(GPT_OSS_120B).kinds(tokens=10, batch=1, dtype="bfloat16")
    assert sliding_kind.formula == "2 · G · D · min(T, W − 1) · B · b, G=8, D=64, W=128"
    assert full_kind.formula == "2 · G · D · T · B · b, G=8, D=64"


def test_a_decoding_step_reads_the_sliding_layers_window_and_every_full_layers_cache():
    # the step of token T reads its window (itself and the W - 1 before) on sliding layers, all T tokens on full ones
    tokens, per_token = 131072, 2 * 8 * 64 * 2
    expected = 18 * per_token * 128 + 18 * per_token * tokens
    assert describe_model(GPT_OSS_120B).read_bytes(tokens=tokens, batch=1, dtype="bfloat16") == expected


def test_the_library_closed_form_agrees_with_the_meta_device_caches():
    for config in [PUBLISHED[model] for model in EXPECTED]:
        model = describe_model(config)
        assert model.formula_bytes(tokens=777_777) == model.cache_bytes(tokens=777_777)


@pytest.mark.parametrize("model", EXPECTED)
def test_every_layer_builds_on_the_meta_device(model):
    config = PUBLISHED[model]
    layers = describe_model(config).layer_kinds
    for idx in {kind: i for i, kind in enumerate(layers)}.values():  # one layer of each kind
        layer = build_layer(config, idx, device="meta", dtype="bfloat16")
        assert all(p.device.type == "meta" and p.dtype == torch.bfloat16 for p in layer.parameters())


def test_gpt_oss_layers_have_hfs_parameter_names():
    names = set(build_layer(GPT_OSS_120B, 0, device="meta").state_dict())
    projections = {f"{p}_proj.{w}" for p in "qkvo" for w in ("weight", "bias")}
    assert names == projections | {"sinks"}


def test_gemma3_and_qwen3_layers_have_q_and_k_norms():
    for config in (GEMMA3_27B, QWEN3_8B):
        names = set(build_layer(config, 0, device="meta").state_dict())
        assert {"q_norm.weight", "k_norm.weight"} <= names


def test_gemma3_scales_scores_by_query_pre_attn_scalar_and_rope_by_layer_kind():
    _, local = read_layer(GEMMA3_27B, 0)
    _, global_ = read_layer(GEMMA3_27B, 5)
    assert local.options.scale == global_.options.scale == 168**-0.5
    assert (local.attention.rope_theta, local.options.rope_scaling.kind) == (10000.0, "default")
    assert (global_.attention.rope_theta, global_.options.rope_scaling.kind) == (1_000_000.0, "linear")
    assert global_.options.rope_scaling.factor == 8.0


def test_deepseek_v3_scales_scores_by_yarns_mscale_squared():
    _, shape = read_layer(DEEPSEEK_V3, 0)
    mscale = 0.1 * 1.0 * math.log(40) + 1.0
    assert shape.options.scale == pytest.approx(mscale**2 / math.sqrt(128 + 64), rel=1e-12)
    assert shape.options.rope_scaling.attention_factor == 1.0  # mscale / mscale_all_dim


def test_an_old_rope_scaling_and_the_new_rope_parameters_read_alike():
    old = {**LLAMA3_8B, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}  # fmt: skip
    new = {**LLAMA3_8B, "rope_scaling": None, "rope_parameters": {**old["rope_scaling"], "rope_theta": 500000.0}}
    assert read_layer(old, 0) == read_layer(new, 0)
    assert read_layer(old, 0)[1].options.rope_scaling.kind == "llama3"


# --- bad input --------------------------------------------------------------------------------------------------
def broken(config: dict, **changes) -> dict:
    changed = copy.deepcopy(config)
    for key, value in changes.items():
        if value is DROP:
            del changed[key]
        else:
            changed[key] = value
    return changed


DROP = object()

BAD_CONFIGS = {
    "unsupported model_type": (broken(LLAMA3_8B, model_type="bert"), "model_type='bert' is not supported"),
    "no model_type": (broken(LLAMA3_8B, model_type=DROP), "supported are"),
    "missing hidden_size": (broken(LLAMA3_8B, hidden_size=DROP), "'hidden_size' is missing"),
    "heads as text": (broken(LLAMA3_8B, num_attention_heads="32"), "'num_attention_heads' must be a whole number"),
    "negative layers": (broken(LLAMA3_8B, num_hidden_layers=-1), "'num_hidden_layers' must be a whole number"),
    "window longer than the context": (broken(MISTRAL_7B, sliding_window=65536), "larger than the context"),
    "window as text": (broken(MISTRAL_7B, sliding_window="4k"), "'sliding_window' must be a whole number"),
    "kv heads not dividing heads": (broken(LLAMA3_8B, num_key_value_heads=5), "not a multiple"),
    "layer_types too short": (broken(GPT_OSS_120B, layer_types=["full_attention"]), "'layer_types' must list 36"),
    "unsupported rope": (broken(LLAMA3_8B, rope_scaling={"rope_type": "dynamic", "factor": 2.0}), "'dynamic'"),
    "gemma3 without text_config": ({"model_type": "gemma3"}, "needs text_config"),
    "not a dict": ([("model_type", "llama")], "must be a dict"),
}


@pytest.mark.parametrize("case", BAD_CONFIGS)
def test_a_bad_config_is_a_value_error_naming_the_problem(case):
    config, message = BAD_CONFIGS[case]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        describe_model(config).cache_bytes(tokens=10)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tokens": -1}, "tokens must be a whole number"),
        ({"tokens": 10**12}, "tokens must be a whole number"),
        ({"tokens": 2.5}, "tokens must be a whole number"),
        ({"tokens": 10, "batch": 0}, "batch must be a whole number"),
        ({"tokens": 10, "dtype": "int8"}, "dtype='int8' is not offered"),
    ],
)
def test_bad_cache_arguments_are_value_errors_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        describe_model(GPT_OSS_120B).cache_bytes(**kwargs)


@pytest.mark.parametrize("layer_idx", [-1, 36, "3"])
def test_a_layer_outside_the_model_is_a_value_error(layer_idx):
    with pytest.raises(ValueError, match="this model has layers 0 to 35"):
        build_layer(GPT_OSS_120B, layer_idx, device="meta")


def test_a_width_too_large_for_torch_is_a_value_error_naming_the_field_not_torchs():
    too_wide = {**LLAMA3_8B, "hidden_size": 2**31}
    with pytest.raises(ValueError, match="'hidden_size' must be a whole number from 1 to 524,288, got 2147483648"):
        describe_model(too_wide).cache_bytes(tokens=1024)
    with pytest.raises(ValueError, match="'hidden_size' must be a whole number"):
        build_layer(too_wide, 0, device="meta")
