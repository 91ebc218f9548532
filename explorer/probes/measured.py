"""A layer's cache measured on the meta device: the real forward pass, exact shapes and dtypes, no memory.

So the bytes are exact at any size, from a toy layer to DeepSeek-V3 at 160k tokens, and cost milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core import AttentionConfig, as_dtype, build_attention, empty_cache


@dataclass(frozen=True)
class MeasuredCache:
    nbytes: int  # bytes held: the tokens seen times what one token leaves
    capacity_nbytes: int  # bytes preallocated, held or not
    shapes: dict[str, tuple[int, ...]]  # each stored tensor as read back
    parameters: int  # weights of the layer that filled it


@torch.inference_mode()
def measure_cache(
    cfg: AttentionConfig, *, batch: int, tokens: int, dtype: torch.dtype | str, repeated_heads: bool = False
) -> MeasuredCache:
    """Prefill `tokens` tokens through cfg's real layer on the meta device and read its cache (with repeated_heads,
    the pitfall's cache that stores K/V after repeating them for every query head)."""
    dtype = as_dtype(dtype)
    layer = build_attention(cfg, device="meta", dtype=dtype)
    cache = empty_cache(cfg, batch, dtype=dtype, device="meta", repeated_heads=repeated_heads)
    layer(torch.empty(batch, tokens, cfg.d_model, device="meta", dtype=dtype), cache=cache)
    return MeasuredCache(
        nbytes=cache.nbytes,
        capacity_nbytes=cache.capacity_nbytes,
        shapes=cache.shapes(),
        parameters=sum(p.numel() for p in layer.parameters()),
    )
