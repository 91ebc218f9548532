"""DeepSeek sparse attention (DSA, DeepSeek-V3.2): MLA whose queries each read only the top-k cached tokens.

A lightning indexer, cheap next to MLA (a few heads of width d_I, a ReLU instead of a softmax), scores every cached
token for each query; attention then reads only the index_topk best. The cache keeps everything (MLA's latent and one
indexer key of width d_I per token): the *reading* shrinks, not the cache. Numbers as HF transformers'
DeepseekV32Attention: the indexer's rotary part is the first d_h^R of its key, in the rotate-half layout (MLA's own
is interleaved), its key goes through a LayerNorm, its scores are sum_h w_h * ReLU(q_h . k / sqrt(d_I)).

A decoding step runs the indexer at every length, as DeepSeek's reference (inference/model.py of DeepSeek-V3.2-Exp)
and HF's module do (top-min(k, S)), gathers the chosen latent entries and attends over those alone (HF's module scores
all and masks). A prefill of no more than index_topk tokens is plain MLA: every key would be chosen, so the output is
the same without the scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from einops import rearrange
from torch import nn

from .attend import KeyMask, allowed_positions, causal_allowed
from .build import _init_from_seed
from .cache import GrowingSequenceBuffer, LatentKVCache, checked_tokens
from .config import AttentionConfig
from .contract import AttentionLayer, Queries
from .hf_fields import (
    bool_field,
    int_field,
    layer_index,
    mla_softmax_scale,
    positive_fields,
    rope_parameters,
    rope_settings,
)
from .latent import MultiHeadLatentAttention
from .options import AttentionOptions
from .rope import PLAIN, RopeScaling, apply_rope

CACHE_FORMULA = "(d_c + d_h^R + d_I) · T · b  (read per step: d_I · T + (d_c + d_h^R) · min(T, k), in units of b)"
# (read per step counts the indexer keys at every T: DeepSeek's reference scores them even when T <= k)


@dataclass(frozen=True)
class DSAConfig:
    """One DeepSeek-V3.2 attention layer: MLA's widths (HF names) and the indexer's (index_*)."""

    d_model: int
    n_heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    index_n_heads: int
    index_head_dim: int
    index_topk: int
    attention_bias: bool = False
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = PLAIN  # YaRN in the published configs: MLA's and the indexer's rotary parts
    softmax_scale: float | None = None  # MLA's score scale; None: 1/sqrt(d_nope + d_h^R) (YaRN's mscale² on it)
    index_rope_interleave: bool = False  # the indexer's rotary pairs: rotate-half (DeepSeek-V3.2), interleaved (GLM-5)

    def __post_init__(self) -> None:
        positive_fields(
            self,
            "d_model",
            "n_heads",
            "q_lora_rank",
            "kv_lora_rank",
            "qk_nope_head_dim",
            "qk_rope_head_dim",
            "v_head_dim",
            "index_n_heads",
            "index_head_dim",
            "index_topk",
        )
        if self.qk_rope_head_dim % 2:
            raise ValueError(f"qk_rope_head_dim={self.qk_rope_head_dim} is odd: RoPE rotates pairs.")
        if self.index_head_dim < self.qk_rope_head_dim:
            raise ValueError(
                f"index_head_dim={self.index_head_dim} is smaller than qk_rope_head_dim={self.qk_rope_head_dim}: "
                "the indexer rotates the first qk_rope_head_dim of its key."
            )

    @property
    def latent(self) -> AttentionConfig:
        """The MLA part, as attn_core's MLA layer takes it (HF's MLA norms use eps 1e-6 whatever rms_norm_eps says)."""
        return AttentionConfig(
            "mla",
            d_model=self.d_model,
            n_heads=self.n_heads,
            q_lora_rank=self.q_lora_rank,
            kv_lora_rank=self.kv_lora_rank,
            qk_nope_head_dim=self.qk_nope_head_dim,
            qk_rope_head_dim=self.qk_rope_head_dim,
            v_head_dim=self.v_head_dim,
            rope_interleave=True,
            rope_theta=self.rope_theta,
            bias=self.attention_bias,
            o_bias=self.attention_bias,
        )

    @property
    def options(self) -> AttentionOptions:
        """What MLA takes beside its shape: the score scale and the RoPE scaling."""
        return AttentionOptions(scale=self.softmax_scale, rope_scaling=self.rope_scaling)

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> DSAConfig:
        """From DeepSeek-V3.2's config.json (or DeepseekV32Config.to_dict()); every layer is DSA. RoPE as DeepSeek-V3's
        (attn_core.hf.read_deepseek_v3): YaRN's frequencies and attention factor on MLA's rotary part and on the
        indexer's, and MLA's scores scaled by yarn_mscale(factor, mscale_all_dim)² on top of 1/sqrt(d_nope + d_h^R)."""
        layer_index(hf, layer_idx)
        context = int_field(hf, "max_position_embeddings", 163840)
        theta, scaling = rope_settings(hf, 10000.0, context)
        nope, rope = int_field(hf, "qk_nope_head_dim"), int_field(hf, "qk_rope_head_dim")
        return cls(
            d_model=int_field(hf, "hidden_size"),
            n_heads=int_field(hf, "num_attention_heads"),
            q_lora_rank=int_field(hf, "q_lora_rank"),
            kv_lora_rank=int_field(hf, "kv_lora_rank"),
            qk_nope_head_dim=nope,
            qk_rope_head_dim=rope,
            v_head_dim=int_field(hf, "v_head_dim"),
            index_n_heads=int_field(hf, "index_n_heads", 64),
            index_head_dim=int_field(hf, "index_head_dim", 128),
            index_topk=int_field(hf, "index_topk", 2048),
            attention_bias=bool_field(hf, "attention_bias", False),
            rope_theta=theta,
            rope_scaling=scaling,
            softmax_scale=mla_softmax_scale(rope_parameters(hf), scaling, nope + rope),
        )

    def read_rows(self, tokens: int) -> tuple[int, int]:
        """(indexer keys, latent entries) the query at position tokens - 1 reads: every indexer key (scored at any
        length, as DeepSeek's reference and HF's module do) and the min(T, k) latent entries it picks."""
        return tokens, min(tokens, self.index_topk)

    def read_elements(self, tokens: int) -> int:
        """Numbers one query at position tokens - 1 reads from the cache (read_rows times each row's width)."""
        index_rows, latent_rows = self.read_rows(tokens)
        return index_rows * self.index_head_dim + latent_rows * (self.kv_lora_rank + self.qk_rope_head_dim)


def cache_bytes_formula(cfg: DSAConfig, tokens: int, batch: int, element_bytes: int) -> int:
    return (cfg.kv_lora_rank + cfg.qk_rope_head_dim + cfg.index_head_dim) * tokens * batch * element_bytes


class DSACache(LatentKVCache):
    """MLA's latent [B, 1, S, d_c + d_h^R] and the indexer's keys [B, 1, S, d_I] (rotated, normalised)."""

    def __init__(
        self,
        batch_size: int,
        kv_lora_rank: int,
        rope_dim: int,
        index_head_dim: int,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        super().__init__(batch_size, kv_lora_rank, rope_dim, dtype=dtype, device=device)
        self.buffers["index_k"] = GrowingSequenceBuffer(batch_size, 1, index_head_dim, dtype=dtype, device=device)
        # read_nbytes, set by each call: every indexer key its last query scored, and the latent entries it picked
        self.read_nbytes = 0
        # the last call's picks, [B, L, index_topk] cache positions per query, None when every key was read: what
        # GLM-5's shared layers read instead of running an indexer (attn_core.glm_dsa)
        self.last_topk: torch.Tensor | None = None

    def append_index_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """keys [B, 1, L, d_I] -> every indexer key held, [B, 1, S, d_I] (a view)."""
        return self.buffers["index_k"].append(keys)

    @property
    def index_k(self) -> torch.Tensor:
        return self.buffers["index_k"].view()

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return super().shapes() | {"index_k": tuple(self.index_k.shape)}


class LightningIndexer(nn.Module):
    """HF's DeepseekV32Indexer: wq_b reads MLA's normalised query residual, wk and weights_proj the layer input."""

    def __init__(self, cfg: DSAConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        kw: dict[str, Any] = {"device": device, "dtype": dtype, "bias": False}
        self.cfg = cfg
        self.wq_b = nn.Linear(cfg.q_lora_rank, cfg.index_n_heads * cfg.index_head_dim, **kw)
        self.wk = nn.Linear(cfg.d_model, cfg.index_head_dim, **kw)
        self.k_norm = nn.LayerNorm(cfg.index_head_dim, eps=1e-6, device=device, dtype=dtype)
        self.weights_proj = nn.Linear(cfg.d_model, cfg.index_n_heads, **kw)

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        rot, rest = x.split([self.cfg.qk_rope_head_dim, x.shape[-1] - self.cfg.qk_rope_head_dim], dim=-1)
        return torch.cat((apply_rope(rot, cos, sin, self.cfg.index_rope_interleave), rest), dim=-1)

    def keys(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x [B, L, d_model] -> keys [B, 1, L, d_I], what the cache keeps."""
        return self._rotate(self.k_norm(self.wk(x)), cos, sin)[:, None]

    def scores(
        self, x: torch.Tensor, q_resid: torch.Tensor, keys: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> torch.Tensor:
        """Index scores [B, L, S] of L queries against keys [B, 1, S, d_I], in HF's order of operations (the top-k
        it picks from these must be the same one, ties included)."""
        cfg = self.cfg
        q = rearrange(self.wq_b(q_resid), "b l (h d) -> b l h d", h=cfg.index_n_heads)
        q = self._rotate(q, cos[:, None], sin[:, None])  # [B, L, H_I, d_I]
        # keys as the left operand, [B, L, S, H_I]: the same dot products as HF's q @ keys^T, which MKL computes
        # ~2x slower (a decoding step at 32k spends more time here than anywhere else but the weights)
        scores = torch.matmul(keys.float(), q.float().transpose(-1, -2))
        scores = scores.mul_(cfg.index_head_dim**-0.5).relu_()  # in place: as HF's, without two more [.., S] tensors
        weights = self.weights_proj(x).float() * cfg.index_n_heads**-0.5  # [B, L, H_I]
        return torch.matmul(scores, weights.unsqueeze(-1)).squeeze(-1)


class DeepSeekSparseAttention(MultiHeadLatentAttention):
    """MLA (attn_core's layer, absorbed decoding) plus HF's indexer; state_dict as DeepseekV32Attention's."""

    def __init__(self, cfg: DSAConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__(cfg.latent, options=cfg.options, device=device, dtype=dtype)
        self.dsa_cfg = cfg
        self.indexer = LightningIndexer(cfg, device=device, dtype=dtype)

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """Linear weights U(+-1/sqrt(fan_in)) per (seed, parameter[, head]) as build_attention draws MLA's (so the MLA
        part equals build_attention(cfg.latent, seed)'s); RMSNorm scales ones; the indexer's LayerNorm weight ones and
        bias zeros, as HF's _init_weights sets them."""
        _init_from_seed(self, self.cfg, seed, range(self.cfg.n_heads))
        self.indexer.k_norm.weight.fill_(1.0)
        self.indexer.k_norm.bias.zero_()

    def new_cache(self, batch_size: int = 1) -> DSACache:
        weight = self.kv_a_proj_with_mqa.weight
        return self._cache(batch_size, weight.dtype, weight.device)

    def _cache(self, batch_size: int, dtype: torch.dtype, device: torch.device | str) -> DSACache:
        cfg = self.dsa_cfg
        return DSACache(
            batch_size, cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.index_head_dim, dtype=dtype, device=device
        )

    def cache_after(self, tokens: int, batch_size: int = 1) -> DSACache:
        """The cache after a prefill of tokens tokens, on the meta device (shapes only, no memory)."""
        cfg = self.dsa_cfg
        cache = self._cache(batch_size, self.kv_a_proj_with_mqa.weight.dtype, "meta")
        dtype = self.kv_a_proj_with_mqa.weight.dtype
        checked_tokens(tokens)
        # the latent buffer's own append: the cache's append joins c_kv and k_rope with a cat, which on the meta
        # device first imports torch's reference kernels (seconds, once per process)
        width = cfg.kv_lora_rank + cfg.qk_rope_head_dim
        cache.buffers["latent"].append(torch.empty(batch_size, 1, tokens, width, device="meta", dtype=dtype))
        cache.append_index_keys(torch.empty(batch_size, 1, tokens, cfg.index_head_dim, device="meta", dtype=dtype))
        cache.read_nbytes = batch_size * cfg.read_elements(tokens) * cache.latent.element_size()
        return cache

    def index_scores(self, x: torch.Tensor, *, cache: DSACache | None = None) -> torch.Tensor:
        """The lightning indexer's scores [B, L, S] of x's L queries for every key (the cached ones, then x's own),
        -inf where a query may not look (a later key): what forward() takes each query's index_topk best of. The
        cache is read, not changed, so call it before the forward() that appends x."""
        start = cache.seq_len if cache is not None else 0
        q_len = x.shape[1]
        q_resid = self.q_a_layernorm(self.q_a_proj(x))
        cos, sin = self._rotary(start, q_len, x)
        keys = self.indexer.keys(x, cos, sin)  # [B, 1, L, d_I]
        if cache is not None and start:
            keys = torch.cat((cache.index_k, keys), dim=2)  # [B, 1, S, d_I]
        scores = self.indexer.scores(x, q_resid, keys, cos, sin)
        return scores.masked_fill(~causal_allowed(q_len, keys.shape[2], x.device)[:, 0], float("-inf"))

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        *,
        cache: DSACache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
        absorb: bool | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] (zero outside each query's top-k) or None.

        absorb: as MLA's (None: absorbed when decoding after a prefilled cache).
        """
        cfg = self.dsa_cfg
        batch, q_len, _ = x.shape
        start = cache.seq_len if cache is not None else 0
        q_resid = self.q_a_layernorm(self.q_a_proj(x))
        queries = self.split_queries(self.q_b_proj(q_resid), start)
        c_kv, k_rope = self.compress(x, start)
        cos, sin = self._rotary(start, q_len, x)
        index_keys = self.indexer.keys(x, cos, sin)
        if cache is not None:
            latent, index_keys = cache.append(c_kv, k_rope), cache.append_index_keys(index_keys)
        else:
            latent = torch.cat((c_kv, k_rope), dim=-1)
        keys_len = latent.shape[2]
        absorb = start > 0 if absorb is None else absorb
        mask = allowed_positions(q_len, keys_len, causal=causal, key_padding_mask=key_padding_mask, device=x.device)
        chosen: torch.Tensor | None = None  # [B, L, k]: each query's picks, None when it reads every key
        if q_len == 1 and mask.allowed is None:  # a decoding step: score every key, read the chosen entries only
            scores = self.indexer.scores(x, q_resid, index_keys, cos, sin)  # [B, 1, S]
            top = min(cfg.index_topk, scores.shape[-1])  # every key while no more than k are cached, as HF
            # in cache order: reading rows in order is ~100x faster on a CPU than in score order, and attention is
            # the same
            chosen = scores.topk(top, dim=-1).indices.sort(dim=-1).values  # [B, 1, k], as HF picks
            out, weights = attend_chosen_rows(self, queries, latent, chosen, return_weights)
        elif keys_len <= cfg.index_topk:  # a prefill whose queries would each choose every key: plain MLA
            out, weights = self.attend_latent(queries, latent, mask, absorb=absorb, return_weights=return_weights)
        else:
            allowed = mask.allowed if mask.allowed is not None else causal_allowed(q_len, keys_len, x.device)
            bias = torch.zeros(allowed.shape, device=x.device).masked_fill_(~allowed, torch.finfo(torch.float32).min)
            scores = self.indexer.scores(x, q_resid, index_keys, cos, sin) + bias[:, 0]  # [B, L, S]
            chosen = scores.topk(cfg.index_topk, dim=-1).indices  # [B, L, k]
            mask = KeyMask(allowed & picked_keys(chosen, keys_len)[:, None])
            out, weights = self.attend_latent(queries, latent, mask, absorb=absorb, return_weights=return_weights)
        if cache is not None:
            cache.read_nbytes = batch * cfg.read_elements(keys_len) * latent.element_size()
            cache.last_topk = chosen
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), weights


def picked_keys(chosen: torch.Tensor, keys_len: int) -> torch.Tensor:
    """chosen [B, L, k] key positions -> [B, L, S], True where a query picked the key."""
    batch, q_len, _ = chosen.shape
    return torch.zeros(batch, q_len, keys_len, dtype=torch.bool, device=chosen.device).scatter_(-1, chosen, True)


def attend_chosen_rows(
    layer: MultiHeadLatentAttention, queries: Queries, latent: torch.Tensor, chosen: torch.Tensor, return_weights: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One query per sequence over its chosen latent entries alone (chosen [B, 1, k], in cache order): the rows
    gathered, [B, 1, k, d_c + d_h^R], and attended absorbed; weights spread back to [B, H, 1, S], zero elsewhere."""
    # row copies per sequence (index_select), ~8x faster than one advanced-indexing gather of single numbers
    gathered = torch.stack([rows[0].index_select(0, picks[0]) for rows, picks in zip(latent, chosen, strict=True)])
    out, weights = layer.attend_latent(
        queries, gathered[:, None], KeyMask(None), absorb=True, return_weights=return_weights
    )
    if weights is not None:  # [B, H, 1, k] -> [B, H, 1, S], zero where not chosen
        spread = weights.new_zeros(*weights.shape[:3], latent.shape[2])
        weights = spread.scatter_(-1, chosen[:, None].expand(-1, weights.shape[1], -1, -1), weights)
    return out, weights


if TYPE_CHECKING:  # mypy checks here that the DSA layer meets the core's contract, as MLA does

    def _meet_the_contract(layer: DeepSeekSparseAttention) -> AttentionLayer[DSACache]:
        return layer
