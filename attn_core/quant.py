"""Quantised KV caches (KIVI, Liu et al. 2024): fewer bits per cached number, a recent window kept exact.

Layout (KIVI's): keys are quantised per channel (a group is `group_size` consecutive tokens of one channel, so one
scale and zero point per channel per group: keys have outlier channels, and a per-channel scale follows them) or per
token (keys="token"); values per token (a group is `group_size` consecutive channels of one token). Each group is
min/max asymmetric: scale = (max - min) / (2^bits - 1), zero = min, code = round((x - zero) / scale) clamped to
0 .. 2^bits - 1, read back as code · scale + zero. Codes are packed into uint8 along the width (8 / bits numbers per
byte: two at 4 bits, four at 2); scales and zero points are stored in the cache's dtype.

The most recent `residual` tokens are always kept exact: tokens are quantised once they are older than that, per
token for a per-token layout, a whole group of `group_size` tokens at a time for keys per channel (a per-channel group
needs all its tokens). After T tokens a part (keys or values) holds Q(T) quantised tokens,

    Q(T) = n · ⌊max(T − residual, 0) / n⌋,   n = group_size for keys per channel, 1 per token,

and T − Q(T) exact ones (at most residual + group_size − 1). As KIVI does, a call reads the tokens quantised before
it (dequantised) and everything newer exact, its own new tokens included, and quantises what fell out of the window
after reading: a prompt attends to itself exactly, and a decoding step sees every token older than the window
quantised.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .cache import GrowingSequenceBuffer

BITS = (2, 4, 8)
KEY_LAYOUTS = ("channel", "token")
# One line per part (keys, values), summed; e = the cache dtype's bytes, b = bits, g = group_size, D = head width:
CACHE_FORMULA = "Σ over K, V: B · G · (Q · D · b/8 + 2 · (Q · D / g) · e + (T − Q) · D · e)"


@dataclass(frozen=True)
class CacheBits:
    """How a cache quantises: `bits` per number (2, 4 or 8), `group_size` numbers per scale and zero point,
    `residual` most recent tokens kept exact, keys per "channel" (KIVI) or per "token". Values are per token."""

    bits: int = 4
    group_size: int = 32
    residual: int = 128
    keys: str = "channel"

    def __post_init__(self) -> None:
        if isinstance(self.bits, bool) or self.bits not in BITS:
            raise ValueError(f"bits={self.bits!r}: choose 2, 4 or 8 bits per cached number.")
        if isinstance(self.group_size, bool) or not isinstance(self.group_size, int) or self.group_size < 1:
            raise ValueError(f"group_size={self.group_size!r}: a positive whole number of values per scale.")
        if isinstance(self.residual, bool) or not isinstance(self.residual, int) or self.residual < 0:
            raise ValueError(f"residual={self.residual!r}: the number of recent tokens kept exact, 0 or more.")
        if self.keys not in KEY_LAYOUTS:
            raise ValueError(f"keys={self.keys!r}: quantise keys per 'channel' (KIVI) or per 'token'.")

    def layout(self, part: str) -> str:
        """'channel' or 'token' for part 'k' or 'v'."""
        return self.keys if part == "k" else "token"

    def check_width(self, width: int, layouts: tuple[str, ...]) -> None:
        """ValueError unless numbers of this width pack into whole bytes and per-token groups tile it."""
        if width * self.bits % 8:
            raise ValueError(
                f"a head width of {width} does not pack into whole bytes at bits={self.bits}: "
                f"choose bits so that {width} x bits is a multiple of 8."
            )
        if "token" in layouts and width % self.group_size:
            raise ValueError(
                f"group_size={self.group_size} does not divide the head width {width}: per-token groups tile a "
                f"token's {width} numbers, so choose a divisor of {width}."
            )

    def quantized_tokens(self, tokens: int, layout: str) -> int:
        """Q(T): how many of `tokens` tokens a part of this layout holds quantised."""
        block = self.group_size if layout == "channel" else 1
        return block * (max(tokens - self.residual, 0) // block)


# --- numbers ----------------------------------------------------------------------------------------------------
def pack(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """codes [..., n] (uint8, each < 2^bits) -> [..., n · bits / 8] uint8: number i of a byte in bits i·b .. i·b+b-1."""
    per_byte = 8 // bits
    if per_byte == 1:
        return codes
    grouped = codes.view(*codes.shape[:-1], -1, per_byte)
    packed = grouped[..., 0].clone()
    for i in range(1, per_byte):
        packed |= grouped[..., i] << (bits * i)
    return packed


def unpack(packed: torch.Tensor, bits: int) -> torch.Tensor:
    """pack's inverse: [..., m] uint8 -> codes [..., m · 8 / bits] uint8."""
    per_byte = 8 // bits
    if per_byte == 1:
        return packed
    mask = (1 << bits) - 1
    parts = [(packed >> (bits * i)) & mask for i in range(per_byte)]
    return torch.stack(parts, dim=-1).flatten(-2)


def quantize(
    x: torch.Tensor, bits: int, group_size: int, layout: str, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x [B, h, T, D] -> codes [B, h, T, D] uint8, scale and zero [B, h, T, D/g] ("token") or [B, h, T/g, D]
    ("channel", T a multiple of g), in dtype. Computed in float32 from the stored (dtype) scale and zero, so reading
    back is code · scale + zero with the numbers held."""
    batch, heads, tokens, width = x.shape
    if layout == "token":
        groups = x.float().view(batch, heads, tokens, width // group_size, group_size)  # group = last axis
        axis = -1
    else:
        groups = x.float().view(batch, heads, tokens // group_size, group_size, width)  # group = tokens axis
        axis = -2
    low, high = groups.amin(axis, keepdim=True), groups.amax(axis, keepdim=True)
    scale = ((high - low) / ((1 << bits) - 1)).to(dtype)
    zero = low.to(dtype)
    # a constant group has scale 0: every code 0 reads back its value exactly
    step = torch.where(scale == 0, torch.ones_like(scale), scale).float()
    codes = ((groups - zero.float()) / step).round_().clamp_(0, (1 << bits) - 1).to(torch.uint8)
    return codes.view(batch, heads, tokens, width), scale.squeeze(axis), zero.squeeze(axis)


def dequantize(
    codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, group_size: int, layout: str, dtype: torch.dtype
) -> torch.Tensor:
    """quantize's reading back: codes [B, h, T, D] -> code · scale + zero [B, h, T, D] in dtype."""
    batch, heads, tokens, width = codes.shape
    if layout == "token":
        groups = codes.view(batch, heads, tokens, width // group_size, group_size)
        scale, zero = scale[..., None], zero[..., None]
    else:
        groups = codes.view(batch, heads, tokens // group_size, group_size, width)
        scale, zero = scale[..., None, :], zero[..., None, :]
    return (groups.float() * scale.float() + zero.float()).to(dtype).view(batch, heads, tokens, width)


def fake_quantize(x: torch.Tensor, bits: CacheBits, layout: str) -> torch.Tensor:
    """x [B, h, T, D] as the cache reads it back once quantised (T a multiple of group_size for "channel")."""
    if x.shape[2] == 0:
        return x
    codes, scale, zero = quantize(x, bits.bits, bits.group_size, layout, x.dtype)
    return dequantize(codes, scale, zero, bits.group_size, layout, x.dtype)


# --- one quantised sequence: keys, values, or MLA's latent ----------------------------------------------------------
class QuantizedSequence:
    """One part of a cache, [B, h, T, D] held as packed codes, scales and zero points of its Q(T) oldest tokens and
    the T − Q(T) newest exact."""

    def __init__(
        self,
        batch_size: int,
        heads: int,
        width: int,
        bits: CacheBits,
        layout: str,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        self.bits, self.layout, self.dtype = bits, layout, dtype
        scale_width = width // bits.group_size if layout == "token" else width  # per token / per group of tokens
        self.packed = GrowingSequenceBuffer(batch_size, heads, width * bits.bits // 8, dtype=torch.uint8, device=device)
        self.scale = GrowingSequenceBuffer(batch_size, heads, scale_width, dtype=dtype, device=device)
        self.zero = GrowingSequenceBuffer(batch_size, heads, scale_width, dtype=dtype, device=device)
        self.exact = torch.empty(batch_size, heads, 0, width, dtype=dtype, device=device)  # the newest tokens
        self.seq_len = 0

    @property
    def quantized(self) -> int:
        """Tokens held quantised, Q(seq_len)."""
        return self.packed.seq_len

    def append(self, new: torch.Tensor) -> torch.Tensor:
        """new [B, h, L, D] -> what a call reads, [B, h, S, D]: the tokens quantised before it read back, then the
        exact ones (the window and the new tokens). Then quantises the tokens that left the window."""
        bits = self.bits
        exact = torch.cat((self.exact, new.to(self.dtype)), dim=2)
        reads = exact if self.quantized == 0 else torch.cat((self.dequantized(), exact), dim=2)
        self.seq_len += new.shape[2]
        leaving = bits.quantized_tokens(self.seq_len, self.layout) - self.quantized
        if leaving:
            codes, scale, zero = quantize(exact[:, :, :leaving], bits.bits, bits.group_size, self.layout, self.dtype)
            self.packed.append(pack(codes, bits.bits))
            self.scale.append(scale)
            self.zero.append(zero)
        self.exact = exact[:, :, leaving:].clone()  # its own storage: the window, not the whole prompt
        return reads

    def dequantized(self) -> torch.Tensor:
        """The quantised tokens read back, [B, h, Q, D]."""
        codes = unpack(self.packed.view(), self.bits.bits)
        return dequantize(codes, self.scale.view(), self.zero.view(), self.bits.group_size, self.layout, self.dtype)

    @property
    def exact_nbytes(self) -> int:
        return self.exact.numel() * self.exact.element_size()

    @property
    def nbytes(self) -> int:
        """Packed codes + scales + zero points + the exact window."""
        return self.packed.nbytes + self.scale.nbytes + self.zero.nbytes + self.exact_nbytes

    @property
    def capacity_nbytes(self) -> int:
        return self.packed.capacity_nbytes + self.scale.capacity_nbytes + self.zero.capacity_nbytes + self.exact_nbytes

    def shapes(self, name: str) -> dict[str, tuple[int, ...]]:
        return {
            f"{name}_packed": tuple(self.packed.view().shape),
            f"{name}_scale": tuple(self.scale.view().shape),
            f"{name}_zero": tuple(self.zero.view().shape),
            f"{name}_exact": tuple(self.exact.shape),
        }


class QuantizedKVCache:
    """A grouped layer's keys and values, [B, G, T, D] each, quantised as `bits` says (see the module's docstring).

    nbytes, exactly, after T tokens (e = the dtype's bytes, Q = Q(T) of each part):
        Σ over K, V: B · G · (Q · D · bits/8 + 2 · (Q · D / group_size) · e + (T − Q) · D · e)
    (packed codes; a scale and a zero point per group; the exact window): cache_bytes_formula.
    """

    def __init__(
        self,
        batch_size: int,
        n_kv_heads: int,
        head_dim: int,
        bits: CacheBits,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        bits.check_width(head_dim, (bits.layout("k"), bits.layout("v")))
        self.bits = bits
        self.parts = {
            part: QuantizedSequence(
                batch_size, n_kv_heads, head_dim, bits, bits.layout(part), dtype=dtype, device=device
            )
            for part in ("k", "v")
        }
        self.read_nbytes = 0

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v [B, G, L, D] -> keys, values [B, G, S, D] as this call reads them (quantised before it: read back;
        the rest exact)."""
        held = self.nbytes
        keys, values = self.parts["k"].append(k), self.parts["v"].append(v)
        # what was held, plus the new tokens, read exact
        self.read_nbytes = held + (k.numel() + v.numel()) * keys.element_size()
        return keys, values

    @property
    def seq_len(self) -> int:
        return self.parts["k"].seq_len

    @property
    def nbytes(self) -> int:
        return sum(part.nbytes for part in self.parts.values())

    @property
    def capacity_nbytes(self) -> int:
        return sum(part.capacity_nbytes for part in self.parts.values())

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return self.parts["k"].shapes("k") | self.parts["v"].shapes("v")


class QuantizedLatentKVCache:
    """MLA's cache [c_kv | k_rope], [B, 1, T, d_c + d_h^R], quantised as one part: the latent is both what queries
    score (a key) and what they read (a value); it is quantised as `bits.keys` says. nbytes: one part of
    QuantizedKVCache's formula at width d_c + d_h^R and one head."""

    def __init__(
        self,
        batch_size: int,
        kv_lora_rank: int,
        rope_dim: int,
        bits: CacheBits,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        width = kv_lora_rank + rope_dim
        bits.check_width(width, (bits.keys,))
        self.bits, self.kv_lora_rank = bits, kv_lora_rank
        self.part = QuantizedSequence(batch_size, 1, width, bits, bits.keys, dtype=dtype, device=device)
        self.read_nbytes = 0

    def append(self, c_kv: torch.Tensor, k_rope: torch.Tensor) -> torch.Tensor:
        """c_kv [B, 1, L, d_c], k_rope [B, 1, L, d_h^R] -> the latent this call reads, [B, 1, S, d_c + d_h^R]."""
        held = self.nbytes
        latent = self.part.append(torch.cat((c_kv, k_rope), dim=-1))
        self.read_nbytes = held + (c_kv.numel() + k_rope.numel()) * latent.element_size()
        return latent

    @property
    def seq_len(self) -> int:
        return self.part.seq_len

    @property
    def nbytes(self) -> int:
        return self.part.nbytes

    @property
    def capacity_nbytes(self) -> int:
        return self.part.capacity_nbytes

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return self.part.shapes("latent")


def part_bytes(
    tokens: int, batch: int, heads: int, width: int, element_bytes: int, bits: CacheBits, layout: str
) -> int:
    """One part's bytes after `tokens` tokens: B · h · (Q · D · bits/8 + 2 · (Q · D / g) · e + (T − Q) · D · e)."""
    q = bits.quantized_tokens(tokens, layout)
    per_head = q * width * bits.bits // 8 + 2 * (q * width // bits.group_size) * element_bytes
    return batch * heads * (per_head + (tokens - q) * width * element_bytes)


def cache_bytes_formula(
    tokens: int, batch: int, n_kv_heads: int, head_dim: int, element_bytes: int, bits: CacheBits
) -> int:
    """QuantizedKVCache's nbytes in closed form (its docstring's formula)."""
    if tokens < 0:
        raise ValueError(f"tokens={tokens}: a cache holds 0 or more tokens.")
    return sum(
        part_bytes(tokens, batch, n_kv_heads, head_dim, element_bytes, bits, bits.layout(part)) for part in ("k", "v")
    )


# --- what each query of a call reads ----------------------------------------------------------------------------
def pattern_reads(
    parts: list[tuple[torch.Tensor, str]], start: int, queries: int, bits: CacheBits
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Several queries at once, each reading what it would read as a decoding step of its own.

    parts: (x [B, h, S, D], layout) as a cache's append returned them to a call at position `start` (tokens before
    Q(start) read back, the rest exact; S = start + queries). Query i (position start + i) reads token j quantised
    when j < Q(start + i) of that part, exact otherwise, and nothing after itself. Returns each part in copies laid
    end to end along the tokens, [B, h, c · S, D] (one copy per combination of quantised and exact parts that some
    query reads), and allowed [1, 1, L, c · S]: True where query i reads that copy of token j.
    """
    total = start + queries
    positions = torch.arange(start, total)
    tokens = torch.arange(total)
    versions, quantised_from = [], []
    for x, layout in parts:
        before, end = bits.quantized_tokens(start, layout), bits.quantized_tokens(total - 1, layout)
        quantised = x
        if end > before:
            quantised = torch.cat(
                (x[:, :, :before], fake_quantize(x[:, :, before:end], bits, layout), x[:, :, end:]), dim=2
            )
        versions.append((quantised, x))
        # [L, S]: query i reads token j quantised
        limits = torch.tensor([bits.quantized_tokens(int(p), layout) for p in positions])
        quantised_from.append(tokens[None, :] < limits[:, None])
    causal = tokens[None, :] <= positions[:, None]
    copies: list[list[torch.Tensor]] = [[] for _ in parts]
    masks = []
    for combination in range(1 << len(parts)):  # bit p set: part p read exact
        allowed = causal.clone()
        for p, reads_quantised in enumerate(quantised_from):
            allowed &= ~reads_quantised if combination >> p & 1 else reads_quantised
        if not bool(allowed.any()):
            continue
        masks.append(allowed)
        for p in range(len(parts)):
            copies[p].append(versions[p][combination >> p & 1])
    device = parts[0][0].device
    return [torch.cat(c, dim=2) for c in copies], torch.cat(masks, dim=1)[None, None].to(device)
