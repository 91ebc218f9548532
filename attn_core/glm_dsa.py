"""GLM-5's sparse attention (HF transformers' glm_moe_dsa): DeepSeek-V3.2's DSA (attn_core.dsa) whose layers either
run the lightning indexer ("full") or reuse the top-k the full layer before them picked ("shared", HF's
GlmMoeDsaAttention with skip_topk: no indexer parameters, no indexer keys cached).

A full layer is dsa.py's layer with the indexer's rotary pairs interleaved (GLM's indexer rotates its first d_h^R
as MLA does; DeepSeek-V3.2's rotates them half by half). Its cache keeps each call's picks (DSACache.last_topk), and
a shared layer is called with that cache beside its own:

    full_out, _ = full(x, cache=full_cache)
    shared_out, _ = shared(x, cache=shared_cache, topk_from=full_cache)

as GlmMoeDsaModel hands each layer's top-k to the next (prev_topk_indices, carried through shared layers unchanged,
so a shared layer reads the last full layer before it). A shared layer's cache is MLA's latent alone: d_c + d_h^R
numbers per token, and a decoding step reads the min(T, k) entries the full layer chose.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from einops import rearrange

from .attend import KeyMask, allowed_positions, causal_allowed
from .build import _init_from_seed
from .cache import LatentKVCache, checked_tokens
from .dsa import DSACache, DSAConfig, attend_chosen_rows, picked_keys
from .hf_fields import (
    bool_field,
    int_field,
    layer_index,
    mla_softmax_scale,
    once,
    require_model_type,
    rope_parameters,
    rope_settings,
)
from .latent import MultiHeadLatentAttention

INDEXER_TYPES = ("full", "shared")
SHARED_CACHE_FORMULA = "(d_c + d_h^R) · T · b  (read per step: (d_c + d_h^R) · min(T, k), the full layer's picks)"


def indexer_types(hf: Mapping[str, Any]) -> list[str]:
    """_indexer_types(hf), worked out once per config read (every layer's reader asks for the whole list)."""
    return once(hf, "indexer_types", lambda: _indexer_types(hf))


def _indexer_types(hf: Mapping[str, Any]) -> list[str]:
    """Each layer's indexer mode as GlmMoeDsaConfig fills it in: indexer_types as given, else index_topk_pattern
    ("FSS..." or a list), else the schedule of index_topk_freq (1) and index_skip_topk_offset (2), under which every
    layer is full. A ValueError naming the field for a list of the wrong length, an unknown entry, or a shared layer
    with no full layer before it."""
    layers = int_field(hf, "num_hidden_layers")
    given, name = hf.get("indexer_types"), "indexer_types"
    if given is None and hf.get("index_topk_pattern") is not None:
        pattern, name = hf["index_topk_pattern"], "index_topk_pattern"
        given = [{"F": "full", "S": "shared"}.get(c, c) for c in pattern] if isinstance(pattern, str) else pattern
    if given is None:
        freq = max(int_field(hf, "index_topk_freq", 1), 1)
        offset = int_field(hf, "index_skip_topk_offset", 2, minimum=0)
        return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(layers)]
    if not isinstance(given, list | tuple) or len(given) != layers or any(t not in INDEXER_TYPES for t in given):
        raise ValueError(
            f"config field {name!r} must list {layers} entries (num_hidden_layers), each 'full' or 'shared' "
            "(F or S in a pattern)."
        )
    if given[0] == "shared":
        raise ValueError(
            f"config field {name!r} makes layer 0 'shared': a shared layer reuses the top-k of a full layer before "
            "it, and layer 0 has none."
        )
    return [str(t) for t in given]


def glm_dsa_config(hf: Mapping[str, Any], layer_idx: int) -> DSAConfig:
    """A GLM-5 layer's widths, read as GlmMoeDsaConfig defaults them (zai-org/GLM-5's: 32 indexer heads of 128,
    top-2048, context 202,752); MLA's score scale and YaRN as DeepSeek's (yarn_apply_mscale)."""
    require_model_type(hf, "glm_moe_dsa")
    layer_index(hf, layer_idx)
    context = int_field(hf, "max_position_embeddings", 202752)
    theta, scaling = rope_settings(hf, 10000.0, context)
    nope, rope = int_field(hf, "qk_nope_head_dim", 192), int_field(hf, "qk_rope_head_dim", 64)
    return DSAConfig(
        d_model=int_field(hf, "hidden_size"),
        n_heads=int_field(hf, "num_attention_heads"),
        q_lora_rank=int_field(hf, "q_lora_rank", 2048),
        kv_lora_rank=int_field(hf, "kv_lora_rank", 512),
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=int_field(hf, "v_head_dim", 256),
        index_n_heads=int_field(hf, "index_n_heads", 32),
        index_head_dim=int_field(hf, "index_head_dim", 128),
        index_topk=int_field(hf, "index_topk", 2048),
        attention_bias=bool_field(hf, "attention_bias", False),
        rope_theta=theta,
        rope_scaling=scaling,
        softmax_scale=mla_softmax_scale(rope_parameters(hf), scaling, nope + rope),
        index_rope_interleave=True,
    )


@dataclass(frozen=True)
class SharedTopKConfig:
    """A shared GLM-5 layer: the widths of the model's DSA layers (its indexer's are not used: it has none) and the
    full layer whose top-k it reads. reads_layer is left out of equality, so describe_model measures one cache for
    all shared layers."""

    sparse: DSAConfig
    reads_layer: int = field(compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.reads_layer, int) or isinstance(self.reads_layer, bool) or self.reads_layer < 0:
            raise ValueError(f"reads_layer must be a layer index >= 0, got {self.reads_layer!r}.")

    def read_elements(self, tokens: int) -> int:
        """Numbers the query at position tokens - 1 reads: the latent entries the full layer picked."""
        return min(tokens, self.sparse.index_topk) * (self.sparse.kv_lora_rank + self.sparse.qk_rope_head_dim)


def read_glm_moe_dsa(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, DSAConfig | SharedTopKConfig]:
    """("sparse", DSAConfig) for a full layer, ("shared_sparse", SharedTopKConfig) for a shared one, which reads the
    last full layer before it."""
    types = indexer_types(hf)
    config = glm_dsa_config(hf, layer_idx)
    if types[layer_idx] == "full":
        return "sparse", config
    source = max(i for i in range(layer_idx) if types[i] == "full")
    return "shared_sparse", SharedTopKConfig(config, reads_layer=source)


def shared_cache_bytes_formula(cfg: SharedTopKConfig, tokens: int, batch: int, element_bytes: int) -> int:
    return (cfg.sparse.kv_lora_rank + cfg.sparse.qk_rope_head_dim) * tokens * batch * element_bytes


class SharedTopKAttention(MultiHeadLatentAttention):
    """HF's GlmMoeDsaAttention on a shared layer: MLA (attn_core's, absorbed decoding) whose queries read the keys
    another layer's indexer chose; state_dict as HF's (no indexer.*)."""

    def __init__(
        self, cfg: SharedTopKConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ):
        super().__init__(cfg.sparse.latent, options=cfg.sparse.options, device=device, dtype=dtype)
        self.shared_cfg = cfg

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """As DeepSeekSparseAttention draws its MLA part: a shared layer equals a full one's, less the indexer."""
        _init_from_seed(self, self.cfg, seed, range(self.cfg.n_heads))

    def cache_after(self, tokens: int, batch_size: int = 1) -> LatentKVCache:
        """MLA's cache after tokens tokens (meta device), reading what the full layer's top-k picks."""
        cache = super().cache_after(checked_tokens(tokens), batch_size)
        cache.read_nbytes = batch_size * self.shared_cfg.read_elements(tokens) * cache.latent.element_size()
        return cache

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        *,
        cache: LatentKVCache | None = None,
        topk_from: DSACache | None = None,
        return_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] (zero outside the picks) or None.

        topk_from: the cache of the full layer this one reads, after that layer's call on the same tokens.
        """
        start = cache.seq_len if cache is not None else 0
        queries = self.queries(x, start)
        c_kv, k_rope = self.compress(x, start)
        latent = cache.append(c_kv, k_rope) if cache is not None else torch.cat((c_kv, k_rope), dim=-1)
        batch, q_len, _ = x.shape
        keys_len = latent.shape[2]
        chosen = self._picks(topk_from, batch, q_len, keys_len)
        if chosen is None:  # the full layer read every key
            mask = allowed_positions(q_len, keys_len, causal=True, key_padding_mask=None, device=x.device)
            out, weights = self.attend_latent(queries, latent, mask, absorb=start > 0, return_weights=return_weights)
        elif q_len == 1:
            out, weights = attend_chosen_rows(self, queries, latent, chosen, return_weights)
        else:
            mask = KeyMask(causal_allowed(q_len, keys_len, x.device) & picked_keys(chosen, keys_len)[:, None])
            out, weights = self.attend_latent(queries, latent, mask, absorb=start > 0, return_weights=return_weights)
        if cache is not None:
            cache.read_nbytes = batch * self.shared_cfg.read_elements(keys_len) * latent.element_size()
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), weights

    def _picks(self, topk_from: DSACache | None, batch: int, q_len: int, keys_len: int) -> torch.Tensor | None:
        """The full layer's picks for these queries, [B, L, k], or None when it read every key; a ValueError when
        topk_from is not that layer's cache after these same tokens."""
        if not isinstance(topk_from, DSACache):
            raise ValueError(
                "topk_from must be the cache of the full layer this shared layer reads (a DSACache): a shared layer "
                "has no indexer of its own."
            )
        if topk_from.seq_len != keys_len:
            raise ValueError(
                f"topk_from has seen {topk_from.seq_len} tokens and this layer {keys_len}: call the full layer on the "
                "same tokens first."
            )
        chosen = topk_from.last_topk
        if chosen is None:
            if keys_len > self.shared_cfg.sparse.index_topk:
                raise ValueError(
                    "topk_from holds no picks for this call: call the full layer on the same tokens first."
                )
            return None
        if tuple(chosen.shape[:2]) != (batch, q_len):
            raise ValueError(
                f"topk_from's picks are for {tuple(chosen.shape[:2])} (batch, tokens), this call has "
                f"{(batch, q_len)}: call the full layer on the same tokens first."
            )
        return chosen


if TYPE_CHECKING:  # mypy checks that the shared layer's cache meets the KVCache protocol
    from .contract import KVCache

    def _meet_the_contract(cache: LatentKVCache) -> KVCache:
        return cache
