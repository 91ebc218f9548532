"""Multi-head latent attention (MLA) as in DeepSeek-V2/V3.

Keys and values are compressed jointly into one normalised latent c_kv per token; position enters through a separate
rotary key k_rope shared by all heads (decoupled RoPE), since a rotation would not commute with the up-projection.
Only c_kv and k_rope are cached. Attention can be computed two ways that give the same numbers:
- naive: up-project the latent to per-head keys and values, then attend as MHA;
- absorbed: fold the key up-projection into the query and the value up-projection into the output, and attend in
  latent space, where MLA is multi-query attention with one KV head of width d_c + d_h^R.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from .attend import KeyMask, allowed_positions, attend
from .cache import LatentKVCache, checked_tokens
from .config import AttentionConfig
from .contract import Queries
from .options import NO_OPTIONS, AttentionOptions
from .rope import apply_rope, rope_cos_sin


class RMSNorm(nn.Module):
    """Root-mean-square norm, computed in float32 as DeepSeek's reference does."""

    def __init__(
        self, dim: int, eps: float, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32 and self.weight.dtype == torch.float32:
            # the lines below in one call, the same numbers bit for bit (decoding runs two norms per layer per token)
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


class UnitOffsetRMSNorm(RMSNorm):
    """RMSNorm scaling by 1 + weight (weight starts at 0), computed in float32 and cast back at the end: Gemma's norm,
    and Qwen3-Next's (HF's Gemma3RMSNorm and Qwen3NextRMSNorm compute the same)."""

    def __init__(
        self, dim: int, eps: float, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__(dim, eps, device=device, dtype=dtype)
        nn.init.zeros_(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * (1.0 + self.weight.float())).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    """Parameter names as DeepSeek-V3's attention, so its checkpoints load with load_state_dict as they are."""

    def __init__(
        self,
        cfg: AttentionConfig,
        *,
        options: AttentionOptions | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if cfg.variant != "mla":
            raise ValueError("MultiHeadLatentAttention takes variant='mla'.")
        self.cfg = cfg
        # scale and rope_scaling only (DeepSeek-V3's YaRN: its frequencies, and mscale² on the scores)
        self.options = options = NO_OPTIONS if options is None else options
        options.check_for(cfg)
        self.scale = options.score_scale(cfg)
        self.widths = widths = cfg.latent_widths  # resolved once: forward() reads them at every step
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        heads, qk_dim = cfg.n_heads, cfg.qk_head_dim
        if cfg.q_lora_rank is None:
            self.q_proj = nn.Linear(cfg.d_model, heads * qk_dim, bias=False, **kw)
        else:
            self.q_a_proj = nn.Linear(cfg.d_model, cfg.q_lora_rank, bias=cfg.bias, **kw)
            self.q_a_layernorm = RMSNorm(cfg.q_lora_rank, cfg.norm_eps, **kw)
            self.q_b_proj = nn.Linear(cfg.q_lora_rank, heads * qk_dim, bias=False, **kw)
        self.kv_a_proj_with_mqa = nn.Linear(
            cfg.d_model, widths.kv_lora_rank + widths.qk_rope_head_dim, bias=cfg.bias, **kw
        )
        self.kv_a_layernorm = RMSNorm(widths.kv_lora_rank, cfg.norm_eps, **kw)
        self.kv_b_proj = nn.Linear(
            widths.kv_lora_rank, heads * (widths.qk_nope_head_dim + widths.v_head_dim), bias=False, **kw
        )
        self.o_proj = nn.Linear(heads * widths.v_head_dim, cfg.d_model, bias=cfg.o_bias, **kw)

    def new_cache(self, batch_size: int = 1) -> LatentKVCache:
        weight = self.kv_a_proj_with_mqa.weight
        return LatentKVCache(
            batch_size, self.widths.kv_lora_rank, self.widths.qk_rope_head_dim, dtype=weight.dtype, device=weight.device
        )

    def cache_after(self, tokens: int, batch_size: int = 1) -> LatentKVCache:
        """The cache after a prefill of `tokens` tokens, built on the meta device through its own append (no
        attention computed, no memory)."""
        widths, dtype = self.widths, self.kv_a_proj_with_mqa.weight.dtype
        cache = LatentKVCache(batch_size, widths.kv_lora_rank, widths.qk_rope_head_dim, dtype=dtype, device="meta")
        if checked_tokens(
            tokens
        ):  # its one buffer's append: append() would join c_kv and k_rope first (a cat, slow to set up on meta)
            width = widths.kv_lora_rank + widths.qk_rope_head_dim
            cache.buffers["latent"].append(torch.empty(batch_size, 1, tokens, width, device="meta", dtype=dtype))
        return cache

    def _rotary(self, start: int, length: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        return rope_cos_sin(
            start,
            length,
            self.widths.qk_rope_head_dim,
            cfg.rope_theta,
            device=like.device,
            dtype=like.dtype,
            scaling=self.options.rope_scaling,
        )

    def queries(self, x: torch.Tensor, start: int) -> Queries:
        """x [B, L, d_model] -> q_nope [B, H, L, d_nope], q_rope [B, H, L, d_h^R] (rotated) as Queries."""
        cfg = self.cfg
        q = self.q_proj(x) if cfg.q_lora_rank is None else self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        return self.split_queries(q, start)

    def split_queries(self, q: torch.Tensor, start: int) -> Queries:
        """Projected queries [B, L, H * d_k] -> Queries, rotated (for a subclass that needs q_lora's residual too)."""
        cfg = self.cfg
        q = rearrange(q, "b l (h d) -> b h l d", h=cfg.n_heads)
        q_nope, q_rope = q.split([self.widths.qk_nope_head_dim, self.widths.qk_rope_head_dim], dim=-1)
        if cfg.rope:
            q_rope = apply_rope(q_rope, *self._rotary(start, q.shape[2], q), cfg.rope_interleave)
        return Queries(q_nope, q_rope)

    def compress(self, x: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, L, d_model] -> c_kv [B, 1, L, d_c] (normalised), k_rope [B, 1, L, d_h^R] (rotated): what is cached."""
        cfg = self.cfg
        c_kv, k_rope = self.kv_a_proj_with_mqa(x)[:, None].split(
            [self.widths.kv_lora_rank, self.widths.qk_rope_head_dim], dim=-1
        )
        c_kv = self.kv_a_layernorm(c_kv)
        if cfg.rope:
            k_rope = apply_rope(k_rope, *self._rotary(start, x.shape[1], k_rope), cfg.rope_interleave)
        return c_kv, k_rope

    def absorbed_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W_UK [H, d_nope, d_c] and W_UV [H, d_v, d_c]: views of kv_b_proj, no copy."""
        cfg = self.cfg
        widths = self.widths
        per_head = self.kv_b_proj.weight.view(
            cfg.n_heads, widths.qk_nope_head_dim + widths.v_head_dim, widths.kv_lora_rank
        )
        return per_head[:, : widths.qk_nope_head_dim], per_head[:, widths.qk_nope_head_dim :]

    def up_project(self, c_kv: torch.Tensor, k_rope: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The naive way: latent [B, 1, S, d_c] -> per-head keys [B, H, S, d_nope + d_h^R] and values [B, H, S, d_v]."""
        cfg = self.cfg
        kv = rearrange(self.kv_b_proj(c_kv[:, 0]), "b s (h d) -> b h s d", h=cfg.n_heads)
        k_nope, v = kv.split([self.widths.qk_nope_head_dim, self.widths.v_head_dim], dim=-1)
        return torch.cat((k_nope, k_rope.expand(-1, cfg.n_heads, -1, -1)), dim=-1), v

    def forward(
        self,
        x: torch.Tensor,
        *,
        cache: LatentKVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
        absorb: bool | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] or None.

        absorb: None chooses the absorbed way when decoding after a prefilled cache and the naive way otherwise
        (for a long prompt, up-projecting once is cheaper than attending at width d_c).
        """
        start = cache.seq_len if cache is not None else 0
        q_nope, q_rope = self.queries(x, start)
        c_kv, k_rope = self.compress(x, start)
        # [B, 1, S, d_c + d_h^R]: with a cache, a view of all it holds
        latent = cache.append(c_kv, k_rope) if cache is not None else torch.cat((c_kv, k_rope), dim=-1)
        if absorb is None:
            absorb = start > 0
        mask = allowed_positions(
            x.shape[1], latent.shape[2], causal=causal, key_padding_mask=key_padding_mask, device=x.device
        )
        out, weights = self.attend_latent(
            Queries(q_nope, q_rope), latent, mask, absorb=absorb, return_weights=return_weights
        )
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), weights

    def attend_latent(
        self, queries: Queries, latent: torch.Tensor, mask: KeyMask, *, absorb: bool, return_weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Queries [B, H, L, *] over latent [B, 1, S, d_c + d_h^R] -> out [B, H, L, d_v] (before o_proj), weights."""
        d_c = self.widths.kv_lora_rank
        scale = self.scale
        if absorb:
            w_uk, w_uv = self.absorbed_weights()
            q_latent = torch.einsum("bhln,hnc->bhlc", queries.nope, w_uk)  # [B, H, L, d_c]
            out_latent, weights = attend(
                torch.cat((q_latent, queries.rope), dim=-1),
                latent,
                latent[..., :d_c],
                scale=scale,
                mask=mask,
                return_weights=return_weights,
            )  # [B, H, L, d_c]
            return torch.einsum("bhlc,hvc->bhlv", out_latent, w_uv), weights
        keys, values = self.up_project(latent[..., :d_c], latent[..., d_c:])
        return attend(queries.joined(), keys, values, scale=scale, mask=mask, return_weights=return_weights)
