"""What every attention layer and cache of the core offers, whichever variant it is: the contract a new variant meets.

GroupedQueryAttention (MHA, MQA, GQA) is an AttentionLayer[GroupedKVCache], MultiHeadLatentAttention an
AttentionLayer[LatentKVCache]. A layer may take options of its own after these (kv_input=, absorb=), keyword-only too.
Every layer of a design after MLA (attn_core.hf's DESIGNS: gated, linear, DSA, V4's compressed layers, and the grouped
and latent layers too) is a CachedLayer: what describe_model measures on the meta device.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, TypeVar, runtime_checkable

import torch

from .config import AttentionConfig


class Queries(NamedTuple):
    """A call's queries per head, [B, H, L, d_k] in two parts along the width.

    rope [B, H, L, d_k - d_nope] is the part rotated for the tokens' positions (when the layer uses RoPE): all of a
    grouped layer's query, MLA's decoupled d_h^R. nope [B, H, L, d_nope] is the part RoPE leaves as it is: MLA's
    content query, width 0 for a grouped layer.
    """

    nope: torch.Tensor
    rope: torch.Tensor

    def joined(self) -> torch.Tensor:
        """[B, H, L, d_k]: the query each head scores keys of the same layout with (nope first, as MLA's keys)."""
        if self.nope.shape[-1] == 0:
            return self.rope  # a grouped layer's query as it is, no copy
        return torch.cat((self.nope, self.rope), dim=-1)


@runtime_checkable
class KVCache(Protocol):
    """A layer's cache: what it holds and what that weighs. Each kind appends what its variant stores."""

    @property
    def seq_len(self) -> int:
        """Tokens processed so far: the next token's position. For a cache that keeps every token (MHA...MLA, DSA)
        also the tokens held; a window, compressed entries or a linear layer's state hold fewer."""
        ...

    @property
    def nbytes(self) -> int:
        """Bytes of exactly what is held (what the next step needs)."""
        ...

    @property
    def read_nbytes(self) -> int:
        """Bytes of cache the most recent call's last query read (0 before any call): all held for a full layer,
        the sinks and window for a sliding one, the top-k chosen entries and the indexer's keys for DSA and CSA."""
        ...

    @property
    def capacity_nbytes(self) -> int:
        """Bytes preallocated, held or not."""
        ...

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Each stored tensor's shape as read back."""
        ...


CacheT = TypeVar("CacheT", bound=KVCache)


@runtime_checkable
class AttentionLayer(Protocol[CacheT]):
    """An attention layer of any variant: x [B, L, d_model] -> out [B, L, d_model], and weights [B, H, L, S] if asked.

    Options after x are keyword-only, so an option one variant adds never takes another's place.
    """

    cfg: AttentionConfig

    def new_cache(self, batch_size: int = 1) -> CacheT:
        """An empty cache for this layer."""
        ...

    def queries(self, x: torch.Tensor, start: int) -> Queries:
        """x [B, L, d_model] at positions start.. -> the queries forward() attends with."""
        ...

    def forward(
        self,
        x: torch.Tensor,
        *,
        cache: CacheT | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Causal by default; with a cache, positions continue from cache.seq_len and the mask aligns to the end.
        key_padding_mask [B, S]: True for real keys."""
        ...

    def __call__(
        self,
        x: torch.Tensor,
        *,
        cache: CacheT | None = None,
        key_padding_mask: torch.Tensor | None = None,
        return_weights: bool = False,
        causal: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """forward(), through torch's hooks (as nn.Module calls it)."""
        ...


@runtime_checkable
class CachedLayer(Protocol[CacheT]):
    """A layer of any design attn_core.hf builds: x [B, L, d_model] -> out [B, L, d_model] (and weights [B, H, L, S]
    where the design has them, None for a linear layer), positions from cache.seq_len, causal."""

    def new_cache(self, batch_size: int = 1) -> CacheT:
        """An empty cache for this layer."""
        ...

    def cache_after(self, tokens: int, batch_size: int = 1) -> CacheT:
        """What the cache holds after a prefill of `tokens` tokens, built on the meta device through the cache's own
        code (no attention computed, no memory)."""
        ...

    def __call__(
        self, x: torch.Tensor, *, cache: CacheT | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """forward(), through torch's hooks."""
        ...
