"""GLM-5's shared top-k layers (attn_core.SharedTopKAttention): MLA with no indexer of its own, reading the keys the
full DSA layer before it picked (DSACache.last_topk). Its cache is MLA's latent alone, d_c + d_h^R numbers a token
(a full layer's also keeps the indexer's keys). The app builds the pair: the full layer (seed s) and the shared one
(its own weights, seed s + 1), called as GLM-5's model calls them; the bytes and weights counted are the shared
layer's. The full layer's widths are the DSA kind's, with GLM's interleaved indexer RoPE."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from torch.utils._python_dispatch import _disable_current_modes

from attn_core import (
    DeepSeekSparseAttention,
    DSACache,
    DSAConfig,
    LatentKVCache,
    SharedTopKAttention,
    SharedTopKConfig,
)
from attn_core.hf import DESIGNS
from explorer.messages import N_
from explorer.probes import with_weights

from .dsa import DSA
from .kind import DecodeReads, Design, Kind, Twin, blank_unread, built, given_weight, token_columns

if TYPE_CHECKING:
    from explorer.settings import Settings


class PairCache:
    """The shared layer's own cache (what is counted) beside the full layer's, whose picks it reads."""

    def __init__(self, own: LatentKVCache, full: DSACache) -> None:
        self.own, self.full = own, full

    @property
    def seq_len(self) -> int:
        return self.own.seq_len

    @property
    def nbytes(self) -> int:
        return self.own.nbytes

    @property
    def read_nbytes(self) -> int:
        return self.own.read_nbytes

    @property
    def capacity_nbytes(self) -> int:
        return self.own.capacity_nbytes

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return self.own.shapes()


class TopKPair(nn.Module):
    """A shared layer and the full layer it reads, called as GLM-5 calls them: the full layer on the tokens first,
    then the shared one with topk_from=its cache. Only the shared layer is a submodule: its weights are the ones a
    page counts, and the full layer's work stays out of a FLOP count (it is that layer's, not this one's)."""

    def __init__(self, full: DeepSeekSparseAttention, shared: SharedTopKAttention) -> None:
        super().__init__()
        self.shared = shared
        self.pair = (full,)  # a tuple: not a submodule

    @property
    def full(self) -> DeepSeekSparseAttention:
        return self.pair[0]

    def new_cache(self, batch_size: int = 1) -> PairCache:
        return PairCache(self.shared.new_cache(batch_size), self.full.new_cache(batch_size))

    def cache_after(self, tokens: int, batch_size: int = 1) -> LatentKVCache:
        return self.shared.cache_after(tokens, batch_size)

    def forward(
        self, x: torch.Tensor, *, cache: PairCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> the shared layer's out [B, L, d_model] and weights [B, H, L, S] (zero outside the
        full layer's picks) or None."""
        cache = cache if cache is not None else self.new_cache(x.shape[0])
        with _disable_current_modes():  # a FlopCounterMode counts the shared layer's step alone
            self.full(x, cache=cache.full)
        return self.shared(x, cache=cache.own, topk_from=cache.full, return_weights=return_weights)


@dataclass(frozen=True)
class TopKMap:
    """The pair over one input: the full layer's weights (its own indexer's top-k) and the shared layer's (the same
    keys, read with its own weights)."""

    full_weights: np.ndarray  # [H, L, L]; NaN outside each query's picks
    shared_weights: np.ndarray  # [H, L, L]; NaN where the shared layer gave no weight
    picked: np.ndarray  # [L, L] bool: the full layer's picks (DSACache.last_topk), causal
    shared_read: np.ndarray  # [L, L] bool: the keys some head of the shared layer gave weight
    top_k: int


@torch.no_grad()
def topk_map(layer: TopKPair, x: torch.Tensor) -> TopKMap:
    cache = layer.new_cache(1)
    _, full_weights = with_weights(layer.full(x, cache=cache.full, return_weights=True))  # [1, H, L, S]
    _, shared_weights = with_weights(
        layer.shared(x, cache=cache.own, topk_from=cache.full, return_weights=True)
    )  # [1, H, L, S]
    length = x.shape[1]
    causal = np.tril(np.ones((length, length), bool))
    return TopKMap(
        full_weights=blank_unread(full_weights[0]),
        shared_weights=blank_unread(shared_weights[0]),
        picked=picks(cache.full.last_topk, length, length) & causal,
        shared_read=(shared_weights[0] != 0).any(dim=0).numpy(),
        top_k=layer.full.dsa_cfg.index_topk,
    )


def picks(chosen: torch.Tensor | None, queries: int, keys: int) -> np.ndarray:
    """A full layer's last_topk [1, L, k] (None: every key read) -> [L, S] bool, True where a query picked a key."""
    picked = np.zeros((queries, keys), bool)
    if chosen is None:
        picked[:] = True
    else:
        np.put_along_axis(picked, chosen[0].numpy(), True, axis=1)
    return picked


@torch.no_grad()
def topk_reads(layer: TopKPair, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """The pair decoded token by token: the shared layer's cache holds every token's latent; each step reads the
    entries the full layer's indexer picked (source_read)."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held, source = (np.zeros((steps, steps), bool) for _ in range(3))
    for t in range(steps):
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        twin.call(x[:, t : t + 1])
        read[t, : t + 1] = given_weight(weights)
        source[t, : t + 1] = picks(cache.full.last_topk, 1, t + 1)[0]
        held[t, : cache.seq_len] = True
    kinds, spans = token_columns(steps)
    reads = DecodeReads(kinds, spans, read, held, tuple(twin.held), tuple(twin.read), twin.dtype_name, twin.batch)
    return replace(reads, source_read=source)


class SharedTopK(Kind):
    def design(self, settings: Settings) -> Design:
        sparse = DSA.design(settings).config
        assert isinstance(sparse, DSAConfig)
        return Design(self, replace(sparse, index_rope_interleave=True))

    def layer_class(self) -> Any:
        return SharedTopKAttention

    def build(
        self, design: Design, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
    ) -> nn.Module:
        config = design.config
        shared_seed = None if seed is None else seed + 1
        full = built(DeepSeekSparseAttention, config, seed, device, dtype)
        shared = built(SharedTopKAttention, self.shared_config(design), shared_seed, device, dtype)
        return TopKPair(full, shared)  # type: ignore[arg-type]

    @staticmethod
    def shared_config(design: Design) -> SharedTopKConfig:
        assert isinstance(design.config, DSAConfig)
        return SharedTopKConfig(design.config, reads_layer=0)

    def attention_map(self, layer: Any, x: torch.Tensor) -> TopKMap:
        return topk_map(layer, x)

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return topk_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.glm_dsa's closed form (every token's latent, no indexer key) and SharedTopKConfig.read_elements
        (the min(T, k) latents the full layer picked)."""
        config = self.shared_config(design)
        held = DESIGNS[SharedTopKConfig].cache_bytes(config, tokens, batch, element)
        return held, config.read_elements(tokens) * batch * element


SHARED_TOPK = SharedTopK(
    key="shared_topk",
    name=N_("Shared top-k"),
    help=N_("A GLM-5 layer with no indexer: it reads the top-k the full DSA layer before it picked."),
    color="#ef476f",
    knobs=("topk",),
    maps=True,
    decodes=True,
)
