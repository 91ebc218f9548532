"""attn_core.hf reads the designs after MLA that live in their own modules: every layer's kind as transformers'
config class lays the layers out, built as that design's layer, its cache bytes as that design's closed form."""

from __future__ import annotations

import pytest
import torch

from attn_core import CachedLayer, KVCache
from attn_core.compressed import CompressedAttention
from attn_core.dsa import DeepSeekSparseAttention
from attn_core.gated import GatedAttention
from attn_core.hf import build_layer, describe_model
from attn_core.latent import MultiHeadLatentAttention
from attn_core.linear import GatedDeltaNet, KimiDeltaAttention
from attn_core.published import DEEPSEEK_V3

transformers = pytest.importorskip("transformers")

# model_type -> (transformers' config class, HF layer type -> (our kind, our layer class))
FAMILIES = {
    "qwen3_next": (
        "Qwen3NextConfig",
        {"linear_attention": ("linear", GatedDeltaNet), "full_attention": ("full", GatedAttention)},
    ),
    "qwen3_5": (
        "Qwen3_5Config",
        {"linear_attention": ("linear", GatedDeltaNet), "full_attention": ("full", GatedAttention)},
    ),
    "kimi_linear": (
        "KimiLinearConfig",
        {"linear_attention": ("linear", KimiDeltaAttention), "full_attention": ("mla", MultiHeadLatentAttention)},
    ),
    "deepseek_v4": (
        "DeepseekV4Config",
        {
            "sliding_attention": ("sliding", CompressedAttention),
            "compressed_sparse_attention": ("csa", CompressedAttention),
            "heavily_compressed_attention": ("hca", CompressedAttention),
        },
    ),
}


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_layer_kinds_follow_the_config_class_layer_types(model_type):
    class_name, kinds = FAMILIES[model_type]
    hf_config = getattr(transformers, class_name)()
    layer_types = getattr(hf_config, "text_config", hf_config).layer_types  # Qwen3.5: a vision-language wrapper
    model = describe_model(hf_config.to_dict())
    assert model.layer_kinds == [kinds[t][0] for t in layer_types]
    for kind in set(layer_types):
        layer = build_layer(hf_config.to_dict(), layer_types.index(kind), device="meta")
        assert type(layer) is kinds[kind][1]


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_every_layer_kind_is_a_cached_layer_with_a_kv_cache(model_type):
    class_name, _ = FAMILIES[model_type]
    hf = getattr(transformers, class_name)().to_dict()
    model = describe_model(hf)
    for kind in set(model.layer_kinds):
        layer = build_layer(hf, model.layer_kinds.index(kind), device="meta")
        assert isinstance(layer, CachedLayer)
        cache = layer.cache_after(300)
        assert isinstance(cache, KVCache)
        assert cache.seq_len == 300


def test_every_deepseek_v32_layer_is_sparse():
    hf_config = transformers.DeepseekV32Config()
    model = describe_model(hf_config.to_dict())
    assert model.layer_kinds == ["sparse"] * hf_config.num_hidden_layers
    assert type(build_layer(hf_config.to_dict(), 0, device="meta")) is DeepSeekSparseAttention


def test_a_published_deepseek_v32_layer_computes_with_its_yarn():
    # deepseek-ai/DeepSeek-V3.2-Exp config.json: DeepSeek-V3's attention (YaRN factor 40 over 4096 positions) and
    # the indexer's 64 heads of width 128 picking the top 2048
    hf = DEEPSEEK_V3 | {"model_type": "deepseek_v32", "index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048}
    layer = build_layer(hf, 0, device="meta")
    assert layer.dsa_cfg.rope_scaling.kind == "yarn"
    assert layer.scale == build_layer(DEEPSEEK_V3, 0, device="meta").scale  # MLA's mscale², as DeepSeek-V3's
    out, _ = layer(torch.empty(1, 3, 7168, device="meta"), cache=layer.new_cache(1))
    assert out.shape == (1, 3, 7168)


@pytest.mark.parametrize(
    "class_name", ["Qwen3NextConfig", "Qwen3_5Config", "KimiLinearConfig", "DeepseekV32Config", "DeepseekV4Config"]
)
@pytest.mark.parametrize("tokens", [0, 1, 127, 4096, 1 << 20])
def test_measured_cache_equals_each_designs_closed_form(class_name, tokens):
    model = describe_model(getattr(transformers, class_name)().to_dict())
    assert model.cache_bytes(tokens=tokens, batch=2) == model.formula_bytes(tokens=tokens, batch=2)


def test_a_seeded_layer_is_the_same_for_the_same_seed():
    hf = transformers.Qwen3NextConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_hidden_layers=4,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
    ).to_dict()  # fmt: skip
    first, second = build_layer(hf, 0, seed=3), build_layer(hf, 0, seed=3)
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
