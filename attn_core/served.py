"""Caches as served: each layer kind's cache in the format its own serving code keeps it, bytes including scales.

attn_core's caches hold what HF's modules hold (every number in the layer's dtype: bf16 for the published models),
and ModelDescription's "reference" storage counts them so. Serving code keeps some of them smaller, and
`ModelDescription.cache_bytes(..., storage="served")` counts that: a Format says the bytes of one row (one token's
latent, one compressed entry, one indexer key) field by field, scales included, with the source it is read from;
a ServedLayout turns a layer's meta-device cache (its shapes: how many rows it holds) and the layer config's own
read_rows into bytes. No token counting is written here: held rows come from the reference cache's tensors, read rows
from the config's read_rows, so the two storages count the same tokens in different formats.

A layer kind with no layout here is served as HF's module holds it, in bf16 (SERVED_AS_HELD).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .compressed import CompressedConfig
from .dsa import DSAConfig
from .linear import GatedDeltaNetConfig, KimiDeltaConfig

Shapes = Mapping[str, tuple[int, ...]]

FLASHMLA = (
    "FlashMLA's FP8 sparse-decoding KV cache (github.com/deepseek-ai/FlashMLA, README: 656 B per token), as "
    "DeepSeek-V3.2-Exp's inference/model.py and vLLM's fp8_ds_mla keep it"
)
V32_INDEXER = (
    "DeepSeek-V3.2-Exp inference/model.py, Indexer: k_cache in float8_e4m3fn with one float32 k_scale_cache per token "
    "(act_quant over the key's 128 numbers)"
)
V4_ENTRY = (
    "vLLM's fp8_ds_mla cache for DeepSeek-V4 (vllm/models/deepseek_v4: per token 448 FP8 + 64 BF16 + 8 B of UE8M0 "
    "scales) and FlashMLA's MODEL1 FP8 sparse layout; DeepSeek-V4's figures assume the same FP8/BF16 split"
)
V4_INDEXER = (
    "DeepSeek-V4 inference/model.py: the indexer's compressed keys through fp4_act_quant (E2M1, one UE8M0 scale per "
    "32 numbers)"
)
V4_STATE = "DeepSeek-V4 inference/model.py, Compressor: the unfinished window's kv_state and score_state in float32"
LINEAR_STATE = (
    "vLLM's default (mamba_cache_dtype and mamba_ssm_cache_dtype 'auto', MambaStateDtypeCalculator): the convolution "
    "tail and the recurrent state in the model's dtype, bf16 (HF's module keeps the state in float32)"
)
BF16_AS_HELD = (
    "vLLM's and SGLang's default --kv-cache-dtype auto: the model's dtype, bf16, as HF's module holds the cache"
)


@dataclass(frozen=True)
class Field:
    """count numbers of `bits` bits each, called `what`."""

    what: str
    count: int
    bits: int


@dataclass(frozen=True)
class Format:
    """One row of a served cache (a token's latent, an entry, an indexer key): its fields, padded to `align` bytes."""

    name: str
    fields: tuple[Field, ...]
    source: str
    align: int = 1

    @property
    def nbytes(self) -> int:
        raw = math.ceil(sum(f.count * f.bits for f in self.fields) / 8)
        return -(-raw // self.align) * self.align


def flashmla_latent(kv_lora_rank: int, rope_dim: int) -> Format:
    """MLA's latent as FlashMLA serves it: d_c FP8 numbers, a float32 scale per 128 of them, d_h^R bf16 rotary ones
    (656 B at V3.2's 512 + 64)."""
    return Format(
        "FP8 latent (FlashMLA)",
        (
            Field("latent, FP8 E4M3", kv_lora_rank, 8),
            Field("scales, float32, one per 128", math.ceil(kv_lora_rank / 128), 32),
            Field("rotary key, bf16", rope_dim, 16),
        ),
        FLASHMLA,
    )


def fp8_index_key(index_head_dim: int) -> Format:
    """V3.2's indexer key: d_I FP8 numbers and one float32 scale (132 B at d_I = 128)."""
    return Format(
        "FP8 indexer key",
        (Field("key, FP8 E4M3", index_head_dim, 8), Field("scale, float32", 1, 32)),
        V32_INDEXER,
    )


def v4_entry(head_dim: int, rope_dim: int) -> Format:
    """A V4 window key or compressed entry as the engines store it: the no-RoPE part in FP8 with a UE8M0 scale per 64,
    the RoPE part in bf16, the row padded to 8 bytes (448 + 128 + 7 scales + 1 = 584 B at D = 512, d_h^R = 64)."""
    nope = head_dim - rope_dim
    return Format(
        "FP8 / bf16 entry (fp8_ds_mla)",
        (
            Field("no-RoPE part, FP8 E4M3", nope, 8),
            Field("RoPE part, bf16", rope_dim, 16),
            Field("scales, UE8M0, one per 64", math.ceil(nope / 64), 8),
        ),
        V4_ENTRY,
        align=8,
    )


def fp4_index_key(index_head_dim: int) -> Format:
    """A V4 indexer key: d_I FP4 numbers and a UE8M0 scale per 32 (68 B at d_I = 128)."""
    return Format(
        "FP4 indexer key",
        (
            Field("key, FP4 E2M1", index_head_dim, 4),
            Field("scales, UE8M0, one per 32", math.ceil(index_head_dim / 32), 8),
        ),
        V4_INDEXER,
    )


def numbers(name: str, bits: int, source: str) -> Format:
    """One number per row: for tensors counted number by number (states), not row by row."""
    return Format(name, (Field(name, 1, bits),), source)


SERVED_AS_HELD = numbers("bf16, as HF holds it", 16, BF16_AS_HELD)


@dataclass(frozen=True)
class ServedLayout:
    """A layer config's served cache: its formats (for the page's sources) and bytes(shapes, tokens) -> (held,
    read), from the shapes of the reference cache after `tokens` tokens."""

    formats: tuple[Format, ...]
    bytes: Callable[[Shapes, int], tuple[int, int]]


def _rows(shape: tuple[int, ...]) -> int:
    """Rows of a [B, 1, S, width] cache tensor: B · S."""
    return shape[0] * shape[2]


def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def dsa_layout(cfg: DSAConfig) -> ServedLayout:
    """V3.2: every token's latent as FlashMLA keeps it and its indexer key in FP8; a step reads every indexer key and
    the min(T, k) latents chosen (DeepSeek's reference runs the indexer at any length)."""
    latent, index = flashmla_latent(cfg.kv_lora_rank, cfg.qk_rope_head_dim), fp8_index_key(cfg.index_head_dim)

    def counted(shapes: Shapes, tokens: int) -> tuple[int, int]:
        batch = shapes["c_kv"][0]
        held = _rows(shapes["c_kv"]) * latent.nbytes + _rows(shapes["index_k"]) * index.nbytes
        index_rows, latent_rows = cfg.read_rows(tokens)
        return held, batch * (index_rows * index.nbytes + latent_rows * latent.nbytes)

    return ServedLayout((latent, index), counted)


def compressed_layout(cfg: CompressedConfig) -> ServedLayout:
    """V4: window keys and compressed entries as fp8_ds_mla rows, the indexer's entries in FP4, the compressors'
    unfinished windows in float32."""
    entry, index = v4_entry(cfg.head_dim, cfg.qk_rope_head_dim), fp4_index_key(cfg.index_head_dim)
    state = numbers("compressor state, float32", 32, V4_STATE)
    by_row = {"window": entry, "entries": entry, "index_entries": index}

    def counted(shapes: Shapes, tokens: int) -> tuple[int, int]:
        held = 0
        for name, shape in shapes.items():
            held += _rows(shape) * by_row[name].nbytes if name in by_row else _numel(shape) * state.nbytes
        read = cfg.read_rows(tokens)
        per_sequence = sum(rows * by_row[name].nbytes for name, rows in read.items())
        return held, shapes["window"][0] * per_sequence

    formats = (entry, index, state) if cfg.kind == "csa" else (entry, state) if cfg.kind == "hca" else (entry,)
    return ServedLayout(formats, counted)


def linear_layout(cfg: GatedDeltaNetConfig | KimiDeltaConfig) -> ServedLayout:
    """A linear layer's conv tail and recurrent state, every number in bf16 (vLLM's default); a step reads all."""
    state = numbers("state and conv tail, bf16", 16, LINEAR_STATE)

    def counted(shapes: Shapes, tokens: int) -> tuple[int, int]:
        held = sum(_numel(shape) for shape in shapes.values()) * state.nbytes
        return held, held

    return ServedLayout((state,), counted)


LAYOUTS: dict[type, Callable[[Any], ServedLayout]] = {
    DSAConfig: dsa_layout,
    CompressedConfig: compressed_layout,
    GatedDeltaNetConfig: linear_layout,
    KimiDeltaConfig: linear_layout,
}


def served_layout(config: Any) -> ServedLayout | None:
    """The served layout of a layer config; None: served in bf16 as HF's module holds it (SERVED_AS_HELD)."""
    make = LAYOUTS.get(type(config))
    return None if make is None else make(config)
