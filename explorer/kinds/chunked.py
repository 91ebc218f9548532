"""Llama 4's chunked local attention (attn_core.AttentionOptions(chunk=C) on attn_core.GroupedQueryAttention, its cache
attn_core.ChunkedKVCache): positions cut into chunks of C tokens, a query reads its own chunk up to itself, and the cache
holds the latest token's chunk only, so what it holds grows to C tokens and drops back to 1 as a new chunk starts.
The sidebar's "chunked" design."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attn_core import AttentionConfig, AttentionOptions, ChunkedKVCache, GroupedQueryAttention
from explorer.messages import N_
from explorer.probes import with_weights

from .grouped import Grouped
from .kind import DecodeReads, Design, Twin, blank_unread, given_weight, token_columns

if TYPE_CHECKING:
    from explorer.settings import Settings


@dataclass(frozen=True)
class ChunkMap:
    """A chunked layer's weights over one input: blocks of C along the diagonal, nothing across a chunk's edge."""

    weights: np.ndarray  # [H, L, L]; NaN where a query did not read a key (later, or in an earlier chunk)
    chunk: int


@torch.no_grad()
def chunk_map(layer: GroupedQueryAttention, x: torch.Tensor) -> ChunkMap:
    """x [1, L, d_model] through the layer's own forward pass, weights asked for."""
    _, weights = with_weights(layer(x, return_weights=True))  # [1, H, L, L]
    chunk = layer.options.chunk
    assert chunk is not None  # as Chunked.design makes it
    return ChunkMap(weights=blank_unread(weights[0]), chunk=chunk)


@torch.no_grad()
def chunked_reads(layer: GroupedQueryAttention, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """x [1, N, d_model] decoded token by token through the layer's chunked cache: each step's keys are the ones its
    cache returned (its chunk up to itself, from key_start), and the cache holds its held_tokens latest."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    assert isinstance(cache, ChunkedKVCache)  # a chunk in the options makes one
    read, held = np.zeros((steps, steps), bool), np.zeros((steps, steps), bool)
    for t in range(steps):
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        twin.call(x[:, t : t + 1])
        read[t, cache.key_start : t + 1] = given_weight(weights)
        held[t, t + 1 - cache.held_tokens : t + 1] = True
    kinds, spans = token_columns(steps)
    return DecodeReads(kinds, spans, read, held, tuple(twin.held), tuple(twin.read), twin.dtype_name, twin.batch)


class Chunked(Grouped):
    """A grouped layer whose options bound a query's view by a chunk instead of a window: built, narrowed and counted
    as Grouped does (attn_core.options' held_tokens and read_tokens know the chunk)."""

    def design(self, settings: Settings) -> Design:
        s = settings
        return Design(
            self,
            AttentionConfig("gqa", d_model=s.d_model, n_heads=s.heads, n_kv_heads=s.groups),
            options=AttentionOptions(chunk=s.chunk),
        )

    def attention_map(self, layer: Any, x: torch.Tensor) -> Any:  # a ChunkMap
        return chunk_map(layer, x)

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return chunked_reads(layer, x, twin)


CHUNKED = Chunked(
    key="chunked",
    name=N_("Chunked local"),
    help=N_("GQA whose queries see their own chunk of C tokens; the cache holds one chunk (Llama 4)."),
    color="#8f2d56",
    knobs=("chunk",),
    maps=True,
    decodes=True,
)
