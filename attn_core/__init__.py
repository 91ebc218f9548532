"""The attention core: MHA, MQA, GQA and MLA as exact, cache-aware PyTorch modules (no UI code here), and the designs
after MLA (sliding windows and sinks, DeepSeek's sparse and compressed attention, linear attention, quantised caches)
with build_layer and describe_model reading any supported model's config.json.

Shapes are named with one legend, here and in every shape comment of the project:

    B        batch: sequences side by side
    L        new tokens of this call (one row of queries each)
    S        keys attended to: the cached ones and the L new ones (S = P + L with a cache)
    P        tokens already in the cache when a call begins (the prompt, or an earlier chunk)
    N        tokens generated one at a time after the prompt
    H        query heads (n_heads)
    G        KV heads (n_kv_heads): 1 for MQA, H for MHA; R = H / G query heads share one (group_size)
    D        head width (head_dim); d_k a query/key's width, d_v a value's, when they differ (MLA)
    d_model  the model width
    d_c      MLA's latent width (kv_lora_rank); d_h^R its shared rotary key width (qk_rope_head_dim);
             d_nope a head's non-rotary query/key width (qk_nope_head_dim)
"""

from .accounting import (
    DTYPES,
    as_dtype,
    bytes_per_element,
    decode_flops_per_token,
    kv_cache_bytes,
    naive_up_projection_flops,
    parameter_count,
    repeated_kv_cache_bytes,
)
from .attend import allowed_positions, causal_allowed
from .build import build_attention, seeded_generator
from .cache import GroupedKVCache, LatentKVCache, RepeatedHeadsCache, WindowedKVCache, empty_cache
from .chunked import ChunkedKVCache, QueryTemperature
from .compressed import CompressedAttention, CompressedCache, CompressedConfig
from .config import (
    VARIANTS,
    AttentionConfig,
    CachesAsMuchAsMHA,
    ConfigWarning,
    GroupedVariant,
    LatentCompressesNothing,
    LatentWidths,
    Variant,
    kv_head_counts,
)
from .config_checks import MAX_LAYERS, ConfigFieldError, Footprint, Need, PastAnyMachine
from .contract import AttentionLayer, CachedLayer, KVCache, Queries
from .dsa import DeepSeekSparseAttention, DSACache, DSAConfig
from .fused import LAYOUTS, falcon_attention_state, fuse_qkv, fused_blocks, gpt2_attention_state, split_qkv
from .gated import GatedAttention, GatedAttentionConfig, GatedKVCache
from .glm_dsa import SharedTopKAttention, SharedTopKConfig
from .grouped import GroupedQueryAttention
from .hf import ModelDescription, build_layer, describe_model
from .kv_sharing import BorrowedCache, KeyValueCache, KVSharingAttention, KVSharingConfig
from .latent import MultiHeadLatentAttention
from .lightning import LightningAttention, LightningConfig, LightningStateCache
from .linear import (
    GatedDeltaNet,
    GatedDeltaNetConfig,
    KimiDeltaAttention,
    KimiDeltaConfig,
    LinearStateCache,
    kimi_attention_config,
)
from .mamba import FeedForwardBlock, Mamba2Config, Mamba2Mixer
from .options import AttentionOptions
from .presets import FORMER_NAMES, PRESETS, STATED_REASONS, ModelPreset, StatedReason
from .published import PUBLISHED, SOURCES, context_length, published_config
from .quant import CacheBits, QuantizedKVCache, QuantizedLatentKVCache
from .rope import RopeScaling
from .served import SERVED_AS_HELD, STORAGES, ServedFormat, Storage

__all__ = [
    "DTYPES",
    "FORMER_NAMES",
    "LAYOUTS",
    "MAX_LAYERS",
    "PRESETS",
    "PUBLISHED",
    "SERVED_AS_HELD",
    "SOURCES",
    "STATED_REASONS",
    "STORAGES",
    "VARIANTS",
    "AttentionConfig",
    "AttentionLayer",
    "AttentionOptions",
    "BorrowedCache",
    "CacheBits",
    "CachedLayer",
    "CachesAsMuchAsMHA",
    "ChunkedKVCache",
    "CompressedAttention",
    "CompressedCache",
    "CompressedConfig",
    "ConfigFieldError",
    "ConfigWarning",
    "DSACache",
    "DSAConfig",
    "DeepSeekSparseAttention",
    "FeedForwardBlock",
    "Footprint",
    "GatedAttention",
    "GatedAttentionConfig",
    "GatedDeltaNet",
    "GatedDeltaNetConfig",
    "GatedKVCache",
    "GroupedKVCache",
    "GroupedQueryAttention",
    "GroupedVariant",
    "KVCache",
    "KVSharingAttention",
    "KVSharingConfig",
    "KeyValueCache",
    "KimiDeltaAttention",
    "KimiDeltaConfig",
    "LatentCompressesNothing",
    "LatentKVCache",
    "LatentWidths",
    "LightningAttention",
    "LightningConfig",
    "LightningStateCache",
    "LinearStateCache",
    "Mamba2Config",
    "Mamba2Mixer",
    "ModelDescription",
    "ModelPreset",
    "MultiHeadLatentAttention",
    "Need",
    "PastAnyMachine",
    "QuantizedKVCache",
    "QuantizedLatentKVCache",
    "Queries",
    "QueryTemperature",
    "RepeatedHeadsCache",
    "RopeScaling",
    "ServedFormat",
    "SharedTopKAttention",
    "SharedTopKConfig",
    "StatedReason",
    "Storage",
    "Variant",
    "WindowedKVCache",
    "allowed_positions",
    "as_dtype",
    "build_attention",
    "build_layer",
    "bytes_per_element",
    "causal_allowed",
    "context_length",
    "decode_flops_per_token",
    "describe_model",
    "empty_cache",
    "falcon_attention_state",
    "fuse_qkv",
    "fused_blocks",
    "gpt2_attention_state",
    "kimi_attention_config",
    "kv_cache_bytes",
    "kv_head_counts",
    "naive_up_projection_flops",
    "parameter_count",
    "published_config",
    "repeated_kv_cache_bytes",
    "seeded_generator",
    "split_qkv",
]
