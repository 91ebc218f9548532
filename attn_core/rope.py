"""Rotary position embedding (RoPE), in the rotate-half layout (Llama) or the interleaved one (DeepSeek), with the
context-extension scalings published models use (RopeScaling: linear, Llama 3's, YaRN), computed as HF transformers'
modeling_rope_utils computes them."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

from .config_checks import ConfigFieldError, Need, choice, flag, number, whole

ROPE_KINDS = ("default", "linear", "llama3", "yarn", "proportional")


@dataclass(frozen=True)
class RopeScaling:
    """How a model stretches RoPE's frequencies past its pretraining length (HF's rope_parameters / rope_scaling).

    kind "default": plain RoPE. "linear": every frequency divided by factor. "llama3": low frequencies divided by
    factor, high ones kept, a smooth blend between (low_freq_factor, high_freq_factor over
    original_max_position_embeddings). "yarn": YaRN's per-frequency blend of interpolation and extrapolation (beta_fast,
    beta_slow, truncate), and cos/sin multiplied by attention_factor (resolved from factor and mscale as HF does: see
    from_hf). "proportional" (Gemma 4's global layers): the first partial_rotary_factor of the pairs turn at the
    frequencies of the whole head width (theta ** (-2i / D)), the rest not at all, every frequency divided by factor.
    """

    kind: str = "default"
    factor: float = 1.0
    original_max_position_embeddings: int | None = None
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    truncate: bool = True
    attention_factor: float = 1.0
    partial_rotary_factor: float = 1.0  # "proportional" only

    def __post_init__(self) -> None:
        if self.kind not in ROPE_KINDS:
            raise ValueError(f"rope_type={self.kind!r} is not supported: choose one of {', '.join(ROPE_KINDS)}.")
        if not isinstance(self.factor, int | float) or isinstance(self.factor, bool) or not self.factor > 0:
            raise ValueError(f"rope factor must be a positive number, got {self.factor!r}.")
        if self.kind in ("llama3", "yarn"):
            original = self.original_max_position_embeddings
            if not isinstance(original, int) or isinstance(original, bool) or original <= 0:
                raise ValueError(
                    f"rope_type={self.kind!r} needs original_max_position_embeddings, a positive whole number; "
                    f"got {original!r}."
                )
        factor = self.partial_rotary_factor
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 <= factor <= 1:
            raise ValueError(f"partial_rotary_factor must be a fraction from 0 to 1, got {factor!r}.")
        if self.kind == "llama3" and not self.high_freq_factor > self.low_freq_factor > 0:
            raise ValueError(
                f"llama3 rope needs high_freq_factor > low_freq_factor > 0, got {self.high_freq_factor!r} and "
                f"{self.low_freq_factor!r}."
            )

    @classmethod
    def from_hf(
        cls, params: Mapping[str, Any] | None, max_position_embeddings: int | None, *, name: str = "rope_parameters"
    ) -> RopeScaling:
        """From one (not nested) rope_parameters / rope_scaling dict of a config.json, old key "type" or new
        "rope_type"; llama3 and yarn default original_max_position_embeddings to max_position_embeddings, as HF's
        standardize_rope_params does. Every field of ROPE_FIELDS given is checked (a ConfigFieldError naming
        f"{name}.{key}"), the ones this kind does not use too (DeepSeek's score scale reads mscale_all_dim)."""
        if params is None:
            return cls()
        if not isinstance(params, Mapping):
            raise ConfigFieldError(name, params, Need("dict"))
        key = "rope_type" if "rope_type" in params else "type"
        kind = choice(f"{name}.{key}", params.get(key, "default"), ROPE_KINDS)
        value = _reader(params, name)
        read = {key: value(key, check, **options) for key, (check, options) in ROPE_FIELDS.items()}
        if kind == "default":
            return cls()
        if kind == "proportional":  # Gemma 4's global layers: RoPE on a share of each head's pairs
            partial = value("partial_rotary_factor", number)
            return cls(
                kind=kind,
                factor=1.0 if read["factor"] is None else read["factor"],
                partial_rotary_factor=1.0 if partial is None else partial,
            )
        if params.get("partial_rotary_factor", 1.0) != 1.0:
            raise ValueError(
                f"{name}.partial_rotary_factor other than 1 is not supported: every dimension is rotated here."
            )
        original = read["original_max_position_embeddings"]
        original = max_position_embeddings if original is None else original
        factor = read["factor"]
        if kind == "yarn" and factor is None and original:  # HF: the ratio of the lengths (DeepSeek-V3's configs)
            factor = (max_position_embeddings or 0) / original
        if factor is None:
            raise ConfigFieldError(f"{name}.factor", None, Need("given"), f"rope_type {kind!r}")
        common = {"kind": kind, "factor": factor}
        if kind == "linear":
            return cls(**common)
        if original is None:
            raise ConfigFieldError(
                f"{name}.original_max_position_embeddings", None, Need("given"), f"rope_type {kind!r}"
            )
        if kind == "llama3":
            return cls(
                **common,
                original_max_position_embeddings=original,
                low_freq_factor=read["low_freq_factor"] or 1.0,
                high_freq_factor=read["high_freq_factor"] or 4.0,
            )
        attention_factor = read["attention_factor"]
        if attention_factor is None:
            mscale, mscale_all_dim = read["mscale"], read["mscale_all_dim"]
            if mscale and mscale_all_dim:
                attention_factor = yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim)
            else:
                attention_factor = yarn_mscale(factor)
        return cls(
            **common,
            original_max_position_embeddings=original,
            beta_fast=read["beta_fast"] or 32.0,
            beta_slow=read["beta_slow"] or 1.0,
            truncate=True if read["truncate"] is None else read["truncate"],
            attention_factor=float(attention_factor),
        )

    def inv_freq(self, dim: int, theta: float) -> torch.Tensor:
        """[dim / 2] float32 on the CPU: each rotated pair's angle per position, in HF's operation order."""
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float32) / dim))
        if self.kind == "linear":
            return inv_freq / self.factor
        if self.kind == "llama3":
            return self._llama3(inv_freq)
        if self.kind == "yarn":
            return self._yarn(dim, theta)
        if self.kind == "proportional":
            turning = self.turning_pairs(dim)
            return torch.cat((inv_freq[:turning], torch.zeros(dim // 2 - turning))) / self.factor
        return inv_freq

    def turning_pairs(self, dim: int) -> int:
        """How many of the dim / 2 rotated pairs turn: all, or the first partial_rotary_factor of them for
        "proportional" (the others have angle 0 at every position), rounded as HF does."""
        return int(self.partial_rotary_factor * dim // 2) if self.kind == "proportional" else dim // 2

    def _llama3(self, inv_freq: torch.Tensor) -> torch.Tensor:
        old_context = self.original_max_position_embeddings or 0
        low_wavelen, high_wavelen = old_context / self.low_freq_factor, old_context / self.high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / self.factor, inv_freq)
        smooth = (old_context / wavelen - self.low_freq_factor) / (self.high_freq_factor - self.low_freq_factor)
        smoothed = (1 - smooth) * scaled / self.factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, scaled)

    def _yarn(self, dim: int, theta: float) -> torch.Tensor:
        original = self.original_max_position_embeddings or 0

        def correction_dim(rotations: float) -> float:
            return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(theta))

        low, high = correction_dim(self.beta_fast), correction_dim(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001  # as HF: no division by zero
        ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
        extrapolation = 1 - ramp
        pos_freqs = theta ** (torch.arange(0, dim, 2).to(torch.float32) / dim)
        return (1.0 / (self.factor * pos_freqs)) * (1 - extrapolation) + (1.0 / pos_freqs) * extrapolation


# Every field of a rope_parameters / rope_scaling dict attn_core reads, and its check (config_checks)
ROPE_FIELDS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "factor": (number, {}),
    "original_max_position_embeddings": (whole, {}),
    "low_freq_factor": (number, {}),
    "high_freq_factor": (number, {}),
    "attention_factor": (number, {}),
    "beta_fast": (number, {"zero": True}),
    "beta_slow": (number, {"zero": True}),
    "mscale": (number, {"zero": True}),
    "mscale_all_dim": (number, {"zero": True}),
    "truncate": (flag, {}),
}


def _reader(params: Mapping[str, Any], name: str) -> Callable[..., Any]:
    """value(key, check, **options): params[key] through a config_checks check, named f"{name}.{key}"; None when
    absent or null."""

    def value(key: str, check: Callable[..., Any], **options: Any) -> Any:
        given = params.get(key)
        return None if given is None else check(f"{name}.{key}", given, **options)

    return value


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's attention temperature for a context stretched by scale (1 when not stretched)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


PLAIN = RopeScaling()

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
    scaling: RopeScaling = PLAIN,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin for positions start..start+length-1, each [length, dim] laid out as cat(freqs, freqs), with
    scaling's frequencies (and YaRN's attention factor on both).

    Memoised: short spans (decode steps), the last few prompts' spans up to MEMOISED_PROMPT_ELEMENTS numbers, and any
    span on the meta device (no memory; shape-only passes there cost milliseconds per op): callers must not modify
    the result.
    """
    if length <= MEMOISED_LENGTH or (device is not None and torch.device(device).type == "meta"):
        return _memoised_cos_sin(start, length, dim, theta, device, dtype, scaling)
    if length * dim <= MEMOISED_PROMPT_ELEMENTS:
        return _memoised_prompt_cos_sin(start, length, dim, theta, device, dtype, scaling)
    return _cos_sin(start, length, dim, theta, device, dtype, scaling)


def _normal_cos_sin(
    start: int,
    length: int,
    dim: int,
    theta: float,
    device: torch.device | str | None,
    dtype: torch.dtype,
    scaling: RopeScaling,
) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.inference_mode(False):  # normal tensors, usable later where autograd records (fine-tuning)
        return _cos_sin(start, length, dim, theta, device, dtype, scaling)


_memoised_cos_sin = lru_cache(maxsize=128)(_normal_cos_sin)
_memoised_prompt_cos_sin = lru_cache(maxsize=4)(_normal_cos_sin)


def _cos_sin(
    start: int,
    length: int,
    dim: int,
    theta: float,
    device: torch.device | str | None,
    dtype: torch.dtype,
    scaling: RopeScaling,
) -> tuple[torch.Tensor, torch.Tensor]:
    # Angles in float32 whatever the compute dtype, as the reference implementations do.
    inv_freq = scaling.inv_freq(dim, theta).to(device)
    positions = torch.arange(start, start + length, device=device, dtype=torch.float32)
    angles = torch.outer(positions, inv_freq)  # [L, dim/2]
    angles = torch.cat((angles, angles), dim=-1)  # [L, dim]
    cos, sin = angles.cos(), angles.sin()
    if scaling.attention_factor != 1.0:
        cos, sin = cos * scaling.attention_factor, sin * scaling.attention_factor
    return cos.to(dtype), sin.to(dtype)


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
