"""A trained model (or any conversion of it) whose attention layers keep a quantised KV cache (KIVI; attn_core.quant).

    q = with_cache_bits(lm, bits=4, group_size=32, residual=128, keys="channel")
    q.generate(ids, cache=q.new_cache())     # every layer's cache holds packed codes, scales, zero points, a window
    q.perplexity(text)                       # each token predicted as a decoding step through that cache would

What a position reads: every token older than the cache's exact window (Q(t) of attn_core.quant) read back from its
codes, the rest exact, as a decoding step at that position reads its cache. A forward pass without a cache and a
prefill through one read the same, so one forward pass scores a text as token-by-token decoding would, and cached
decoding equals recomputing. (KIVI and HF's QuantizedCache attend to a prompt exactly and quantise it afterwards: for
a prompt that is the same as here only up to the window; the pattern here does not depend on how a text is chunked.)

Grouped layers quantise keys per channel or per token and values per token; MLA's cached latent [c_kv | k_rope] is
both its key and its value and is quantised as `keys` says.
"""

from __future__ import annotations

from fractions import Fraction

import torch
from einops import rearrange

from ..accounting import as_dtype, bytes_per_element
from ..attend import KeyMask, attend
from ..config import AttentionConfig
from ..grouped import GroupedQueryAttention
from ..latent import MultiHeadLatentAttention
from ..quant import CacheBits, QuantizedKVCache, QuantizedLatentKVCache, part_bytes, pattern_reads
from .model import PretrainedLM


def _fold_copies(weights: torch.Tensor | None, keys: int) -> torch.Tensor | None:
    """Weights over copies of the keys laid end to end [B, H, L, c · S] -> per key [B, H, L, S]."""
    if weights is None:
        return None
    return weights.view(*weights.shape[:3], -1, keys).sum(3)


class QuantizedCacheAttention(GroupedQueryAttention):
    """A grouped layer with a quantised cache: its own forward reads keys and values by the pattern of the module's
    docstring; a single decoding step is the grouped layer's own."""

    def __init__(
        self,
        cfg: AttentionConfig,
        bits: CacheBits,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(cfg, device=device, dtype=dtype)
        bits.check_width(cfg.head_dim, (bits.keys, "token"))
        self.bits = bits

    def new_cache(self, batch_size: int = 1) -> QuantizedKVCache:  # type: ignore[override]
        b = self.bits
        return super().new_cache(batch_size, bits=b.bits, group_size=b.group_size, residual=b.residual, keys=b.keys)

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        *,
        cache: QuantizedKVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] or None: causal self-attention only."""
        if key_padding_mask is not None or not causal:
            raise ValueError("a quantised cache's layer attends causally to its own tokens, without padding masks.")
        if cache is not None and x.shape[1] == 1 and not return_weights:
            return super().forward(x, cache=cache)  # one decoding step: it reads exactly what the cache returns
        start = cache.seq_len if cache is not None else 0
        q, k, v = self.rotated_qkv(x, start)  # [B, H, L, D], [B, G, L, D] x 2
        if cache is not None:
            k, v = cache.append(k, v)  # [B, G, S, D]: older than the window read back, the rest exact
        (keys, values), allowed = pattern_reads([(k, self.bits.keys), (v, "token")], start, x.shape[1], self.bits)
        out, weights = attend(q, keys, values, scale=self.scale, mask=KeyMask(allowed), return_weights=return_weights)
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), _fold_copies(weights, k.shape[2])


class QuantizedCacheLatentAttention(MultiHeadLatentAttention):
    """MLA with a quantised latent cache; reads by the pattern of the module's docstring (absorbed attention over the
    latent's copies); a single decoding step is MLA's own."""

    def __init__(
        self,
        cfg: AttentionConfig,
        bits: CacheBits,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(cfg, device=device, dtype=dtype)
        bits.check_width(self.widths.kv_lora_rank + self.widths.qk_rope_head_dim, (bits.keys,))
        self.bits = bits

    def new_cache(self, batch_size: int = 1) -> QuantizedLatentKVCache:  # type: ignore[override]
        weight = self.kv_a_proj_with_mqa.weight
        return QuantizedLatentKVCache(
            batch_size,
            self.widths.kv_lora_rank,
            self.widths.qk_rope_head_dim,
            self.bits,
            dtype=weight.dtype,
            device=weight.device,
        )

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        *,
        cache: QuantizedLatentKVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
        absorb: bool | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if key_padding_mask is not None or not causal:
            raise ValueError("a quantised cache's layer attends causally to its own tokens, without padding masks.")
        if cache is not None and x.shape[1] == 1 and not return_weights:
            return super().forward(x, cache=cache, absorb=absorb)  # type: ignore[arg-type]
        d_c = self.widths.kv_lora_rank
        start = cache.seq_len if cache is not None else 0
        q_nope, q_rope = self.queries(x, start)
        c_kv, k_rope = self.compress(x, start)
        latent = cache.append(c_kv, k_rope) if cache is not None else torch.cat((c_kv, k_rope), dim=-1)
        (copies,), allowed = pattern_reads([(latent, self.bits.keys)], start, x.shape[1], self.bits)
        w_uk, w_uv = self.absorbed_weights()
        queries = torch.cat((torch.einsum("bhln,hnc->bhlc", q_nope, w_uk), q_rope), dim=-1)  # [B, H, L, d_c + d_h^R]
        out_latent, weights = attend(
            queries,
            copies,
            copies[..., :d_c],
            scale=self.scale,
            mask=KeyMask(allowed),
            return_weights=return_weights,
        )  # [B, H, L, d_c]
        out = torch.einsum("bhlc,hvc->bhlv", out_latent, w_uv)
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), _fold_copies(weights, latent.shape[2])


class QuantizedCacheLM(PretrainedLM):
    """A PretrainedLM whose layers keep quantised caches (with_cache_bits); everything but the attention layers'
    module objects is the source model's, and those share its weights."""

    def __init__(self, source: PretrainedLM, bits: CacheBits) -> None:
        super().__init__(source.config, source.attention, source.tokenizer, device="meta")
        self.cache_bits = bits
        self.embed_tokens = source.embed_tokens
        self.norm = source.norm
        if not source.config.tie_embeddings:
            self.lm_head = source.lm_head
        for mine, theirs in zip(self.decoder_layers, source.decoder_layers, strict=True):
            mine.input_layernorm = theirs.input_layernorm
            mine.post_attention_layernorm = theirs.post_attention_layernorm
            mine.mlp = theirs.mlp
            layer = _quantized_layer(source.attention, bits)
            layer.load_state_dict(theirs.self_attn.state_dict(), assign=True, strict=True)  # the same tensors
            mine.self_attn = layer

    def _parts(self) -> list[tuple[int, int, str]]:
        """(heads, width, layout) of each quantised part of one layer's cache."""
        cfg, bits = self.attention, self.cache_bits
        if cfg.variant == "mla":
            widths = cfg.latent_widths
            return [(1, widths.kv_lora_rank + widths.qk_rope_head_dim, bits.keys)]
        return [(cfg.n_kv_heads, cfg.head_dim, bits.keys), (cfg.n_kv_heads, cfg.head_dim, "token")]

    def kv_cache_bytes_per_token(self, dtype: torch.dtype | str = torch.float32) -> int:
        """Bytes one token leaves in one layer's cache once quantised (long contexts; the exact window aside):
        per part, heads · (width · bits / 8 + 2 · width / group_size · element bytes)."""
        element, bits = bytes_per_element(as_dtype(dtype)), self.cache_bits
        total = sum(
            heads * (Fraction(width * bits.bits, 8) + Fraction(2 * width * element, bits.group_size))
            for heads, width, _ in self._parts()
        )
        if total.denominator != 1:
            raise ValueError(
                f"group_size={bits.group_size} leaves {float(total):.3f} bytes per token, not a whole number: "
                "use cache_nbytes(tokens) for a given context."
            )
        return int(total)

    def cache_nbytes(self, tokens: int, batch: int = 1, dtype: torch.dtype | str = torch.float32) -> int:
        """Bytes the whole model's cache holds after `tokens` tokens, its exact window included (attn_core.quant's
        formula per part, times layers)."""
        if tokens < 0:
            raise ValueError(f"tokens={tokens}: a cache holds 0 or more tokens.")
        element = bytes_per_element(as_dtype(dtype))
        per_layer = sum(
            part_bytes(tokens, batch, heads, width, element, self.cache_bits, layout)
            for heads, width, layout in self._parts()
        )
        return per_layer * self.config.n_layers


def _quantized_layer(cfg: AttentionConfig, bits: CacheBits) -> QuantizedCacheAttention | QuantizedCacheLatentAttention:
    if cfg.variant == "mla":
        return QuantizedCacheLatentAttention(cfg, bits, device="meta")
    return QuantizedCacheAttention(cfg, bits, device="meta")


def with_cache_bits(
    lm: PretrainedLM, bits: int = 4, group_size: int = 32, residual: int = 128, keys: str = "channel"
) -> QuantizedCacheLM:
    """lm (the trained model or a conversion of it, healed or not) with quantised KV caches: `bits` (8, 4 or 2) per
    cached number in groups of `group_size`, keys per "channel" (KIVI) or "token", values per token, the newest
    `residual` tokens exact. Shares lm's weights; see the module's docstring for what each position reads."""
    spec = CacheBits(bits, group_size, residual, keys)
    if isinstance(lm, QuantizedCacheLM):
        raise ValueError("lm already has a quantised cache: give with_cache_bits the model it was made from.")
    if any(isinstance(m, GroupedQueryAttention) and m.options.window is not None for m in lm.modules()):
        # the quantised layers are rebuilt from the config alone, which would silently drop the window
        raise ValueError("lm has windowed layers: quantise first, then window: with_window(with_cache_bits(lm), ...).")
    return QuantizedCacheLM(lm, spec).eval().requires_grad_(False)
