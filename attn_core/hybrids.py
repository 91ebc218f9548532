"""Which layer a linear-attention hybrid has at each index, read from its config.json: the entries the registry in
attn_core.hf takes ((hf, layer_idx) -> (kind, config))."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .config import AttentionConfig
from .gated import GatedAttentionConfig
from .hf_fields import layer_index, require_model_type
from .linear import (
    QWEN_HYBRIDS,
    GatedDeltaNetConfig,
    KimiDeltaConfig,
    kimi_attention_config,
    kimi_layer_types,
    qwen_layer_types,
    qwen_text_config,
)

HybridConfig = GatedDeltaNetConfig | KimiDeltaConfig | GatedAttentionConfig | AttentionConfig

# the model types these entries read (Qwen3.5's: the vision-language config.json, or its text part)
QWEN_MODEL_TYPES = QWEN_HYBRIDS
KIMI_MODEL_TYPES = ("kimi_linear",)


def qwen_hybrid_layer(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, HybridConfig]:
    """("linear", GatedDeltaNetConfig) or ("full", GatedAttentionConfig) for layer layer_idx."""
    text = qwen_text_config(hf)
    kind = qwen_layer_types(text)[layer_index(text, layer_idx)]
    if kind == "linear_attention":
        return "linear", GatedDeltaNetConfig.from_hf(hf, layer_idx)
    if kind == "full_attention":
        return "full", GatedAttentionConfig.from_hf(hf, layer_idx)
    raise ValueError(f"layer_types[{layer_idx}]={kind!r}: Qwen's hybrids have linear_attention and full_attention.")


def kimi_linear_layer(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, HybridConfig]:
    """("linear", KimiDeltaConfig) or ("mla", AttentionConfig of MLA without RoPE) for layer layer_idx."""
    require_model_type(hf, "kimi_linear")
    kind = kimi_layer_types(hf)[layer_index(hf, layer_idx)]
    if kind == "linear_attention":
        return "linear", KimiDeltaConfig.from_hf(hf, layer_idx)
    if kind == "full_attention":
        return "mla", kimi_attention_config(hf, layer_idx)
    raise ValueError(f"layer_types[{layer_idx}]={kind!r}: Kimi Linear has linear_attention and full_attention.")
