"""Gated full attention, as Qwen3-Next's and Qwen3.5's full-attention layers (HF's Qwen3NextAttention and
Qwen3_5Attention, same parameter names).

Grouped-query attention with three changes: q_proj gives each head its query and an output gate (the head's output
is multiplied by sigmoid(gate) before o_proj), queries and keys are RMS-normalised per head with zero-centred weights
(scale 1 + w), and RoPE rotates only the first rotary_dim of each head's D dims (partial rotary). The cache is GQA's:
the G KV heads' keys and values, 2 · G · D numbers per token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from einops import rearrange
from torch import nn

from .attend import allowed_positions, attend
from .build import seed_dense_weights
from .cache import GroupedKVCache, checked_tokens
from .hf_fields import (
    MISSING,
    bool_field,
    float_field,
    int_field,
    layer_index,
    positive_fields,
    rope_parameters,
    rope_settings,
)
from .latent import UnitOffsetRMSNorm
from .linear import qwen_layer_types, qwen_text_config
from .rope import PLAIN, RopeScaling, apply_rope, rope_cos_sin

CACHE_FORMULA = "2 · G · D · T · b · B (keys and values of the G KV heads)"


@dataclass(frozen=True)
class GatedAttentionConfig:
    """The layer's shape. HF's names: hidden_size, num_attention_heads, num_key_value_heads, head_dim,
    rope_parameters (rope_theta, partial_rotary_factor), attention_bias, rms_norm_eps."""

    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    rotary_dim: int
    rope_theta: float = 10000.0
    bias: bool = False
    norm_eps: float = 1e-6
    rope_scaling: RopeScaling = PLAIN  # over the rotary_dim frequencies, as HF computes it for a partial rotary

    def __post_init__(self) -> None:
        positive_fields(self, "d_model", "n_heads", "n_kv_heads", "head_dim")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} is not divisible by n_kv_heads={self.n_kv_heads}.")
        if not isinstance(self.rotary_dim, int) or not 0 <= self.rotary_dim <= self.head_dim or self.rotary_dim % 2:
            raise ValueError(
                f"rotary_dim={self.rotary_dim!r} must be an even number of dims within head_dim={self.head_dim}."
            )
        if not self.rope_theta > 0:
            raise ValueError(f"rope_theta must be positive, got {self.rope_theta!r}.")
        if not self.norm_eps > 0:
            raise ValueError(f"norm_eps must be positive, got {self.norm_eps!r}.")

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> GatedAttentionConfig:
        """Layer layer_idx of a Qwen3-Next or Qwen3.5 config.json (or transformers' to_dict()); it must be a
        full-attention layer. RoPE's theta and partial_rotary_factor come from rope_parameters (transformers 5) or the
        top level (Qwen3-Next's published config.json); partial_rotary_factor defaults to 0.25 as transformers does.
        Qwen3.5's multimodal RoPE (mrope_section) rotates text tokens as plain RoPE: their three position axes agree."""
        model = str(hf.get("model_type")) if isinstance(hf, Mapping) else ""
        hf = qwen_text_config(hf)
        kind = qwen_layer_types(hf)[layer_index(hf, layer_idx)]
        if kind != "full_attention":
            raise ValueError(
                f"Layer {layer_idx} is {kind!r} in layer_types: GatedAttention builds full_attention layers."
            )
        rope = rope_parameters(hf)
        count = lambda key, default=MISSING: int_field(hf, key, default, model=model)  # noqa: E731
        n_heads = count("num_attention_heads")
        d_model = count("hidden_size")
        head_dim = count("head_dim", d_model // n_heads)
        factor = rope.get("partial_rotary_factor", hf.get("partial_rotary_factor", 0.25))
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= 1:
            raise ValueError(f"partial_rotary_factor={factor!r} must be a fraction in (0, 1].")
        theta, scaling = rope_settings(
            hf,
            10000.0,
            count("max_position_embeddings", 32768),
            {k: v for k, v in rope.items() if k != "partial_rotary_factor"},
        )
        return cls(
            d_model=d_model,
            n_heads=n_heads,
            n_kv_heads=count("num_key_value_heads"),
            head_dim=head_dim,
            rotary_dim=int(head_dim * factor),  # as transformers rounds it
            rope_theta=theta,
            bias=bool_field(hf, "attention_bias", False),
            norm_eps=float_field(hf, "rms_norm_eps", 1e-6, model=model),
            rope_scaling=scaling,
        )


def cache_bytes_formula(cfg: GatedAttentionConfig, tokens: int, batch: int, element_bytes: int) -> int:
    """CACHE_FORMULA in closed form."""
    if tokens < 0 or batch < 0 or element_bytes <= 0:
        raise ValueError(
            f"tokens={tokens}, batch={batch}, element_bytes={element_bytes}: give counts >= 0 and a size > 0."
        )
    return 2 * cfg.n_kv_heads * cfg.head_dim * tokens * element_bytes * batch


GatedKVCache = GroupedKVCache  # GQA's cache as it is: the G KV heads' keys and values, all read by the last query


class GatedAttention(nn.Module):
    """Qwen3-Next's gated full attention; parameter names as HF's Qwen3NextAttention (q_proj holds each head's query
    then its gate, D rows each)."""

    def __init__(
        self, cfg: GatedAttentionConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.cfg = cfg
        kw: dict[str, Any] = {"device": device, "dtype": dtype, "bias": cfg.bias}
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim * 2, **kw)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, **kw)
        self.q_norm = UnitOffsetRMSNorm(cfg.head_dim, cfg.norm_eps, device=device, dtype=dtype)
        self.k_norm = UnitOffsetRMSNorm(cfg.head_dim, cfg.norm_eps, device=device, dtype=dtype)

    def new_cache(self, batch_size: int = 1) -> GatedKVCache:
        weight = self.k_proj.weight
        return GatedKVCache(
            batch_size, self.cfg.n_kv_heads, self.cfg.head_dim, dtype=weight.dtype, device=weight.device
        )

    def cache_after(self, tokens: int, batch_size: int = 1, dtype: torch.dtype | None = None) -> GatedKVCache:
        """What the cache holds after a prefill of `tokens` tokens, appended on the meta device (no memory)."""
        checked_tokens(tokens)
        cfg = self.cfg
        cache = GatedKVCache(
            batch_size, cfg.n_kv_heads, cfg.head_dim, dtype=dtype or self.k_proj.weight.dtype, device="meta"
        )
        if tokens:
            new = torch.empty(batch_size, cfg.n_kv_heads, tokens, cfg.head_dim, device="meta", dtype=cache.k.dtype)
            cache.append(new, new)
        return cache

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """Linear weights and biases U(-1/sqrt(fan_in), +) from seeded_generator(f"{seed}/{name}") (CPU float32, then
        copied); the norms' weights 0, i.e. a scale of 1, as HF's _init_weights."""
        seed_dense_weights(self, seed)
        self.q_norm.weight.zero_()
        self.k_norm.weight.zero_()

    def _rotated(self, t: torch.Tensor, start: int) -> torch.Tensor:
        """t [B, heads, L, D]: its first rotary_dim dims rotated for positions start.., the rest as they are."""
        rot = self.cfg.rotary_dim
        if rot == 0:
            return t
        cos, sin = rope_cos_sin(
            start, t.shape[2], rot, self.cfg.rope_theta, device=t.device, dtype=t.dtype, scaling=self.cfg.rope_scaling
        )
        if rot == t.shape[-1]:
            return apply_rope(t, cos, sin)
        return torch.cat((apply_rope(t[..., :rot], cos, sin), t[..., rot:]), dim=-1)

    def forward(
        self, x: torch.Tensor, *, cache: GatedKVCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] or None; causal, positions from
        cache.seq_len."""
        cfg = self.cfg
        batch, length, _ = x.shape
        start = cache.seq_len if cache is not None else 0
        q, gate = self.q_proj(x).view(batch, length, cfg.n_heads, 2 * cfg.head_dim).chunk(2, dim=-1)
        q = self._rotated(rearrange(self.q_norm(q), "b l h d -> b h l d"), start)  # [B, H, L, D]
        k = self.k_norm(self.k_proj(x).view(batch, length, cfg.n_kv_heads, cfg.head_dim))
        k = self._rotated(rearrange(k, "b l g d -> b g l d"), start)  # [B, G, L, D]
        v = rearrange(self.v_proj(x), "b l (g d) -> b g l d", d=cfg.head_dim)
        if cache is not None:
            k, v = cache.append(k, v)
        mask = allowed_positions(length, k.shape[2], causal=True, key_padding_mask=None, device=x.device)
        out, weights = attend(q, k, v, scale=cfg.head_dim**-0.5, mask=mask, return_weights=return_weights)
        out = rearrange(out, "b h l d -> b l (h d)") * torch.sigmoid(gate.reshape(batch, length, -1))
        return self.o_proj(out), weights
