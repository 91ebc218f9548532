"""Masks and batches: the padding mask of a right-padded batch, the causal mask aligned to the end of a KV cache, and
cross-attention over another sequence, each run through the real layer on a few tokens.

Every function returns plain numpy arrays and python floats. All three sections come from one layer, built once:
the layer of the one head shown (build_attention's heads=), so its cost does not grow with the head count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import torch

from attn_core import (
    AttentionConfig,
    AttentionLayer,
    GroupedQueryAttention,
    MultiHeadLatentAttention,
    allowed_positions,
    build_attention,
    causal_allowed,
)
from explorer.probes import with_weights

MAX_TOKENS = 32  # every sequence here is at most this long: the pictures are about masks, not about scale
INPUT_SCALE = 2.0  # input vectors ~ N(0, 2²) per coordinate, so weights are not all flat
# Independent input streams, one per sequence the page shows.
STREAMS = {"long": 0, "short": 1, "context": 2, "queries": 3, "memory": 4}


@dataclass(frozen=True)
class PaddingResult:
    """A batch of a long and a right-padded short sequence, for one head."""

    key_padding_mask: np.ndarray  # [2, S], True = real key
    allowed: np.ndarray  # [2, L, S], the mask the layer builds from it
    short_weights: np.ndarray  # [H, L, S] of the short sequence in the padded batch
    long_weights: np.ndarray  # [H, L, S]
    padded_key_weight_max: float  # largest weight on a padded key: exactly 0
    rows_weights_diff: float  # the short sequence's real rows vs running it alone
    rows_output_diff: float


@dataclass(frozen=True)
class ChunkResult:
    """A chunk of L tokens after P cached ones, against one full pass over all S = P + L."""

    chunk_mask: np.ndarray  # [L, S]
    full_mask: np.ndarray  # [S, S]
    chunk_weights: np.ndarray  # [H, L, S]
    full_weights: np.ndarray  # [H, S, S]
    cached_tokens: int
    rows_weights_diff: float
    rows_output_diff: float


@dataclass(frozen=True)
class CrossResult:
    weights: np.ndarray  # [H, L, S]: L queries of one sequence, S keys of the other
    output: np.ndarray  # [L, d_model]


@dataclass(frozen=True)
class MasksResult:
    padding: PaddingResult
    chunk: ChunkResult
    cross: CrossResult | None  # None for MLA (self-attention only)


def token_vectors(d_model: int, seed: int, stream: str, n: int) -> torch.Tensor:
    """[1, n, d_model] input vectors of one named sequence: the first n of MAX_TOKENS drawn from (seed, stream), so a
    shorter sequence is exactly the start of a longer one."""
    if not 0 <= n <= MAX_TOKENS:
        raise ValueError(f"n={n} tokens: this page works on 0 to {MAX_TOKENS} tokens.")
    generator = torch.Generator().manual_seed(seed * len(STREAMS) + STREAMS[stream])
    return (torch.randn(MAX_TOKENS, d_model, generator=generator) * INPUT_SCALE)[:n][None]


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def padding_probe(layer: AttentionLayer[Any], seed: int, long_len: int, short_len: int, causal: bool) -> PaddingResult:
    """A batch of two sequences (long_len and short_len tokens), the short one right-padded with zeros to long_len.

    Returns key_padding_mask [2, S] (True = real key), the allowed mask the layer builds from it [2, L, S], the padded
    batch's weights for the short sequence [H, L, S], and the check against running the short sequence alone.
    """
    if not 1 <= short_len < long_len <= MAX_TOKENS:
        raise ValueError(f"need 1 ≤ short ({short_len}) < long ({long_len}) ≤ {MAX_TOKENS} tokens.")
    d_model = layer.cfg.d_model
    long_x = token_vectors(d_model, seed, "long", long_len)
    short_x = token_vectors(d_model, seed, "short", short_len)
    padded_short = torch.cat((short_x, torch.zeros(1, long_len - short_len, d_model)), dim=1)
    batch = torch.cat((long_x, padded_short))  # [2, L, d_model]
    key_padding_mask = torch.arange(long_len)[None] < torch.tensor([[long_len], [short_len]])  # [2, S]
    key_mask = allowed_positions(long_len, long_len, causal=causal, key_padding_mask=key_padding_mask, device="cpu")
    assert key_mask.allowed is not None  # a key_padding_mask always gives a mask
    allowed = key_mask.allowed.expand(2, 1, long_len, long_len)[:, 0]  # [2, L, S]
    out, weights = with_weights(layer(batch, key_padding_mask=key_padding_mask, return_weights=True, causal=causal))
    alone_out, alone_weights = with_weights(layer(short_x, return_weights=True, causal=causal))
    short_weights = weights[1]  # [H, L, S]
    return PaddingResult(
        key_padding_mask=key_padding_mask.numpy(),
        allowed=allowed.numpy(),
        short_weights=short_weights.numpy(),
        long_weights=weights[0].numpy(),
        padded_key_weight_max=float(short_weights[:, :, short_len:].abs().max()),
        rows_weights_diff=_max_abs(short_weights[:, :short_len, :short_len], alone_weights[0]),
        rows_output_diff=_max_abs(out[1, :short_len], alone_out[0]),
    )


def chunk_probe(layer: AttentionLayer[Any], seed: int, prefill: int, chunk: int) -> ChunkResult:
    """Prefill `prefill` tokens into a cache, then feed `chunk` new ones: their mask [L, S] (L = chunk, S = P + L) is
    causal aligned to the end. Compared with one full pass over all S tokens (square causal mask [S, S])."""
    if not (prefill >= 1 and chunk >= 1 and prefill + chunk <= MAX_TOKENS):
        raise ValueError(f"need prefill ≥ 1, chunk ≥ 1 and prefill + chunk ≤ {MAX_TOKENS} tokens.")
    total = prefill + chunk
    x = token_vectors(layer.cfg.d_model, seed, "context", total)
    full_out, full_weights = with_weights(layer(x, return_weights=True))
    cache = layer.new_cache(1)
    layer(x[:, :prefill], cache=cache)
    chunk_out, chunk_weights = with_weights(layer(x[:, prefill:], cache=cache, return_weights=True))
    chunk_mask = causal_allowed(chunk, total, "cpu")[0, 0]
    full_mask = causal_allowed(total, total, "cpu")[0, 0]
    return ChunkResult(
        chunk_mask=chunk_mask.numpy(),  # [L, S]
        full_mask=full_mask.numpy(),  # [S, S]
        chunk_weights=chunk_weights[0].numpy(),  # [H, L, S]
        full_weights=full_weights[0].numpy(),  # [H, S, S]
        cached_tokens=cache.seq_len,
        rows_weights_diff=_max_abs(chunk_weights[0], full_weights[0, :, prefill:]),
        rows_output_diff=_max_abs(chunk_out[0], full_out[0, prefill:]),
    )


def cross_probe(
    layer: GroupedQueryAttention | MultiHeadLatentAttention, seed: int, query_len: int, memory_len: int
) -> CrossResult | None:
    """Queries from one sequence, keys and values from another (kv_input=): weights [H, L, S], no causal mask and
    no RoPE. None for MLA, which has self-attention only."""
    if layer.cfg.variant == "mla":
        return None
    if not (1 <= query_len <= MAX_TOKENS and 1 <= memory_len <= MAX_TOKENS):
        raise ValueError(f"both sequences need 1 to {MAX_TOKENS} tokens.")
    d_model = layer.cfg.d_model
    queries = token_vectors(d_model, seed, "queries", query_len)
    memory = token_vectors(d_model, seed, "memory", memory_len)
    out, weights = with_weights(layer(queries, kv_input=memory, return_weights=True))
    return CrossResult(weights=weights[0].numpy(), output=out[0].numpy())


class MaskLengths(TypedDict):
    """explore_masks's lengths by name: a page keeps them together and passes them on as keywords."""

    long_len: int
    short_len: int
    causal: bool
    prefill: int
    chunk: int
    query_len: int
    memory_len: int


@torch.inference_mode()
def explore_masks(
    cfg: AttentionConfig,
    seed: int,
    *,
    head: int,
    long_len: int,
    short_len: int,
    causal: bool,
    prefill: int,
    chunk: int,
    query_len: int,
    memory_len: int,
) -> MasksResult:
    """All three sections for head `head` of the layer built from (cfg, seed), in float32: computed on a layer of
    that head alone and the KV head it reads, so weights are [1, ...] and outputs are that head's through o_proj."""
    layer = build_attention(cfg, seed=seed, heads=range(head, head + 1))
    return MasksResult(
        padding=padding_probe(layer, seed, long_len, short_len, causal),
        chunk=chunk_probe(layer, seed, prefill, chunk),
        cross=cross_probe(layer, seed, query_len, memory_len),
    )
