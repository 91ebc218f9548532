"""KV caches that hold only what a variant needs, grow by doubling, and know their bytes."""

from __future__ import annotations

import torch

from .config import AttentionConfig

INITIAL_CAPACITY = 16
MAX_TOKENS = 1 << 40  # cache_after refuses more: a typo, not a context length


def checked_tokens(tokens: object) -> int:
    """cache_after's token count, checked: a whole number from 0 to MAX_TOKENS."""
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 <= tokens <= MAX_TOKENS:
        raise ValueError(f"tokens must be a whole number from 0 to {MAX_TOKENS}, got {tokens!r}.")
    return tokens


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
    """What the caches built on GrowingSequenceBuffers share. Their last query reads all that is held, unless the
    layer says otherwise by setting read_nbytes (DSA's top-k reading)."""

    buffers: dict[str, GrowingSequenceBuffer]
    _read_nbytes: int | None = None

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

    @property
    def read_nbytes(self) -> int:
        """Bytes of cache the last call's last query read: all that is held unless set (0 before any call)."""
        return self.nbytes if self._read_nbytes is None else self._read_nbytes

    @read_nbytes.setter
    def read_nbytes(self, value: int) -> None:
        self._read_nbytes = value

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


class WindowedKVCache:
    """A sliding-window layer's keys and values: the first ``sink_tokens`` tokens and the ``window - 1`` latest, never
    more (what the next query needs besides itself, as HF's DynamicSlidingWindowLayer keeps).

    Storage [B, G, sink_tokens + window, D]: the sinks, then a ring of window slots. A decoding step writes its token
    over the slot of the one token that just left the window and reads the whole filled storage as it is (a view, no
    copy, no mask: every slot is in the new query's window, in ring order, which attention does not depend on), so a
    step costs the same at any length. A chunk of several tokens (a prompt, or when weights are asked for) is attended
    in position order, (held + new), with returned_spans for the mask, and the ring is then laid out again.

    seq_len is the tokens seen (the next token's position), not the tokens held.
    """

    def __init__(
        self,
        batch_size: int,
        n_kv_heads: int,
        head_dim: int,
        *,
        window: int,
        sink_tokens: int = 0,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        self.window, self.sink_tokens = window, sink_tokens
        shape = (batch_size, n_kv_heads, sink_tokens + window, head_dim)
        # torch.empty, not empty_like: on the meta device empty_like goes through Python refs, seconds to set up
        self.storage_k = torch.empty(shape, dtype=dtype, device=device)
        self.storage_v = torch.empty(shape, dtype=dtype, device=device)
        self.seq_len = 0
        self._ring_filled = 0  # ring slots holding tokens (window - 1 of them, or all window right after a step)
        self._ring_next = 0  # the ring slot the next token goes to: the oldest one once the ring is full
        self._read_tokens = 0
        # the last chunk's keys, in order: held sinks [0, a), then positions [b, seq_len); None after one token
        self._returned: tuple[int, int] | None = None

    # --- sizes ----------------------------------------------------------------------------------------------------
    @property
    def _token_nbytes(self) -> int:
        batch, heads, _, width = self.storage_k.shape
        return 2 * batch * heads * width * self.storage_k.element_size()

    @property
    def held_tokens(self) -> int:
        sinks = min(self.seq_len, self.sink_tokens)
        return sinks + min(self.seq_len - sinks, self.window - 1)

    @property
    def nbytes(self) -> int:
        """Bytes of what is held: 2 · B · G · D · (min(T, n_s) + min(T - min(T, n_s), W - 1)) · element size."""
        return self.held_tokens * self._token_nbytes

    @property
    def capacity_nbytes(self) -> int:
        return (self.storage_k.numel() + self.storage_v.numel()) * self.storage_k.element_size()

    @property
    def read_nbytes(self) -> int:
        """Bytes of keys and values the last call's last query read: its sinks and its window (0 before any call)."""
        return self._read_tokens * self._token_nbytes

    def shapes(self) -> dict[str, tuple[int, ...]]:
        shape = (*self.storage_k.shape[:2], self.held_tokens, self.storage_k.shape[3])
        return {"k": shape, "v": shape}

    # --- reading back, in position order ----------------------------------------------------------------------------
    def _ordered(self, storage: torch.Tensor) -> torch.Tensor:
        """What is held, [B, G, held, D], oldest first (a copy once the ring has wrapped)."""
        sinks = storage[:, :, : min(self.seq_len, self.sink_tokens)]
        ring = storage[:, :, self.sink_tokens :]
        keep = self.held_tokens - sinks.shape[2]
        if self._ring_filled < self.window:  # not wrapped: slots 0 .. filled - 1 in order
            window_part = ring[:, :, self._ring_filled - keep : self._ring_filled]
        else:  # wrapped: the oldest slot is _ring_next (out of the window now), then around
            order = [(self._ring_next + 1 + i) % self.window for i in range(keep)]
            window_part = ring[:, :, order]
        return torch.cat((sinks, window_part), dim=2) if sinks.shape[2] else window_part

    @property
    def k(self) -> torch.Tensor:
        return self._ordered(self.storage_k)

    @property
    def v(self) -> torch.Tensor:
        return self._ordered(self.storage_v)

    @property
    def returned_spans(self) -> tuple[int, int] | None:
        """The keys the last append returned: sinks 0 .. a - 1 then b .. seq_len - 1, as (a, b); None when it
        returned a ring view (one token: nothing to mask)."""
        return self._returned

    # --- appending --------------------------------------------------------------------------------------------------
    def append(self, k: torch.Tensor, v: torch.Tensor, *, ordered: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v [B, G, L, D] at positions seq_len.. -> the keys and values these queries may need, [B, G, S, D].

        One token (unless ordered): a view of the storage, every key in the new query's window, in ring order, and
        returned_spans None (nothing to mask). Otherwise (held + new) in position order, returned_spans saying which
        positions they are, for the caller's mask.
        """
        new = k.shape[2]
        if new == 1 and not ordered:
            return self._append_one(k, v)
        sinks = min(self.seq_len, self.sink_tokens)
        self._returned = (sinks, self.seq_len - (self.held_tokens - sinks))
        if self.held_tokens:
            keys, values = torch.cat((self.k, k), dim=2), torch.cat((self.v, v), dim=2)
        else:  # a prompt into an empty cache: nothing to join (and no cat on the meta device, slow to set up)
            keys, values = k, v
        self.seq_len += new
        self._lay_out(keys, values)
        self._read_tokens = self._read_for_last_query()
        return keys, values

    def _append_one(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.seq_len < self.sink_tokens:
            slot = self.seq_len
        else:
            slot = self.sink_tokens + self._ring_next
            self._ring_next = (self._ring_next + 1) % self.window
            self._ring_filled = min(self._ring_filled + 1, self.window)
        self.storage_k[:, :, slot : slot + 1] = k
        self.storage_v[:, :, slot : slot + 1] = v
        self.seq_len += 1
        filled = min(self.seq_len, self.sink_tokens) + self._ring_filled
        self._read_tokens = filled
        self._returned = None
        return self.storage_k[:, :, :filled], self.storage_v[:, :, :filled]

    def _lay_out(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Store the sinks and the window - 1 latest of keys/values (all seen, in order, sinks first): the ring from
        slot 0."""
        sinks = min(self.seq_len, self.sink_tokens)
        self.storage_k[:, :, :sinks] = keys[:, :, :sinks]
        self.storage_v[:, :, :sinks] = values[:, :, :sinks]
        keep = self.held_tokens - sinks
        ring = slice(self.sink_tokens, self.sink_tokens + keep)
        self.storage_k[:, :, ring] = keys[:, :, keys.shape[2] - keep :]
        self.storage_v[:, :, ring] = values[:, :, values.shape[2] - keep :]
        self._ring_filled, self._ring_next = keep, keep % self.window

    def _read_for_last_query(self) -> int:
        sinks = min(self.seq_len, self.sink_tokens)
        return sinks + min(self.seq_len - sinks, self.window)
