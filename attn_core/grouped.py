"""MHA, MQA and GQA as one module: they differ only in n_kv_heads (n_heads, 1, or g)."""

from __future__ import annotations

from typing import Any, overload

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from .attend import allowed_positions, attend
from .cache import GroupedKVCache
from .config import AttentionConfig
from .contract import Queries
from .packed import PackedRows, linear
from .quant import CacheBits, QuantizedKVCache
from .rope import apply_rope, rope_cos_sin


class GroupedQueryAttention(nn.Module):
    """Parameter names as Llama's attention (q_proj, k_proj, v_proj, o_proj), so its checkpoints load as they are."""

    def __init__(
        self, cfg: AttentionConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        if cfg.variant == "mla":
            raise ValueError("GroupedQueryAttention takes mha, mqa or gqa; build mla with MultiHeadLatentAttention.")
        self.cfg = cfg
        kw: dict[str, Any] = {"device": device, "dtype": dtype, "bias": cfg.bias}
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, **kw)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, **(kw | {"bias": cfg.o_bias}))
        self._packed_weight, self._packed_bias = PackedRows(), PackedRows()

    @overload
    def new_cache(self, batch_size: int = 1, *, bits: None = None) -> GroupedKVCache: ...
    @overload
    def new_cache(
        self, batch_size: int = 1, *, bits: int, group_size: int = 32, residual: int = 128, keys: str = "channel"
    ) -> QuantizedKVCache: ...
    def new_cache(
        self,
        batch_size: int = 1,
        *,
        bits: int | None = None,
        group_size: int = 32,
        residual: int = 128,
        keys: str = "channel",
    ) -> GroupedKVCache | QuantizedKVCache:
        """An empty cache; with `bits`, quantised (KIVI's layout, attn_core.quant): `bits` per number in groups of
        `group_size`, keys per "channel" or "token", the newest `residual` tokens exact."""
        weight = self.k_proj.weight
        cfg = self.cfg
        if bits is None:
            return GroupedKVCache(batch_size, cfg.n_kv_heads, cfg.head_dim, dtype=weight.dtype, device=weight.device)
        spec = CacheBits(bits, group_size, residual, keys)
        return QuantizedKVCache(
            batch_size, cfg.n_kv_heads, cfg.head_dim, spec, dtype=weight.dtype, device=weight.device
        )

    def _rotated(self, t: torch.Tensor, start: int | None) -> torch.Tensor:
        """t [B, heads, L, D] at positions start..start+L-1, rotated; as it is without RoPE or a position (None)."""
        cfg = self.cfg
        if not cfg.rope or start is None:
            return t
        cos, sin = rope_cos_sin(start, t.shape[2], cfg.head_dim, cfg.rope_theta, device=t.device, dtype=t.dtype)
        return apply_rope(t, cos, sin, cfg.rope_interleave)

    def queries(self, x: torch.Tensor, start: int | None) -> Queries:
        """x [B, L, d_model] -> q [B, H, L, D] as Queries (all of it rotary: nope has width 0), rotated for positions
        start.. (None: cross-attention, no RoPE)."""
        q = self._query_heads(x, start)
        return Queries(q[..., :0], q)

    def _query_heads(self, x: torch.Tensor, start: int | None) -> torch.Tensor:
        """queries() as one tensor, q [B, H, L, D]: what forward() attends with."""
        return self._rotated(rearrange(self.q_proj(x), "b l (h d) -> b h l d", h=self.cfg.n_heads), start)

    def keys_values(self, x: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, L, d_model] -> k (rotated), v [B, G, L, D]: what the forward pass caches for these tokens."""
        k, v = self.project_kv(x)
        return self._rotated(k, start), v

    def packed_qkv(self) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """q_proj, k_proj and v_proj's weights [(H + 2G) * D, d_model] (and biases) as one, a view, when they lie end to
        end in memory (attn_core.packed; the trained model's are); None otherwise."""
        weight = self._packed_weight(self.q_proj.weight, self.k_proj.weight, self.v_proj.weight)
        if weight is None:
            return None
        if not self.cfg.bias:
            return weight, None
        bias = self._packed_bias(self.q_proj.bias, self.k_proj.bias, self.v_proj.bias)
        return None if bias is None else (weight, bias)

    def rotated_qkv(self, x: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [B, L, d_model] at positions start.. -> q [B, H, L, D], k and v [B, G, L, D], q and k rotated: what
        a self-attention step computes before its scores. With packed weights, one matrix product for all three, and
        one rotation for queries and keys, which lie side by side in its output."""
        cfg = self.cfg
        packed = self.packed_qkv()
        if packed is None:
            q = self._query_heads(x, start)
            k, v = self.keys_values(x, start)
            return q, k, v
        qkv = rearrange(linear(x, *packed), "b l (h d) -> b h l d", d=cfg.head_dim)  # [B, H + 2G, L, D], a view
        qk = self._rotated(qkv[:, : cfg.n_heads + cfg.n_kv_heads], start)
        return qk[:, : cfg.n_heads], qk[:, cfg.n_heads :], qkv[:, cfg.n_heads + cfg.n_kv_heads :]

    def project_kv(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """source [B, S, d_model] -> k, v [B, G, S, D] (before RoPE)."""
        k = rearrange(self.k_proj(source), "b s (g d) -> b g s d", g=self.cfg.n_kv_heads)
        v = rearrange(self.v_proj(source), "b s (g d) -> b g s d", g=self.cfg.n_kv_heads)
        return k, v

    def forward(
        self,
        x: torch.Tensor,
        *,
        cache: GroupedKVCache | QuantizedKVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
        kv_input: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] or None.

        kv_input: another sequence to attend to (cross-attention): no causal mask and no RoPE, since positions in two
        sequences are not comparable. key_padding_mask [B, S]: True for real keys (S = cached + new).
        """
        cfg = self.cfg
        if kv_input is not None:
            if cache is not None:
                raise ValueError("Cross-attention (kv_input) takes no cache: its keys do not grow token by token.")
            q = self._query_heads(x, None)
            k, v = self.project_kv(kv_input)
            causal = False
        else:
            start = cache.seq_len if cache is not None else 0
            if cache is not None and x.shape[1] == 1 and key_padding_mask is None and not return_weights:
                return self._decode_step(x, cache, start), None
            q, k, v = self.rotated_qkv(x, start)
            if cache is not None:
                k, v = cache.append(k, v)
        mask = allowed_positions(
            q.shape[2], k.shape[2], causal=causal, key_padding_mask=key_padding_mask, device=x.device
        )
        out, weights = attend(q, k, v, scale=cfg.head_dim**-0.5, mask=mask, return_weights=return_weights)
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), weights

    def _decode_step(self, x: torch.Tensor, cache: GroupedKVCache | QuantizedKVCache, start: int) -> torch.Tensor:
        """x [B, 1, d_model], one new token at position start -> out [B, 1, d_model]: forward()'s numbers with less
        work per token. The newest position may see every key, so no mask is drawn; with one query row per head,
        "b l (h d) -> b h l d" is a plain view; each KV head's R query heads are one block of R query rows, so one
        product per group reads the cached keys as they are, never repeated."""
        batch, heads, width = x.shape[0], self.cfg.n_heads, self.cfg.head_dim
        q, k, v = self.rotated_qkv(x, start)  # [B, H, 1, D], [B, G, 1, D], [B, G, 1, D]
        keys, values = cache.append(k, v)  # [B, G, S, D]
        groups = keys.shape[1]  # G, or H for a cache that repeats heads
        out = F.scaled_dot_product_attention(
            q.reshape(batch, groups, heads // groups, width), keys, values, scale=width**-0.5
        )  # [B, G, R, D]: row r of group g is query head g * R + r, the order of o_proj's columns
        return self.o_proj(out.reshape(batch, 1, heads * width))
