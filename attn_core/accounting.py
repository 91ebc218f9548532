"""Closed-form sizes and costs: what the tests hold the measured numbers against."""

from __future__ import annotations

import torch

from .config import AttentionConfig

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def as_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """One of the offered dtypes, by name or as torch's object; any other value (torch.int8 too) is a ValueError."""
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not offered: choose one of {', '.join(DTYPES)}.")
    return DTYPES[dtype]


def bytes_per_element(dtype: torch.dtype | str) -> int:
    return torch.empty((), dtype=as_dtype(dtype)).element_size()


def kv_cache_bytes(cfg: AttentionConfig, batch: int, seq_len: int, dtype: torch.dtype | str = torch.float32) -> int:
    """Bytes one layer's cache holds: batch x tokens x (2·g·d_h, or d_c + d_h^R for MLA) x element size."""
    return batch * seq_len * cfg.cache_elements_per_token * bytes_per_element(dtype)


def repeated_kv_cache_bytes(
    cfg: AttentionConfig, batch: int, seq_len: int, dtype: torch.dtype | str = torch.float32
) -> int:
    """The pitfall: caching K/V after repeating them for every query head costs as much as MHA (2·h·d_h)."""
    if cfg.variant == "mla":
        raise ValueError("MLA has no repeated heads to cache; the pitfall applies to grouped variants.")
    return batch * seq_len * 2 * cfg.n_heads * cfg.head_dim * bytes_per_element(dtype)


def parameter_count(cfg: AttentionConfig) -> int:
    """Weights (and biases, norm scales) of one attention layer."""

    def linear(n_in: int, n_out: int, bias: bool) -> int:
        return n_in * n_out + (n_out if bias else 0)

    d, heads = cfg.d_model, cfg.n_heads
    if cfg.variant != "mla":
        q_out, kv_out = heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
        return linear(d, q_out, cfg.bias) + 2 * linear(d, kv_out, cfg.bias) + linear(q_out, d, cfg.o_bias)
    qk, widths = cfg.qk_head_dim, cfg.latent_widths
    if cfg.q_lora_rank is None:
        query = linear(d, heads * qk, False)
    else:
        query = linear(d, cfg.q_lora_rank, cfg.bias) + cfg.q_lora_rank + linear(cfg.q_lora_rank, heads * qk, False)
    return (
        query
        + linear(d, widths.kv_lora_rank + widths.qk_rope_head_dim, cfg.bias)
        + widths.kv_lora_rank
        + linear(widths.kv_lora_rank, heads * (widths.qk_nope_head_dim + widths.v_head_dim), False)
        + linear(heads * widths.v_head_dim, d, cfg.o_bias)
    )


def naive_up_projection_flops(cfg: AttentionConfig, keys: int) -> int:
    """MLA's naive decode: FLOPs to up-project `keys` cached latents into every head's keys and values."""
    widths = cfg.latent_widths
    return 2 * keys * widths.kv_lora_rank * cfg.n_heads * (widths.qk_nope_head_dim + widths.v_head_dim)


def decode_flops_per_token(cfg: AttentionConfig, cached_tokens: int, *, absorbed: bool = True) -> int:
    """Floating-point operations (2 per multiply-add) to decode one token after cached_tokens cached ones.

    The new token attends to cached_tokens + 1 keys: the cached ones and its own.

    Counts the matrix products (projections, scores, weighted sum); norms, RoPE and softmax are a few per element and
    left out. For MLA, absorbed=False is the naive decode that up-projects the whole cache at every step.
    """
    d, heads, s = cfg.d_model, cfg.n_heads, cached_tokens + 1
    if cfg.variant != "mla":
        hd, kv = cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
        projections = 2 * d * heads * hd + 2 * 2 * d * kv + 2 * heads * hd * d
        return projections + 2 * heads * hd * s + 2 * heads * hd * s
    dc, nope, dr, dv = cfg.latent_widths
    qk = cfg.qk_head_dim
    query = (
        2 * d * heads * qk if cfg.q_lora_rank is None else 2 * d * cfg.q_lora_rank + 2 * cfg.q_lora_rank * heads * qk
    )
    shared = query + 2 * d * (dc + dr) + 2 * heads * dv * d
    if absorbed:
        return shared + 2 * heads * nope * dc + 2 * heads * (dc + dr) * s + 2 * heads * dc * s + 2 * heads * dc * dv
    return shared + naive_up_projection_flops(cfg, s) + 2 * heads * qk * s + 2 * heads * dv * s
