"""MHA, MQA and GQA as one module: they differ only in n_kv_heads (n_heads, 1, or g)."""

from __future__ import annotations

import torch
from einops import rearrange
from torch import nn

from .attend import allowed_positions, attend
from .cache import GroupedKVCache
from .config import AttentionConfig
from .rope import apply_rope, rope_cos_sin


class GroupedQueryAttention(nn.Module):
    """Parameter names as Llama's attention (q_proj, k_proj, v_proj, o_proj), so its checkpoints load as they are."""

    def __init__(self, cfg: AttentionConfig, *, device=None, dtype=None):
        super().__init__()
        if cfg.variant == "mla":
            raise ValueError("GroupedQueryAttention takes mha, mqa or gqa; build mla with MultiHeadLatentAttention.")
        self.cfg = cfg
        kw = {"device": device, "dtype": dtype, "bias": cfg.bias}
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, **kw)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, **(kw | {"bias": cfg.o_bias}))

    def new_cache(self, batch_size: int = 1) -> GroupedKVCache:
        weight = self.k_proj.weight
        return GroupedKVCache(
            batch_size, self.cfg.n_kv_heads, self.cfg.head_dim, dtype=weight.dtype, device=weight.device
        )

    def project_kv(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """source [B, S, d_model] -> k, v [B, n_kv_heads, S, head_dim] (before RoPE)."""
        k = rearrange(self.k_proj(source), "b s (g d) -> b g s d", g=self.cfg.n_kv_heads)
        v = rearrange(self.v_proj(source), "b s (g d) -> b g s d", g=self.cfg.n_kv_heads)
        return k, v

    def forward(
        self,
        x: torch.Tensor,
        cache: GroupedKVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        kv_input: torch.Tensor | None = None,
        causal: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, n_heads, L, S] or None.

        kv_input: another sequence to attend to (cross-attention): no causal mask and no RoPE, since positions in two
        sequences are not comparable. key_padding_mask [B, S]: True for real keys (S = cached + new).
        """
        cfg = self.cfg
        q = rearrange(self.q_proj(x), "b l (h d) -> b h l d", h=cfg.n_heads)
        if kv_input is not None:
            if cache is not None:
                raise ValueError("Cross-attention (kv_input) takes no cache: its keys do not grow token by token.")
            k, v = self.project_kv(kv_input)
            causal = False
        else:
            k, v = self.project_kv(x)
            if cfg.rope:
                start = cache.seq_len if cache is not None else 0
                cos, sin = rope_cos_sin(start, x.shape[1], cfg.head_dim, cfg.rope_theta, device=x.device, dtype=q.dtype)
                q = apply_rope(q, cos, sin, cfg.rope_interleave)
                k = apply_rope(k, cos, sin, cfg.rope_interleave)
            if cache is not None:
                k, v = cache.append(k, v)
        mask = allowed_positions(
            q.shape[2], k.shape[2], causal=causal, key_padding_mask=key_padding_mask, device=x.device
        )
        out, weights = attend(q, k, v, scale=cfg.head_dim**-0.5, mask=mask, return_weights=return_weights)
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), weights
