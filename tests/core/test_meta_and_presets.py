"""Published models at full size on torch.device("meta"): real forward passes, shapes and bytes, no memory."""

from __future__ import annotations

import pytest
import torch

from attn_core import FORMER_NAMES, PRESETS, PUBLISHED, SOURCES, build_attention, kv_cache_bytes, parameter_count
from attn_core.hf import read_layer

META = torch.device("meta")
LONG = 32 * 1024


def meta_prefill(name: str, tokens: int, dtype=torch.bfloat16, batch: int = 1):
    cfg = PRESETS[name].attention
    layer = build_attention(cfg, device=META, dtype=dtype)
    cache = layer.new_cache(batch)
    out, _ = layer(torch.empty(batch, tokens, cfg.d_model, device=META, dtype=dtype), cache=cache)
    return out, cache


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", ["DeepSeek-V3", "Llama 3 70B"])
def test_32k_token_forward_on_meta_fills_a_cache_of_the_closed_form_size(name, dtype):
    _, cache = meta_prefill(name, LONG, dtype)
    assert (cache.seq_len, cache.nbytes) == (LONG, kv_cache_bytes(PRESETS[name].attention, 1, LONG, dtype))


@pytest.mark.parametrize("name", ["DeepSeek-V3", "Llama 3 70B"])
def test_32k_token_forward_on_meta_returns_a_meta_tensor_of_the_input_shape(name):
    out, _ = meta_prefill(name, LONG)
    assert (out.device, tuple(out.shape), out.dtype) == (
        META,
        (1, LONG, PRESETS[name].attention.d_model),
        torch.bfloat16,
    )


@pytest.mark.parametrize("name", ["DeepSeek-V3", "Llama 3 70B"])
def test_decode_after_a_32k_prompt_on_meta_adds_one_tokens_bytes(name):
    cfg = PRESETS[name].attention
    layer = build_attention(cfg, device=META, dtype=torch.bfloat16)
    cache = layer.new_cache(1)
    layer(torch.empty(1, LONG, cfg.d_model, device=META, dtype=torch.bfloat16), cache=cache)
    before = cache.nbytes
    layer(torch.empty(1, 1, cfg.d_model, device=META, dtype=torch.bfloat16), cache=cache)
    assert cache.nbytes - before == kv_cache_bytes(cfg, 1, 1, torch.bfloat16)


def test_deepseek_v3_caches_576_numbers_per_token_per_layer():
    _, cache = meta_prefill("DeepSeek-V3", LONG)  # 512 latent + 64 rotary key, 2 bytes each in bfloat16
    assert cache.nbytes == LONG * (512 + 64) * 2
    assert cache.shapes() == {"c_kv": (1, 1, LONG, 512), "k_rope": (1, 1, LONG, 64)}


def test_llama3_70b_caches_2048_numbers_per_token_per_layer():
    _, cache = meta_prefill("Llama 3 70B", LONG)  # keys and values of 8 KV heads of 128
    assert cache.nbytes == LONG * 2 * 8 * 128 * 2
    assert cache.shapes() == {"k": (1, 8, LONG, 128), "v": (1, 8, LONG, 128)}


def test_deepseek_v2_mla_caches_as_much_as_gqa_with_2_25_groups_of_128():
    # DeepSeek-V2 paper, table 1: MLA's cache per token equals GQA's with 2.25 groups, (d_c + d_h^R) = 4.5 d_h.
    _, cache = meta_prefill("DeepSeek-V2", 1024)
    per_token = cache.nbytes // (1024 * 2)
    assert per_token == 2 * 2.25 * 128 == 4.5 * 128 == 576


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_runs_prefill_and_decode_on_meta_with_closed_form_bytes(name):
    cfg = PRESETS[name].attention
    layer = build_attention(cfg, device=META, dtype=torch.bfloat16)
    cache = layer.new_cache(2)
    layer(torch.empty(2, 100, cfg.d_model, device=META, dtype=torch.bfloat16), cache=cache)
    layer(torch.empty(2, 1, cfg.d_model, device=META, dtype=torch.bfloat16), cache=cache)
    assert cache.nbytes == kv_cache_bytes(cfg, 2, 101, torch.bfloat16)


def test_building_on_meta_allocates_no_parameter_storage():
    layer = build_attention(PRESETS["DeepSeek-V3"].attention, seed=0, device=META)  # a seed does not materialise
    assert all(p.is_meta for p in layer.parameters())


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_names_its_source_and_size(name):
    preset = PRESETS[name]
    assert preset.name == name
    assert preset.source
    assert preset.n_layers > 0
    assert preset.context_len > 0
    assert preset.total_params > 1e8


def test_gpt2_preset_adds_up_to_its_published_parameter_count():
    """GPT-2 small, counted from its config (vocab 50257, 1024 positions, 12 layers of width 768, MLP 4x, tied
    output embedding): 124,439,808. Its attention part is our layer's parameter count."""
    preset = PRESETS["GPT-2"]
    d, layers = preset.attention.d_model, preset.n_layers
    attention = parameter_count(preset.attention)
    assert attention == (d * 3 * d + 3 * d) + (d * d + d)  # fused c_attn and c_proj, with biases
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)
    total = 50257 * d + preset.context_len * d + layers * (attention + mlp + 2 * 2 * d) + 2 * d
    assert total == 124_439_808
    assert preset.total_params == pytest.approx(total, rel=1e-3)


def test_llama3_70b_preset_has_the_published_attention_shape():
    cfg = PRESETS["Llama 3 70B"].attention  # meta-llama/Meta-Llama-3-70B config.json
    assert (cfg.variant, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.rope_theta) == (
        "gqa",
        8192,
        64,
        8,
        128,
        500000.0,
    )


def test_deepseek_v3_preset_has_the_published_attention_shape():
    cfg = PRESETS["DeepSeek-V3"].attention  # deepseek-ai/DeepSeek-V3 config.json
    assert (
        cfg.d_model,
        cfg.n_heads,
        cfg.kv_lora_rank,
        cfg.q_lora_rank,
        cfg.qk_nope_head_dim,
        cfg.qk_rope_head_dim,
        cfg.v_head_dim,
        cfg.rope_interleave,
    ) == (7168, 128, 512, 1536, 128, 64, 128, True)


# The published models' presets as they were written out before they were derived from attn_core.published
# (variant, d_model, heads, KV heads, rope_theta; layers, context, window): the derivation must give the same.
WRITTEN_OUT = {
    "SmolLM2-135M": (("gqa", 576, 9, 3, 100000.0), 30, 8192, None),
    "Llama 3 8B": (("gqa", 4096, 32, 8, 500000.0), 32, 8192, None),
    "Mistral 7B": (("gqa", 4096, 32, 8, 10000.0), 32, 32768, 4096),
    "MiniMax-M2": (("gqa", 3072, 48, 8, 5000000.0), 62, 196608, None),
    "DeepSeek-V3": (("mla", 7168, 128, 128, 10000.0), 61, 163840, None),
}


@pytest.mark.parametrize("name", WRITTEN_OUT)
def test_a_published_models_preset_is_its_published_config_read_by_the_core(name):
    preset, hf = PRESETS[name], PUBLISHED[name]
    cfg = preset.attention
    shape, layers, context, window = WRITTEN_OUT[name]
    assert (cfg.variant, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.rope_theta) == shape
    assert (preset.n_layers, preset.context_len, preset.sliding_window) == (layers, context, window)
    assert preset.attention == read_layer(hf, 0)[1].attention
    assert preset.source == SOURCES[name]


def test_every_model_both_registries_hold_is_derived_and_named_as_published():
    assert set(PRESETS) & set(PUBLISHED) == set(WRITTEN_OUT)
    assert set(FORMER_NAMES.values()) <= set(PRESETS)
    assert not set(FORMER_NAMES) & set(PRESETS)
