"""Rotary position embedding (RoPE), in the rotate-half layout (Llama) or the interleaved one (DeepSeek)."""

from __future__ import annotations

from functools import lru_cache

import torch

MEMOISED_LENGTH = 16  # decode steps: every layer of a model asks for the same few positions at each step
# A prompt's table is asked for by every layer of a forward pass (twice: queries and keys), so the last few are kept
# too, up to this many numbers each (4096 positions of 64 dims: 1 MB of float32 for cos, 1 MB for sin).
MEMOISED_PROMPT_ELEMENTS = 1 << 18


def rope_cos_sin(
    start: int,
    length: int,
    dim: int,
    theta: float,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin for positions start..start+length-1, each [length, dim] laid out as cat(freqs, freqs).

    Memoised: short spans (decode steps), the last few prompts' spans up to MEMOISED_PROMPT_ELEMENTS numbers, and any
    span on the meta device (no memory; shape-only passes there cost milliseconds per op): callers must not modify
    the result.
    """
    if length <= MEMOISED_LENGTH or (device is not None and torch.device(device).type == "meta"):
        return _memoised_cos_sin(start, length, dim, theta, device, dtype)
    if length * dim <= MEMOISED_PROMPT_ELEMENTS:
        return _memoised_prompt_cos_sin(start, length, dim, theta, device, dtype)
    return _cos_sin(start, length, dim, theta, device, dtype)


def _normal_cos_sin(
    start: int, length: int, dim: int, theta: float, device: torch.device | str | None, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.inference_mode(False):  # normal tensors, usable later where autograd records (fine-tuning)
        return _cos_sin(start, length, dim, theta, device, dtype)


_memoised_cos_sin = lru_cache(maxsize=128)(_normal_cos_sin)
_memoised_prompt_cos_sin = lru_cache(maxsize=4)(_normal_cos_sin)


def _cos_sin(
    start: int, length: int, dim: int, theta: float, device: torch.device | str | None, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    # Angles in float32 whatever the compute dtype, as the reference implementations do.
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim))
    positions = torch.arange(start, start + length, device=device, dtype=torch.float32)
    angles = torch.outer(positions, inv_freq)  # [L, dim/2]
    angles = torch.cat((angles, angles), dim=-1)  # [L, dim]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """Rotate x [..., L, dim] by position.

    Interleaved weights pair dims (0,1), (2,3), ...; they are first gathered into the rotate-half layout (evens, then
    odds). Queries and keys get the same permutation, so every dot product is unchanged, and the result matches
    DeepSeek-V3 as published in HF transformers.
    """
    if interleaved:
        x = torch.cat((x[..., 0::2], x[..., 1::2]), dim=-1)
    return x * cos + rotate_half(x) * sin
