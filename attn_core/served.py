"""Caches as served: each layer kind's cache in the format its own serving code keeps it, bytes including scales.

attn_core's caches hold what HF's modules hold (every number in the layer's dtype: bf16 for the published models),
and ModelDescription's "reference" storage counts them so. Serving code keeps some of them smaller, and
`ModelDescription.cache_bytes(..., storage="served")` counts that: a ServedFormat says the bytes of one row (one token's
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
from typing import Any, Literal

from .compressed import CompressedConfig
from .dsa import DSAConfig
from .linear import GatedDeltaNetConfig, KimiDeltaConfig

Shapes = Mapping[str, tuple[int, ...]]
Storage = Literal["reference", "served"]  # as HF's modules hold the caches, or as the models' serving code keeps them
STORAGES: tuple[Storage, ...] = ("reference", "served")

# Each format's source, as a citation (shown as it is, wherever the format is)
FLASHMLA = (
    "deepseek-ai/FlashMLA README (FP8 sparse KV cache: 656 B a token); DeepSeek-V3.2-Exp inference/model.py; "
    "vLLM kv_cache_dtype fp8_ds_mla"
)
V32_INDEXER = "DeepSeek-V3.2-Exp inference/model.py, Indexer: k_cache float8_e4m3fn + k_scale_cache float32"
V4_ENTRY = (
    "vllm/models/deepseek_v4 fp8_ds_mla (448 FP8 + 64 BF16 + 8 B UE8M0 = 584 B a token); FlashMLA MODEL1 FP8 sparse"
)
V4_INDEXER = "DeepSeek-V4 inference/model.py, Indexer: fp4_act_quant(block_size=32, scale float8_e8m0fnu)"
V4_STATE = "DeepSeek-V4 inference/model.py, Compressor: kv_state, score_state float32"
LINEAR_STATE = (
    "vLLM MambaStateDtypeCalculator: mamba_cache_dtype = mamba_ssm_cache_dtype = auto (the model's bf16; HF's "
    "module: float32 state)"
)
BF16_AS_HELD = "vLLM and SGLang --kv-cache-dtype auto: the model's bf16, as HF's module holds it"


@dataclass(frozen=True)
class Field:
    """count numbers of type `kind` (FP8, bf16, ...), `bits` bits each, holding `what` (the part, or its scales)."""

    what: str
    count: int
    kind: str
    bits: int


@dataclass(frozen=True)
class ServedFormat:
    """One row of a served cache (a token's latent, an entry, an indexer key): its fields, padded to `align` bytes."""

    name: str
    fields: tuple[Field, ...]
    source: str
    align: int = 1

    @property
    def nbytes(self) -> int:
        raw = math.ceil(sum(f.count * f.bits for f in self.fields) / 8)
        return -(-raw // self.align) * self.align


def flashmla_latent(kv_lora_rank: int, rope_dim: int) -> ServedFormat:
    """MLA's latent as FlashMLA serves it: d_c FP8 numbers, a float32 scale per 128 of them, d_h^R bf16 rotary ones
    (656 B at V3.2's 512 + 64)."""
    return ServedFormat(
        "FlashMLA FP8 latent",
        (
            Field("latent", kv_lora_rank, "FP8 E4M3", 8),
            Field("scales, one per 128", math.ceil(kv_lora_rank / 128), "fp32", 32),
            Field("rotary key", rope_dim, "bf16", 16),
        ),
        FLASHMLA,
    )


def fp8_index_key(index_head_dim: int) -> ServedFormat:
    """V3.2's indexer key: d_I FP8 numbers and one float32 scale (132 B at d_I = 128)."""
    return ServedFormat(
        "FP8 indexer key",
        (Field("key", index_head_dim, "FP8 E4M3", 8), Field("scale", 1, "fp32", 32)),
        V32_INDEXER,
    )


def v4_entry(head_dim: int, rope_dim: int) -> ServedFormat:
    """A V4 window key or compressed entry as the engines store it: the no-RoPE part in FP8 with a UE8M0 scale per 64,
    the RoPE part in bf16, the row padded to 8 bytes (448 + 128 + 7 scales + 1 = 584 B at D = 512, d_h^R = 64)."""
    nope = head_dim - rope_dim
    return ServedFormat(
        "fp8_ds_mla entry",
        (
            Field("no-RoPE part", nope, "FP8 E4M3", 8),
            Field("RoPE part", rope_dim, "bf16", 16),
            Field("scales, one per 64", math.ceil(nope / 64), "UE8M0", 8),
        ),
        V4_ENTRY,
        align=8,
    )


def fp4_index_key(index_head_dim: int) -> ServedFormat:
    """A V4 indexer key: d_I FP4 numbers and a UE8M0 scale per 32 (68 B at d_I = 128)."""
    return ServedFormat(
        "FP4 indexer key",
        (
            Field("key", index_head_dim, "FP4 E2M1", 4),
            Field("scales, one per 32", math.ceil(index_head_dim / 32), "UE8M0", 8),
        ),
        V4_INDEXER,
    )


def numbers(name: str, kind: str, bits: int, source: str) -> ServedFormat:
    """One number per row: for tensors counted number by number (states), not row by row."""
    return ServedFormat(name, (Field(name, 1, kind, bits),), source)


SERVED_AS_HELD = numbers("every number, as HF holds it", "bf16", 16, BF16_AS_HELD)


@dataclass(frozen=True)
class ServedLayout:
    """A layer config's served cache: its formats (each with its source) and bytes(shapes, tokens) -> (held,
    read), from the shapes of the reference cache after `tokens` tokens."""

    formats: tuple[ServedFormat, ...]
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
    state = numbers("compressor state", "fp32", 32, V4_STATE)
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
    state = numbers("state and conv tail", "bf16", 16, LINEAR_STATE)

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
