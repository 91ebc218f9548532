"""KV caches that hold only what a variant needs, grow by doubling, and know their bytes."""

from __future__ import annotations

import torch

from .config import AttentionConfig

INITIAL_CAPACITY = 16


class GrowingSequenceBuffer:
    """A preallocated [B, heads, capacity, width] tensor whose first ``seq_len`` positions are filled.

    Appending past the capacity doubles it (one copy, amortised O(1) per token); reads are views, never copies.
    """

    def __init__(
        self,
        batch_size: int,
        heads: int,
        width: int,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
        capacity: int = INITIAL_CAPACITY,
    ):
        self.storage = torch.empty(batch_size, heads, capacity, width, dtype=dtype, device=device)
        self.seq_len = 0

    @property
    def capacity(self) -> int:
        return self.storage.shape[2]

    def append(self, new: torch.Tensor) -> torch.Tensor:
        """Store new [B, heads, L, width]; return a view of everything held, [B, heads, seq_len, width]."""
        needed = self.seq_len + new.shape[2]
        if needed > self.capacity:
            capacity = self.capacity
            while capacity < needed:
                capacity *= 2
            grown = self.storage.new_empty(*self.storage.shape[:2], capacity, self.storage.shape[3])
            grown[:, :, : self.seq_len] = self.storage[:, :, : self.seq_len]
            self.storage = grown
        self.storage[:, :, self.seq_len : needed] = new
        self.seq_len = needed
        return self.view()

    def view(self) -> torch.Tensor:
        return self.storage[:, :, : self.seq_len]

    @property
    def nbytes(self) -> int:
        batch, heads, _, width = self.storage.shape
        return batch * heads * self.seq_len * width * self.storage.element_size()

    @property
    def capacity_nbytes(self) -> int:
        return self.storage.numel() * self.storage.element_size()


class _Cache:
    buffers: dict[str, GrowingSequenceBuffer]

    @property
    def seq_len(self) -> int:
        return next(iter(self.buffers.values())).seq_len

    @property
    def nbytes(self) -> int:
        """Bytes of what is held: exactly the variant's per-token need times the tokens seen."""
        return sum(buffer.nbytes for buffer in self.buffers.values())

    @property
    def capacity_nbytes(self) -> int:
        """Bytes preallocated, held or not."""
        return sum(buffer.capacity_nbytes for buffer in self.buffers.values())

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of each stored tensor as read back (sequence axis = tokens held)."""
        return {name: tuple(buffer.view().shape) for name, buffer in self.buffers.items()}


class GroupedKVCache(_Cache):
    """Keys and values of the ``n_kv_heads`` KV heads only: never the copies that query heads share."""

    def __init__(
        self, batch_size: int, n_kv_heads: int, head_dim: int, *, dtype: torch.dtype, device: torch.device | str | None
    ):
        make = lambda: GrowingSequenceBuffer(batch_size, n_kv_heads, head_dim, dtype=dtype, device=device)  # noqa: E731
        self.buffers = {"k": make(), "v": make()}

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v: [B, G, L, D] -> all keys and values held, [B, G, S, D], as views."""
        return self.buffers["k"].append(k), self.buffers["v"].append(v)

    @property
    def k(self) -> torch.Tensor:
        return self.buffers["k"].view()

    @property
    def v(self) -> torch.Tensor:
        return self.buffers["v"].view()


class LatentKVCache(_Cache):
    """MLA's cache: the normalised latent c_kv and the one rotated key k_rope that all heads share.

    Both live side by side in one [B, 1, S, d_c + d_h^R] buffer, so the absorbed decode step can read
    ``[c_kv | k_rope]`` as a single key and ``c_kv`` as the value without copying anything.
    """

    def __init__(
        self,
        batch_size: int,
        kv_lora_rank: int,
        rope_dim: int,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        self.kv_lora_rank = kv_lora_rank
        self.buffers = {
            "latent": GrowingSequenceBuffer(batch_size, 1, kv_lora_rank + rope_dim, dtype=dtype, device=device)
        }

    def append(self, c_kv: torch.Tensor, k_rope: torch.Tensor) -> torch.Tensor:
        """c_kv [B, 1, L, d_c], k_rope [B, 1, L, d_h^R] -> the whole latent held, [B, 1, S, d_c + d_h^R] (a view)."""
        return self.buffers["latent"].append(torch.cat((c_kv, k_rope), dim=-1))

    @property
    def latent(self) -> torch.Tensor:
        return self.buffers["latent"].view()

    @property
    def c_kv(self) -> torch.Tensor:
        return self.latent[..., : self.kv_lora_rank]

    @property
    def k_rope(self) -> torch.Tensor:
        return self.latent[..., self.kv_lora_rank :]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {"c_kv": tuple(self.c_kv.shape), "k_rope": tuple(self.k_rope.shape)}


class RepeatedHeadsCache(GroupedKVCache):
    """The pitfall of naive GQA code: K/V are repeated for every query head (repeat_interleave) *before* caching.

    Attention reads the same numbers either way, so outputs do not change; the cache holds n_heads heads instead of
    n_kv_heads, as large as MHA's (accounting.repeated_kv_cache_bytes).
    """

    def __init__(
        self,
        batch_size: int,
        n_heads: int,
        head_dim: int,
        group_size: int,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        super().__init__(batch_size, n_heads, head_dim, dtype=dtype, device=device)
        self.group_size = group_size

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v: [B, G, L, D] -> stored and returned as [B, H, S, D]."""
        return super().append(k.repeat_interleave(self.group_size, dim=1), v.repeat_interleave(self.group_size, dim=1))


def empty_cache(
    cfg: AttentionConfig,
    batch_size: int,
    *,
    dtype: torch.dtype,
    device: torch.device | str | None,
    repeated_heads: bool = False,
) -> GroupedKVCache | LatentKVCache:
    """An empty cache of the kind cfg's layer uses (or the repeated-heads pitfall), in any dtype and on any device."""
    if cfg.variant == "mla":
        if repeated_heads:
            raise ValueError("MLA has no repeated heads to cache; the pitfall applies to grouped variants.")
        widths = cfg.latent_widths
        return LatentKVCache(batch_size, widths.kv_lora_rank, widths.qk_rope_head_dim, dtype=dtype, device=device)
    if repeated_heads:
        return RepeatedHeadsCache(batch_size, cfg.n_heads, cfg.head_dim, cfg.group_size, dtype=dtype, device=device)
    return GroupedKVCache(batch_size, cfg.n_kv_heads, cfg.head_dim, dtype=dtype, device=device)
