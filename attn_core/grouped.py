"""MHA, MQA and GQA as one module: they differ only in n_kv_heads (n_heads, 1, or g)."""

from __future__ import annotations

from typing import Any, overload

import torch
from einops import rearrange
from torch import nn

from .attend import KeyMask, allowed_positions, attend, sdpa, window_allowed
from .cache import GroupedKVCache, WindowedKVCache, checked_tokens
from .chunked import ChunkedKVCache, WeightlessRMSNorm, attend_in_chunks, chunk_allowed
from .config import AttentionConfig
from .contract import Queries
from .latent import RMSNorm, UnitOffsetRMSNorm
from .options import NO_OPTIONS, AttentionOptions
from .packed import PackedRows, linear
from .quant import CacheBits, QuantizedKVCache
from .rope import apply_rope, rope_cos_sin


class GroupedQueryAttention(nn.Module):
    """Parameter names as Llama's attention (q_proj, k_proj, v_proj, o_proj), so its checkpoints load as they are;
    with options (attn_core.options), also q_norm and k_norm (Qwen3, Gemma 3) and sinks (gpt-oss) as HF names them
    (Llama 4's weightless norm and chunks add no parameter)."""

    def __init__(
        self,
        cfg: AttentionConfig,
        *,
        options: AttentionOptions | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if cfg.variant == "mla":
            raise ValueError("GroupedQueryAttention takes mha, mqa or gqa; build mla with MultiHeadLatentAttention.")
        self.cfg = cfg
        self.options = options = NO_OPTIONS if options is None else options
        self.scale = options.score_scale(cfg)
        kw: dict[str, Any] = {"device": device, "dtype": dtype, "bias": cfg.bias}
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, **kw)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, **(kw | {"bias": cfg.o_bias}))
        self._packed_weight, self._packed_bias = PackedRows(), PackedRows()
        self.q_norm: nn.Module | None = None
        self.k_norm: nn.Module | None = None
        if options.qk_norm == "l2":
            self.q_norm, self.k_norm = WeightlessRMSNorm(cfg.norm_eps), WeightlessRMSNorm(cfg.norm_eps)
        elif options.qk_norm is not None:
            norm = UnitOffsetRMSNorm if options.qk_norm == "rms_unit_offset" else RMSNorm
            self.q_norm = norm(cfg.head_dim, cfg.norm_eps, device=device, dtype=dtype)
            self.k_norm = norm(cfg.head_dim, cfg.norm_eps, device=device, dtype=dtype)
        self.sinks: nn.Parameter | None = None
        if options.learned_sinks:
            self.sinks = nn.Parameter(torch.zeros(cfg.n_heads, device=device, dtype=dtype))

    @overload
    def new_cache(
        self, batch_size: int = 1, *, bits: None = None
    ) -> GroupedKVCache | WindowedKVCache | ChunkedKVCache: ...
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
    ) -> GroupedKVCache | WindowedKVCache | ChunkedKVCache | QuantizedKVCache:
        """An empty cache; with `bits`, quantised (KIVI's layout, attn_core.quant): `bits` per number in groups of
        `group_size`, keys per "channel" or "token", the newest `residual` tokens exact."""
        if bits is None:
            return self._empty_cache(batch_size, self.k_proj.weight.device)
        if self.options.window is not None or self.options.chunk is not None:
            raise ValueError("bits: a quantised cache is for full-attention layers; this layer has a window or chunks.")
        cfg, weight = self.cfg, self.k_proj.weight
        spec = CacheBits(bits, group_size, residual, keys)
        return QuantizedKVCache(
            batch_size, cfg.n_kv_heads, cfg.head_dim, spec, dtype=weight.dtype, device=weight.device
        )

    def _empty_cache(self, batch_size: int, device: torch.device) -> GroupedKVCache | WindowedKVCache | ChunkedKVCache:
        cfg, options, dtype = self.cfg, self.options, self.k_proj.weight.dtype
        if options.chunk is not None:
            return ChunkedKVCache(
                batch_size, cfg.n_kv_heads, cfg.head_dim, chunk=options.chunk, dtype=dtype, device=device
            )
        if options.window is not None:
            return WindowedKVCache(
                batch_size,
                cfg.n_kv_heads,
                cfg.head_dim,
                window=options.window,
                sink_tokens=options.sink_tokens,
                dtype=dtype,
                device=device,
            )
        return GroupedKVCache(batch_size, cfg.n_kv_heads, cfg.head_dim, dtype=dtype, device=device)

    def cache_after(self, tokens: int, batch_size: int = 1) -> GroupedKVCache | WindowedKVCache | ChunkedKVCache:
        """The cache after a prefill of `tokens` tokens, built on the meta device through the cache's own append
        (no attention computed, no memory): its nbytes and read_nbytes are the layer's at that length."""
        cache = self._empty_cache(batch_size, torch.device("meta"))
        if checked_tokens(tokens):
            kv = torch.empty(
                batch_size,
                self.cfg.n_kv_heads,
                tokens,
                self.cfg.head_dim,
                device="meta",
                dtype=self.k_proj.weight.dtype,
            )
            cache.append(kv, kv)
        return cache

    def _rotated(self, t: torch.Tensor, start: int | None) -> torch.Tensor:
        """t [B, heads, L, D] at positions start..start+L-1, rotated; as it is without RoPE or a position (None)."""
        cfg = self.cfg
        if not cfg.rope or start is None:
            return t
        cos, sin = rope_cos_sin(
            start,
            t.shape[2],
            cfg.head_dim,
            cfg.rope_theta,
            device=t.device,
            dtype=t.dtype,
            scaling=self.options.rope_scaling,
        )
        return apply_rope(t, cos, sin, cfg.rope_interleave)

    def queries(self, x: torch.Tensor, start: int | None) -> Queries:
        """x [B, L, d_model] -> q [B, H, L, D] as Queries (all of it rotary: nope has width 0), rotated for positions
        start.. (None: cross-attention, no RoPE)."""
        q = self._query_heads(x, start)
        return Queries(q[..., :0], q)

    def _query_heads(self, x: torch.Tensor, start: int | None) -> torch.Tensor:
        """queries() as one tensor, q [B, H, L, D]: what forward() attends with (normed per head before RoPE, with
        a q_norm)."""
        q = self._normed_rotated(
            rearrange(self.q_proj(x), "b l (h d) -> b h l d", h=self.cfg.n_heads), self.q_norm, start
        )
        temperature = self.options.temperature
        return q if temperature is None or start is None else temperature.scaled(q, start)

    def _normed_rotated(self, t: torch.Tensor, norm: nn.Module | None, start: int | None) -> torch.Tensor:
        """t [B, heads, L, D] normed per head and rotated: the norm first (Qwen3, Gemma 3), or after RoPE as Llama 4
        does (its norm has no weight, so the order changes only rounding)."""
        if norm is None:
            return self._rotated(t, start)
        if self.options.qk_norm == "l2":
            return norm(self._rotated(t, start))
        return self._rotated(norm(t), start)

    def keys_values(self, x: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, L, d_model] -> k (rotated), v [B, G, L, D]: what the forward pass caches for these tokens."""
        k, v = self.project_kv(x)
        return self._normed_rotated(k, self.k_norm, start), v

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
        # norms and the temperature apply per part
        packed = self.packed_qkv() if self.q_norm is None and self.options.temperature is None else None
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
        cache: GroupedKVCache | WindowedKVCache | ChunkedKVCache | QuantizedKVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
        kv_input: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] or None.

        kv_input: another sequence to attend to (cross-attention): no causal mask and no RoPE, since positions in two
        sequences are not comparable. key_padding_mask [B, S]: True for real keys (S = cached + new).
        With a window, S is the keys the call's queries may need (the cache's sinks and window, and the new tokens);
        with chunks, the held part of the first query's chunk and the new tokens; weights come in position order.
        """
        window, chunk = self.options.window, self.options.chunk
        if (window is not None or chunk is not None) and (
            kv_input is not None or key_padding_mask is not None or not causal
        ):
            raise ValueError(
                "A sliding-window or chunked layer is causal self-attention: kv_input, key_padding_mask and "
                "causal=False do not apply to it."
            )
        if kv_input is not None:
            if cache is not None:
                raise ValueError("Cross-attention (kv_input) takes no cache: its keys do not grow token by token.")
            q = self._query_heads(x, None)
            k, v = self.project_kv(kv_input)
            causal, start = False, 0
        else:
            start = cache.seq_len if cache is not None else 0
            if (
                cache is not None
                and x.shape[1] == 1
                and key_padding_mask is None
                and not return_weights
                and self.sinks is None
                and not self._moves_sinks(start, 1)
            ):
                return self._decode_step(x, cache, start), None
            q, k, v = self.rotated_qkv(x, start)
            if isinstance(cache, WindowedKVCache):
                k, v = cache.append(k, v, ordered=return_weights)
            elif cache is not None:
                k, v = cache.append(k, v)
        if chunk is not None and q.shape[2] == k.shape[2] > chunk and not return_weights and self.sinks is None:
            out = attend_in_chunks(q, k, v, scale=self.scale, chunk=chunk)  # a prompt from a chunk's start
            return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), None
        if chunk is not None:
            mask = self._chunk_mask(q.shape[2], k.shape[2], cache, chunk, x.device)
        elif window is None:
            mask = allowed_positions(
                q.shape[2], k.shape[2], causal=causal, key_padding_mask=key_padding_mask, device=x.device
            )
        else:
            mask = self._window_mask(q.shape[2], k.shape[2], cache, x.device)
        sink_queries = self._sink_queries(x, q, start) if self._moves_sinks(start, x.shape[1]) else None
        out, weights = attend(
            q,
            k,
            v,
            scale=self.scale,
            mask=mask,
            return_weights=return_weights,
            sinks=self.sinks,
            first_keys_queries=sink_queries,
        )
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), weights

    def _moves_sinks(self, start: int, q_len: int) -> bool:
        """Whether a query among positions start .. start + q_len - 1 scores the kept first tokens at StreamingLLM's
        positions inside the cache, not at their own (attn_core.options: sink_positions)."""
        position = self.options.sink_query_position()
        return self.cfg.rope and position is not None and start + q_len - 1 > position

    def _sink_queries(self, x: torch.Tensor, q: torch.Tensor, start: int) -> tuple[torch.Tensor, int]:
        """The queries that score the kept first tokens (the first keys of every windowed call): q [B, H, L, D] as it
        is up to position sink_tokens + window - 1, and the queries past it rotated to that position, where
        StreamingLLM's cache numbers its newest token (the sinks and the window before it keep their distances)."""
        position = self.options.sink_query_position()
        assert position is not None  # _moves_sinks said so
        first_moved = max(position + 1 - start, 0)  # rows past the position
        cfg = self.cfg
        cos, sin = rope_cos_sin(
            position, 1, cfg.head_dim, cfg.rope_theta, device=x.device, dtype=q.dtype, scaling=self.options.rope_scaling
        )
        moved = apply_rope(self._query_heads(x[:, first_moved:], None), cos, sin, cfg.rope_interleave)
        return torch.cat((q[:, :, :first_moved], moved), dim=2), self.options.sink_tokens

    def _chunk_mask(self, q_len: int, k_len: int, cache: object, chunk: int, device: torch.device) -> KeyMask:
        """Where L new queries of a chunked layer may look among the S keys its cache returned (all of them from the
        first query's chunk on)."""
        query_start = cache.seq_len - q_len if isinstance(cache, ChunkedKVCache) else 0
        key_start = cache.key_start if isinstance(cache, ChunkedKVCache) else 0
        if q_len == 1:  # the newest position sees its chunk up to itself: every key returned
            return KeyMask(None)
        if key_start == query_start and query_start // chunk == (query_start + q_len - 1) // chunk:
            return allowed_positions(q_len, k_len, causal=True, key_padding_mask=None, device=device)
        return KeyMask(chunk_allowed(query_start, q_len, key_start, chunk, device))

    def _window_mask(self, q_len: int, k_len: int, cache: object, device: torch.device) -> KeyMask:
        """Where L new queries may look among the S keys a windowed call attends to."""
        window, sink_tokens = self.options.window or 0, self.options.sink_tokens
        if isinstance(cache, WindowedKVCache):
            spans = cache.returned_spans
            if spans is None:  # one token, ring order: every key held is in its window
                return KeyMask(None)
            sinks_held, key_start = spans
            query_start = cache.seq_len - q_len
        else:
            if q_len <= window:  # a window as long as the prompt: plain causal
                return allowed_positions(q_len, k_len, causal=True, key_padding_mask=None, device=device)
            sinks_held, key_start, query_start = 0, 0, 0
        return window_allowed(
            query_start,
            q_len,
            sinks_held=sinks_held,
            key_start=key_start,
            window=window,
            sink_tokens=sink_tokens,
            device=device,
        )

    def _decode_step(
        self, x: torch.Tensor, cache: GroupedKVCache | WindowedKVCache | ChunkedKVCache | QuantizedKVCache, start: int
    ) -> torch.Tensor:
        """x [B, 1, d_model], one new token at position start -> out [B, 1, d_model]: forward()'s numbers with less
        work per token. The newest position may see every key returned (a windowed cache returns its sinks and window
        only), so no mask is drawn; with one query row per head, "b l (h d) -> b h l d" is a plain view; each KV
        head's R query heads are one block of R query rows, so one product per group reads the cached keys as they
        are, never repeated."""
        batch, heads, width = x.shape[0], self.cfg.n_heads, self.cfg.head_dim
        q, k, v = self.rotated_qkv(x, start)  # [B, H, 1, D], [B, G, 1, D], [B, G, 1, D]
        keys, values = cache.append(k, v)  # [B, G, S, D]
        groups = keys.shape[1]  # G, or H for a cache that repeats heads
        out = sdpa(
            q.reshape(batch, groups, heads // groups, width), keys, values, scale=self.scale
        )  # [B, G, R, D]: row r of group g is query head g * R + r, the order of o_proj's columns
        return self.o_proj(out.reshape(batch, 1, heads * width))
