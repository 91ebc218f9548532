"""The attention core: MHA, MQA, GQA and MLA as exact, cache-aware PyTorch modules (no UI code here)."""

from .accounting import (
    DTYPES,
    as_dtype,
    decode_flops_per_token,
    kv_cache_bytes,
    parameter_count,
    repeated_kv_cache_bytes,
)
from .build import build_attention
from .cache import GroupedKVCache, LatentKVCache
from .config import VARIANT_NAMES, VARIANTS, AttentionConfig
from .grouped import GroupedQueryAttention
from .latent import MultiHeadLatentAttention
from .presets import PRESETS, ModelPreset

__all__ = [
    "DTYPES",
    "PRESETS",
    "VARIANTS",
    "VARIANT_NAMES",
    "AttentionConfig",
    "GroupedKVCache",
    "GroupedQueryAttention",
    "LatentKVCache",
    "ModelPreset",
    "MultiHeadLatentAttention",
    "as_dtype",
    "build_attention",
    "decode_flops_per_token",
    "kv_cache_bytes",
    "parameter_count",
    "repeated_kv_cache_bytes",
]
