"""What Llama 4 adds to a grouped layer (attn_core.options: chunk, qk_norm "l2", temperature): chunked local
attention's cache and mask, the weightless q/k norm, and the query temperature of its NoPE layers.

Chunked local attention cuts positions into chunks of C tokens; the query at position p sees keys
C · floor(p / C) .. p, its own chunk up to itself (HF's create_chunked_causal_mask). After T tokens the cache holds
the chunk of the latest token, (T − 1) mod C + 1 tokens: when a new chunk starts, the old one is dropped whole. The
decoding step of token T reads exactly those, so what a step reads rises from 1 to C and falls back to 1, like a saw.
HF's DynamicCache keeps the C − 1 latest tokens instead (its sliding-window layer), some of them from the chunk
before, which no later query reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import nn

from .attend import sdpa
from .cache import GrowingSequenceBuffer


def chunk_tokens(chunk: int, tokens: int) -> int:
    """Tokens a chunked layer's cache holds after `tokens` tokens, which the query of token `tokens` reads (itself
    included): the latest token's chunk up to it, (T − 1) mod C + 1 (0 before any token)."""
    return (tokens - 1) % chunk + 1 if tokens else 0


@dataclass(frozen=True)
class QueryTemperature:
    """Llama 4's attention temperature tuning (HF's attn_temperature_tuning, floor_scale, attn_scale), on its NoPE
    layers: the query at position p is scaled by 1 + attn_scale · log(1 + floor((p + 1) / floor_scale)), which is 1
    for the first floor_scale − 1 positions and grows slowly past them (arXiv:2501.19399), so scores over a long
    context do not flatten."""

    floor_scale: int
    attn_scale: float

    def __post_init__(self) -> None:
        if not isinstance(self.floor_scale, int) or isinstance(self.floor_scale, bool) or self.floor_scale <= 0:
            raise ValueError(f"floor_scale must be a positive whole number of tokens, got {self.floor_scale!r}.")
        if not isinstance(self.attn_scale, int | float) or isinstance(self.attn_scale, bool) or not self.attn_scale > 0:
            raise ValueError(f"attn_scale must be a positive number, got {self.attn_scale!r}.")

    def factor(self, position: int) -> float:
        """The scale of the query at `position` (what the tests and the docs compare against)."""
        return 1.0 + self.attn_scale * math.log1p((position + 1) // self.floor_scale)

    def scaled(self, q: torch.Tensor, start: int) -> torch.Tensor:
        """q [B, H, L, D] at positions start.. scaled per position, computed in float32 as HF does."""
        positions = torch.arange(start, start + q.shape[2], device=q.device, dtype=torch.float32)
        factors = torch.log1p(torch.floor((positions + 1.0) / self.floor_scale)) * self.attn_scale + 1.0
        return (q * factors[:, None]).to(q.dtype)  # [L, 1] broadcast over heads and width


class WeightlessRMSNorm(nn.Module):
    """Llama 4's Llama4TextL2Norm: x / sqrt(mean(x²) + eps) over the last axis, in float32, with no weight (so no
    parameter in the state dict)."""

    def __init__(self, eps: float) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def chunk_allowed(
    query_start: int, q_len: int, key_start: int, chunk: int, device: torch.device | str | None
) -> torch.Tensor:
    """[1, 1, L, S]: L queries at positions query_start.. over keys at key_start .. query_start + L − 1; a key is
    visible when it is not later than the query and in the same chunk. Memoised for the sizes a prompt asks for in
    every layer (callers must not modify the result)."""
    return _memoised_chunk(query_start, q_len, key_start, chunk, device)


@lru_cache(maxsize=4)
def _memoised_chunk(
    query_start: int, q_len: int, key_start: int, chunk: int, device: torch.device | str | None
) -> torch.Tensor:
    with torch.inference_mode(False):  # a normal tensor, usable where autograd records
        queries = torch.arange(query_start, query_start + q_len, device=device)[:, None]
        keys = torch.arange(key_start, query_start + q_len, device=device)[None, :]
        return ((keys <= queries) & (keys // chunk == queries // chunk))[None, None]


def attend_in_chunks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float, chunk: int) -> torch.Tensor:
    """q [B, H, L, D], k, v [B, G, L, D] at the same positions, the first at a chunk's start -> out [B, H, L, D]: each
    whole chunk attended on its own, causal, the chunks side by side in the batch, then the unfinished one. No query
    sees past its chunk, so this is the masked L × L attention's result at L · C work (a long prompt: L / C times
    less)."""
    batch, whole = q.shape[0], q.shape[2] - q.shape[2] % chunk
    gqa = k.shape[1] != q.shape[1]
    outs = []
    if whole:

        def blocks(t: torch.Tensor) -> torch.Tensor:  # [B, heads, n·C, D] -> [B·n, heads, C, D]
            return t[:, :, :whole].unflatten(2, (-1, chunk)).transpose(1, 2).flatten(0, 1)

        out = sdpa(blocks(q), blocks(k), blocks(v), is_causal=True, scale=scale, enable_gqa=gqa)
        outs.append(out.unflatten(0, (batch, -1)).transpose(1, 2).flatten(2, 3))  # [B, H, n·C, D]
    if whole < q.shape[2]:
        rest_q, rest_k, rest_v = q[:, :, whole:], k[:, :, whole:], v[:, :, whole:]
        outs.append(sdpa(rest_q, rest_k, rest_v, is_causal=True, scale=scale, enable_gqa=gqa))
    return torch.cat(outs, dim=2) if len(outs) > 1 else outs[0]


class ChunkedKVCache:
    """A chunked layer's keys and values [B, G, held, D]: the latest token's chunk only, (T − 1) mod C + 1 tokens
    after T (see the module's docstring).

    append() returns the keys the call's queries may need, in position order: those of the first new query's chunk
    already held (none when the call starts a chunk), then the new ones; key_start is the position of the first.
    A decoding step's keys are then exactly its chunk up to itself (a view, no copy, nothing to mask).

    seq_len is the tokens seen (the next token's position), not the tokens held.
    """

    def __init__(
        self,
        batch_size: int,
        n_kv_heads: int,
        head_dim: int,
        *,
        chunk: int,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        self.chunk = chunk
        capacity = min(chunk, 16)  # grows by doubling, as a full layer's, while the chunk fills
        self.buffers = {
            name: GrowingSequenceBuffer(batch_size, n_kv_heads, head_dim, dtype=dtype, device=device, capacity=capacity)
            for name in ("k", "v")
        }
        self.seq_len = 0
        self.key_start = 0

    @property
    def held_tokens(self) -> int:
        return self.buffers["k"].seq_len

    @property
    def nbytes(self) -> int:
        """Bytes of what is held: 2 · B · G · D · ((T − 1) mod C + 1) · element size."""
        return sum(buffer.nbytes for buffer in self.buffers.values())

    @property
    def capacity_nbytes(self) -> int:
        return sum(buffer.capacity_nbytes for buffer in self.buffers.values())

    @property
    def read_nbytes(self) -> int:
        """Bytes the last call's last query read: its chunk up to itself, which is what is held (0 before any call)."""
        return self.nbytes

    @property
    def k(self) -> torch.Tensor:
        return self.buffers["k"].view()

    @property
    def v(self) -> torch.Tensor:
        return self.buffers["v"].view()

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(buffer.view().shape) for name, buffer in self.buffers.items()}

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v [B, G, L, D] at positions seq_len.. -> keys and values at positions key_start .. seq_len + L − 1."""
        start, end = self.seq_len, self.seq_len + k.shape[2]
        held = start % self.chunk  # tokens of the first new query's chunk already seen (0: the call starts a chunk)
        last_chunk_start = (end - 1) - (end - 1) % self.chunk
        self.key_start, self.seq_len = start - held, end
        if not held:
            self._drop()
        if last_chunk_start <= start:  # the new tokens end the chunk they start in: keep them all
            return self.buffers["k"].append(k), self.buffers["v"].append(v)
        # several chunks: attend over the held part and all new tokens, keep the last chunk's; no cat on the meta
        # device when nothing is held (a slow first use there)
        keys = torch.cat((self.k, k), dim=2) if held else k
        values = torch.cat((self.v, v), dim=2) if held else v
        self._drop()
        kept = slice(last_chunk_start - start, None)
        self.buffers["k"].append(k[:, :, kept])
        self.buffers["v"].append(v[:, :, kept])
        return keys, values

    def _drop(self) -> None:
        """Forget the held chunk (its storage is reused)."""
        for buffer in self.buffers.values():
            buffer.seq_len = 0
