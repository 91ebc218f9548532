"""The designs after MLA on the heatmaps page: what one forward pass of each design's real layer attends to.

- a grouped layer with a window, kept first tokens or learned sinks (attn_core.AttentionOptions): its band, the kept
  first tokens' columns, and the weight a learned sink logit takes (1 - a row's weights over the keys);
- DeepSeek-V3.2's sparse attention: the lightning indexer's scores and the top-k each query keeps;
- a DeepSeek-V4 layer: its window over the tokens, then its compressed entries, each pooling a run of tokens.

Numbers only (numpy arrays in dataclasses): NaN marks a cell the layer gave no weight (a key it did not read).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attn_core import CompressedAttention, DeepSeekSparseAttention, GroupedQueryAttention
from explorer.probes import with_weights

# Weights a design's layer may have for a page to draw them from the seed within a rerun (~1 s for 16M here); a layer
# whose weights grow with heads x latent (DSA, V4 at the widest settings: billions) is not built past it
DESIGN_WEIGHT_BUDGET = 2**25


def weight_count(layer: torch.nn.Module) -> int:
    """The layer's weights (build it on the meta device: nothing is drawn)."""
    return sum(p.numel() for p in layer.parameters())


def _blank_unread(weights: torch.Tensor) -> np.ndarray:
    """weights [..] -> float32 numpy, NaN where a weight is exactly 0: a masked or unchosen key's softmax weight is
    0 exactly (its logit was -inf), a read key's never is in float32 at these sizes."""
    array = weights.detach().float().numpy()
    return np.where(array == 0.0, np.nan, array).astype(np.float32)


@dataclass(frozen=True)
class BandMap:
    """A grouped layer's weights over one input: each head's band (a window), the kept first tokens' columns."""

    weights: np.ndarray  # [H, L, L]; NaN where a query did not read a key (later, out of its window, not a sink)
    sink: np.ndarray | None  # [H, L]: the weight each row gave the learned sink logit (gpt-oss); None without
    window: int | None
    sink_tokens: int


@torch.no_grad()
def band_map(layer: GroupedQueryAttention, x: torch.Tensor) -> BandMap:
    """x [1, L, d_model] through the layer's own forward pass, weights asked for."""
    _, weights = with_weights(layer(x, return_weights=True))  # [1, H, L, L]
    weights = weights[0].float()
    sums = weights.sum(dim=-1)  # [H, L]
    sink = None
    if layer.sinks is not None:
        sink = (1.0 - sums).numpy().astype(np.float32)  # the softmax's one slot with no value
    return BandMap(
        weights=_blank_unread(weights),
        sink=sink,
        window=layer.options.window,
        sink_tokens=layer.options.sink_tokens,
    )


@dataclass(frozen=True)
class SparseMap:
    """DSA over one input: the indexer's scores of every earlier key, and the weights of the keys each query chose."""

    index_scores: np.ndarray  # [L, L]; NaN on later keys (the indexer's -inf)
    weights: np.ndarray  # [H, L, L]; NaN outside each query's top-k (and on later keys)
    chosen: np.ndarray  # [L, L] bool: the keys each query read
    top_k: int


@torch.no_grad()
def sparse_map(layer: DeepSeekSparseAttention, x: torch.Tensor) -> SparseMap:
    scores = layer.index_scores(x)[0]  # [L, S]
    _, weights = with_weights(layer(x, return_weights=True))  # [1, H, L, S], 0 outside each query's top-k
    shown = scores.float().numpy()
    return SparseMap(
        index_scores=np.where(np.isfinite(shown), shown, np.nan).astype(np.float32),
        weights=_blank_unread(weights[0]),
        chosen=(weights[0] != 0).any(dim=0).numpy(),
        top_k=layer.dsa_cfg.index_topk,
    )


@dataclass(frozen=True)
class CompressedMap:
    """A V4 layer over one input: the weights on the window's keys (columns 0 .. L-1, the tokens) then on the
    compressed entries (columns L .., entry e pooling tokens spans[e][0] .. spans[e][1])."""

    weights: np.ndarray  # [H, L, L + E]; NaN where a query did not read a key or an entry
    sink: np.ndarray  # [H, L]: the weight each row gave the layer's sink logit
    spans: tuple[tuple[int, int], ...]  # first and last token each entry pools
    kind: str
    window: int
    rate: int
    top_k: int


def entry_spans(kind: str, rate: int, entries: int) -> tuple[tuple[int, int], ...]:
    """The tokens each compressed entry pools: HCA's entry e the m tokens e·m .. e·m + m - 1; CSA's entry e those and
    the previous window's m (overlapping windows, stride m), from token 0 for the first."""
    back = rate if kind == "csa" else 0
    return tuple((max(0, e * rate - back), (e + 1) * rate - 1) for e in range(entries))


@torch.no_grad()
def compressed_map(layer: CompressedAttention, x: torch.Tensor) -> CompressedMap:
    cfg = layer.cfg
    length = x.shape[1]
    _, weights = with_weights(layer(x, return_weights=True))  # [1, H, L, L + E]
    weights = weights[0].float()
    entries = weights.shape[-1] - length
    return CompressedMap(
        weights=_blank_unread(weights),
        sink=(1.0 - weights.sum(dim=-1)).numpy().astype(np.float32),
        spans=entry_spans(cfg.kind, cfg.compress_rate, entries),
        kind=cfg.kind,
        window=cfg.sliding_window,
        rate=cfg.compress_rate,
        top_k=cfg.index_topk,
    )


DesignMap = BandMap | SparseMap | CompressedMap


def design_map(layer: torch.nn.Module, x: torch.Tensor) -> DesignMap:
    """The map of whichever design layer is: a grouped layer with options, DSA or a V4 layer."""
    if isinstance(layer, GroupedQueryAttention):
        return band_map(layer, x)
    if isinstance(layer, DeepSeekSparseAttention):
        return sparse_map(layer, x)
    if isinstance(layer, CompressedAttention):
        return compressed_map(layer, x)
    raise ValueError(f"layer: {type(layer).__name__} has no attention weights to map (a linear layer has no keys).")
