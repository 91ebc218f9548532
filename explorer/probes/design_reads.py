"""The designs after MLA on the mapping page: which cached entries each new token reads as decoding goes on.

Tokens are decoded one at a time from an empty cache through the design's real layer and cache. After each step the
probe records what that token read (from the step's own weights: the keys and entries given weight; a windowed cache's
returned span; a linear layer's state) and what the cache holds (from the cache's own counts), and the bytes it holds
and read. Columns are the cache's possible entries: token positions 0 .. N - 1, then a V4 layer's compressed entries
(each pooling a run of tokens), or a linear layer's one state. Numbers only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attn_core import (
    CompressedAttention,
    DeepSeekSparseAttention,
    GatedDeltaNet,
    GroupedQueryAttention,
    WindowedKVCache,
)
from explorer.probes import with_weights
from explorer.probes.design_heatmaps import entry_spans

# A column's kind: a token's own keys and values, a compressed entry pooling tokens, a linear layer's state
TOKEN, ENTRY, STATE = "token", "entry", "state"


@dataclass(frozen=True)
class DecodeReads:
    """N decoding steps of one design's layer.

    read[t, c]: step t's token (at position t) read column c; held[t, c]: the cache holds column c after step t.
    spans[c]: the first and last token column c stands for (a token: itself; an entry: the tokens it pools; the state:
    every token so far, 0 .. N - 1).
    """

    kinds: tuple[str, ...]  # per column: TOKEN, ENTRY or STATE
    spans: tuple[tuple[int, int], ...]
    read: np.ndarray  # [N, C] bool
    held: np.ndarray  # [N, C] bool
    held_bytes: tuple[int, ...]  # cache.nbytes after each step
    read_bytes: tuple[int, ...]  # cache.read_nbytes of each step

    @property
    def steps(self) -> int:
        return self.read.shape[0]


def _token_columns(steps: int) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    return (TOKEN,) * steps, tuple((t, t) for t in range(steps))


def _given_weight(weights: torch.Tensor) -> np.ndarray:
    """weights [1, H, 1, S] -> [S] bool: the keys some head gave weight (a key not read has weight 0 exactly)."""
    return (weights[0, :, 0] != 0).any(dim=0).numpy()


@torch.no_grad()
def grouped_reads(layer: GroupedQueryAttention, x: torch.Tensor) -> DecodeReads:
    """x [1, N, d_model] decoded token by token through the layer's windowed cache: each step reads the keys its
    cache returned (its kept first tokens, then its window), in position order when weights are asked for."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held = np.zeros((steps, steps), bool), np.zeros((steps, steps), bool)
    held_bytes, read_bytes = [], []
    for t in range(steps):
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        given = _given_weight(weights)
        if isinstance(cache, WindowedKVCache) and cache.returned_spans is not None:
            sinks, start = cache.returned_spans
            positions = [*range(sinks), *range(start, t + 1)]
            kept = cache.sink_tokens
            now = min(cache.seq_len, kept)
            held[t, [*range(now), *range(t + 1 - (cache.held_tokens - now), t + 1)]] = True
        else:  # a cache without a window returns every token so far, and holds them all
            positions = list(range(t + 1))
            held[t, : t + 1] = True
        read[t, [p for p, given_weight in zip(positions, given, strict=True) if given_weight]] = True
        held_bytes.append(cache.nbytes)
        read_bytes.append(cache.read_nbytes)
    kinds, spans = _token_columns(steps)
    return DecodeReads(kinds, spans, read, held, tuple(held_bytes), tuple(read_bytes))


@torch.no_grad()
def sparse_reads(layer: DeepSeekSparseAttention, x: torch.Tensor) -> DecodeReads:
    """DSA decoded token by token: its cache holds every token; each step reads the latents its indexer chose."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held = np.zeros((steps, steps), bool), np.zeros((steps, steps), bool)
    held_bytes, read_bytes = [], []
    for t in range(steps):
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        read[t, : t + 1] = _given_weight(weights)
        held[t, : cache.c_kv.shape[2]] = True
        held_bytes.append(cache.nbytes)
        read_bytes.append(cache.read_nbytes)
    kinds, spans = _token_columns(steps)
    return DecodeReads(kinds, spans, read, held, tuple(held_bytes), tuple(read_bytes))


@torch.no_grad()
def compressed_reads(layer: CompressedAttention, x: torch.Tensor) -> DecodeReads:
    """A V4 layer decoded token by token: each step reads its window's keys (held, then its own) and the finished
    entries it was given (all of them for HCA, the indexer's top-k for CSA); columns: tokens, then every entry the
    N tokens finish."""
    cfg = layer.cfg
    steps = x.shape[1]
    rate = cfg.compress_rate
    n_entries = steps // rate if rate else 0
    cache = layer.new_cache(1)
    columns = steps + n_entries
    read, held = np.zeros((steps, columns), bool), np.zeros((steps, columns), bool)
    held_bytes, read_bytes = [], []
    for t in range(steps):
        window_before = cache.window.shape[2]
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        given = _given_weight(weights)  # [held before + 1 + E]
        window = window_before + 1
        read[t, t + 1 - window : t + 1] = given[:window]
        entries = given[window:]
        read[t, steps : steps + entries.shape[0]] = entries
        held[t, t + 1 - cache.window.shape[2] : t + 1] = True
        if "compressor" in cache.states:
            held[t, steps : steps + cache.states["compressor"].count] = True
        held_bytes.append(cache.nbytes)
        read_bytes.append(cache.read_nbytes)
    kinds, spans = _token_columns(steps)
    return DecodeReads(
        kinds + (ENTRY,) * n_entries,
        spans + entry_spans(cfg.kind, rate, n_entries),
        read,
        held,
        tuple(held_bytes),
        tuple(read_bytes),
    )


@torch.no_grad()
def linear_reads(layer: GatedDeltaNet, x: torch.Tensor) -> DecodeReads:
    """A linear layer decoded token by token: one column, its state, held and read whole at every step (the cache
    says so: what it holds is what the step read)."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held = np.zeros((steps, 1), bool), np.zeros((steps, 1), bool)
    held_bytes, read_bytes = [], []
    for t in range(steps):
        layer(x[:, t : t + 1], cache=cache)
        held[t, 0] = cache.nbytes > 0
        read[t, 0] = cache.read_nbytes > 0
        held_bytes.append(cache.nbytes)
        read_bytes.append(cache.read_nbytes)
    return DecodeReads((STATE,), ((0, steps - 1),), read, held, tuple(held_bytes), tuple(read_bytes))


def design_reads(layer: torch.nn.Module, x: torch.Tensor) -> DecodeReads:
    """The reads of whichever design layer is."""
    if isinstance(layer, GroupedQueryAttention):
        return grouped_reads(layer, x)
    if isinstance(layer, DeepSeekSparseAttention):
        return sparse_reads(layer, x)
    if isinstance(layer, CompressedAttention):
        return compressed_reads(layer, x)
    if isinstance(layer, GatedDeltaNet):
        return linear_reads(layer, x)
    raise ValueError(f"layer: {type(layer).__name__} is not one of the designs the mapping page decodes.")
