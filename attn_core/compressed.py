"""DeepSeek-V4's attention: one shared K=V head over a sliding window, plus compressed entries of the older tokens.

Every layer has the window: query heads (low-rank queries, each head RMS-normalised) attend to one key-and-value head
of width D over the last W tokens, plus a learned per-head sink logit (a softmax slot that takes weight and gives no
value). The rotary part is the *last* d_h^R of a head, rotated in interleaved pairs; since the value is the key, the
output's rotary part is rotated back by the query's position before the grouped output projection (o_groups groups
of heads each projected to o_lora_rank, then o_b_proj). A layer's kind (HF's layer_types; compress_ratios 0 / 4 /
128 in published configs) adds entries that summarise m tokens each (softmax-gated sums, per channel, of projected
tokens, then RMSNorm and RoPE at the window's first position):
- "sliding": nothing more.
- "hca" (heavily compressed, m = 128): one entry per m tokens; every finished entry is read whole.
- "csa" (compressed sparse, m = 4): each entry pools 2m tokens (the previous window's half "Ca" and this window's
  half "Cb": overlapping windows, stride m); a lightning indexer with its own compressed keys (width d_I) scores the
  entries and each query reads its index_topk best.
Tokens of an unfinished window wait in the cache (their projections and gate logits) until m have arrived.

Numbers as HF transformers' DeepseekV4Attention (5.23). A decoding step of a CSA layer gathers the chosen entries
rather than masking the others, and runs no scoring while every entry would be chosen anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from .attend import KeyMask, attend
from .build import seed_dense_weights
from .cache import checked_tokens
from .hf_fields import (
    float_field,
    int_field,
    layer_index,
    layer_types,
    once,
    positive_fields,
    rope_name,
    rope_parameters,
    rope_settings,
)
from .latent import RMSNorm
from .rope import PLAIN, RopeScaling, rope_cos_sin

Kind = Literal["sliding", "csa", "hca"]
Device = torch.device | str | None
HF_LAYER_TYPES: dict[str, Kind] = {
    "sliding_attention": "sliding",
    "compressed_sparse_attention": "csa",
    "heavily_compressed_attention": "hca",
}
COMPRESS_RATIO_KINDS: dict[int, Kind] = {0: "sliding", 4: "csa", 128: "hca"}  # HF's map for published configs
CACHE_FORMULA: dict[Kind, str] = {
    "sliding": "D · min(T, W−1) · b",
    "hca": "D · (min(T, W−1) + ⌊T/m⌋ + 2·(T mod m)) · b",
    "csa": "(D + d_I) · (⌊T/m⌋ + 4·(T mod m) + 2m·[T ≥ m]) · b + D · min(T, W−1) · b",
}


@dataclass(frozen=True)
class CompressedConfig:
    """One DeepSeek-V4 attention layer. compress_rate is m (0 for a sliding layer); index_* matter for "csa" only."""

    kind: Kind
    d_model: int
    n_heads: int
    head_dim: int
    q_lora_rank: int
    qk_rope_head_dim: int
    o_groups: int
    o_lora_rank: int
    sliding_window: int
    compress_rate: int = 0
    index_n_heads: int = 64
    index_head_dim: int = 128
    index_topk: int = 512
    rope_theta: float = 10000.0
    compress_rope_theta: float = 160000.0
    rope_scaling: RopeScaling = PLAIN  # the sliding layers' ("main"): plain in published configs
    compress_rope_scaling: RopeScaling = PLAIN  # the compressed layers' and their compressors' (YaRN, published)
    norm_eps: float = 1e-6

    def __post_init__(self) -> None:
        if self.kind not in CACHE_FORMULA:
            raise ValueError(f"kind={self.kind!r} is unknown: choose one of {', '.join(CACHE_FORMULA)}.")
        positive_fields(
            self,
            "d_model",
            "n_heads",
            "head_dim",
            "q_lora_rank",
            "qk_rope_head_dim",
            "o_groups",
            "o_lora_rank",
            "sliding_window",
            "index_n_heads",
            "index_head_dim",
            "index_topk",
        )
        if self.qk_rope_head_dim % 2 or self.qk_rope_head_dim > self.head_dim:
            raise ValueError(
                f"qk_rope_head_dim={self.qk_rope_head_dim} must be even and at most head_dim={self.head_dim} "
                "(partial_rotary_factor * head_dim: RoPE rotates pairs of a head's last channels)."
            )
        if (self.n_heads * self.head_dim) % self.o_groups:
            raise ValueError(
                f"o_groups={self.o_groups} does not divide n_heads * head_dim = {self.n_heads * self.head_dim}."
            )
        if self.kind == "sliding" and self.compress_rate != 0:
            raise ValueError(f"compress_rate={self.compress_rate} on a sliding layer: it compresses nothing (0).")
        if self.kind != "sliding" and (not isinstance(self.compress_rate, int) or self.compress_rate <= 0):
            raise ValueError(f"compress_rate must be a positive whole number on a {self.kind} layer.")
        if self.kind == "csa" and self.index_head_dim < self.qk_rope_head_dim:
            raise ValueError(
                f"index_head_dim={self.index_head_dim} is smaller than qk_rope_head_dim={self.qk_rope_head_dim}: "
                "the indexer rotates the last qk_rope_head_dim of its keys."
            )

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> CompressedConfig:
        """From DeepSeek-V4's config.json (compress_ratios, compress_rate_*, qk_rope_head_dim, rope_scaling) or
        DeepseekV4Config.to_dict() (layer_types, compress_rates, partial_rotary_factor, nested rope_parameters)."""
        layer_index(hf, layer_idx)
        kind = _layer_kind(hf, layer_idx)
        return once(hf, ("CompressedConfig", kind), lambda: cls._of_kind(hf, kind))  # layers of a kind are alike

    @classmethod
    def _of_kind(cls, hf: Mapping[str, Any], kind: Kind) -> CompressedConfig:
        rates = {"csa": 4, "hca": 128}
        if isinstance(hf.get("compress_rates"), Mapping):
            named = {HF_LAYER_TYPES[k]: v for k, v in hf["compress_rates"].items() if k in HF_LAYER_TYPES}
            rates |= {k: int_field({"compress_rates": v}, "compress_rates") for k, v in named.items()}
        for key, short in (("compress_rate_csa", "csa"), ("compress_rate_hca", "hca")):
            if key in hf:
                rates[short] = int_field(hf, key)
        head_dim = int_field(hf, "head_dim")
        if hf.get("partial_rotary_factor") is not None:
            rope_dim = int(head_dim * float_field(hf, "partial_rotary_factor"))
        else:
            rope_dim = int_field(hf, "qk_rope_head_dim", 64)
        (main_theta, main_scaling), (compress_theta, compress_scaling) = _rope(hf)
        return cls(
            kind=kind,
            d_model=int_field(hf, "hidden_size"),
            n_heads=int_field(hf, "num_attention_heads"),
            head_dim=head_dim,
            q_lora_rank=int_field(hf, "q_lora_rank"),
            qk_rope_head_dim=rope_dim,
            o_groups=int_field(hf, "o_groups"),
            o_lora_rank=int_field(hf, "o_lora_rank"),
            sliding_window=int_field(hf, "sliding_window"),
            compress_rate=0 if kind == "sliding" else rates[kind],
            index_n_heads=int_field(hf, "index_n_heads") if kind == "csa" else 64,
            index_head_dim=int_field(hf, "index_head_dim") if kind == "csa" else 128,
            index_topk=int_field(hf, "index_topk") if kind == "csa" else 512,
            rope_theta=main_theta,
            compress_rope_theta=compress_theta,
            rope_scaling=main_scaling,
            compress_rope_scaling=compress_scaling,
            norm_eps=float_field(hf, "rms_norm_eps", 1e-6),
        )

    @property
    def cache_formula(self) -> str:
        return CACHE_FORMULA[self.kind]

    def read_rows(self, tokens: int) -> dict[str, int]:
        """Rows the query at position tokens - 1 reads, by the cache tensor they are in: the window's keys (itself
        included), the entries it attends to and, when the indexer has more than index_topk entries to choose from,
        the indexer's keys it scores."""
        rows = {"window": min(tokens, self.sliding_window)}
        if self.kind == "sliding":
            return rows
        entries = tokens // self.compress_rate
        if self.kind == "hca" or entries <= self.index_topk:
            return rows | {"entries": entries}
        return rows | {"entries": self.index_topk, "index_entries": entries}

    def read_elements(self, tokens: int) -> int:
        """Numbers the query at position tokens - 1 reads from the cache: read_rows times each row's width."""
        widths = {"window": self.head_dim, "entries": self.head_dim, "index_entries": self.index_head_dim}
        return sum(rows * widths[name] for name, rows in self.read_rows(tokens).items())


def _layer_kind(hf: Mapping[str, Any], layer_idx: int) -> Kind:
    if hf.get("layer_types") is not None:
        return HF_LAYER_TYPES[layer_types(hf, tuple(HF_LAYER_TYPES), str)[layer_idx]]
    ratios = hf.get("compress_ratios")
    if ratios is not None:
        if not isinstance(ratios, list | tuple) or len(ratios) <= layer_idx or ratios[layer_idx] not in (0, 4, 128):
            raise ValueError(
                "config field 'compress_ratios' must give 0 (sliding), 4 (CSA) or 128 (HCA) for each layer."
            )
        return COMPRESS_RATIO_KINDS[ratios[layer_idx]]
    # transformers' default schedule: two HCA layers, then CSA and HCA in turn
    return "hca" if layer_idx < 2 or layer_idx % 2 == 0 else "csa"


def _rope(hf: Mapping[str, Any]) -> tuple[tuple[float, RopeScaling], tuple[float, RopeScaling]]:
    return once(hf, "compressed_rope", lambda: _read_rope(hf))  # the same for every layer


def _read_rope(hf: Mapping[str, Any]) -> tuple[tuple[float, RopeScaling], tuple[float, RopeScaling]]:
    """(theta, scaling) of the sliding layers ("main") and of the compressed ones ("compress"), as DeepseekV4Config
    resolves them: nested rope_parameters (to_dict()) as given; else the flat rope_parameters / rope_scaling
    (config.json) goes to the compressed layers with attention_factor 1 for YaRN (V4 does not scale cos/sin), and the
    sliding layers keep plain RoPE. partial_rotary_factor is qk_rope_head_dim's business, not the scaling's."""
    context = int_field(hf, "max_position_embeddings", 1048576)
    params = hf.get("rope_parameters")
    names = ("rope_parameters.main", "rope_parameters.compress")
    if isinstance(params, Mapping) and isinstance(params.get("main"), Mapping):
        main, compress = params["main"], params.get("compress") or {}
    else:
        names = (rope_name(hf), rope_name(hf))
        flat = {k: v for k, v in rope_parameters(hf).items() if k not in ("main", "compress")}
        main = {"rope_theta": float_field(hf, "rope_theta", 10000.0)}
        compress = {**flat, "rope_theta": float_field(hf, "compress_rope_theta", 160000.0)}
        if compress.get("rope_type", compress.get("type")) == "yarn":
            compress.setdefault("attention_factor", 1.0)
    rotary = lambda p: {k: v for k, v in p.items() if k != "partial_rotary_factor"} if isinstance(p, Mapping) else p  # noqa: E731
    return (
        rope_settings(hf, 10000.0, context, rotary(main), name=names[0]),
        rope_settings(hf, 160000.0, context, rotary(compress), name=names[1]),
    )


def cache_bytes_formula(cfg: CompressedConfig, tokens: int, batch: int, element_bytes: int) -> int:
    window = min(tokens, cfg.sliding_window - 1) * cfg.head_dim
    if cfg.kind == "sliding":
        return window * batch * element_bytes
    m = cfg.compress_rate
    entries, waiting = tokens // m, tokens % m
    if cfg.kind == "hca":  # entries, and the waiting tokens' projection and gate logits
        return (window + (entries + 2 * waiting) * cfg.head_dim) * batch * element_bytes
    # csa: two halves per waiting token (x2 again for the gate), the last finished window's "Ca" half (kv and gate)
    per_width = entries + 4 * waiting + (2 * m if tokens >= m else 0)
    return (window + per_width * (cfg.head_dim + cfg.index_head_dim)) * batch * element_bytes


# --- rotary, V4's layout -----------------------------------------------------------------------------------------------


def _pair_angles(
    start: int, length: int, cfg: CompressedConfig, like: torch.Tensor, *, compressed: bool, stride: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [length, d_h^R / 2] for positions start, start + stride, ...: one angle per rotated pair, with the
    compressed layers' RoPE (compressed) or the sliding layers'."""
    theta, scaling = (
        (cfg.compress_rope_theta, cfg.compress_rope_scaling) if compressed else (cfg.rope_theta, cfg.rope_scaling)
    )
    cos, sin = rope_cos_sin(
        start, length * stride, cfg.qk_rope_head_dim, theta, device=like.device, dtype=like.dtype, scaling=scaling
    )
    half = cfg.qk_rope_head_dim // 2
    return cos[::stride, :half], sin[::stride, :half]


def rotate_last_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the last 2 * cos.shape[-1] channels of x [..., L, width] in interleaved pairs (0,1), (2,3)... in place of
    rope.apply_rope(interleaved=True), whose evens-then-odds layout would not do here: V4's value is its key, so the
    rotated channels reach the output, and must come back in their own layout to be rotated back there."""
    rope_dim = 2 * cos.shape[-1]
    rest, rope = x[..., :-rope_dim], x[..., -rope_dim:]
    first, second = rope[..., 0::2], rope[..., 1::2]
    rotated = torch.stack((first * cos - second * sin, second * cos + first * sin), dim=-1).flatten(-2)
    return torch.cat((rest, rotated), dim=-1)


# --- the cache ---------------------------------------------------------------------------------------------------------


class CompressorState:
    """One compressor's part of the cache: its finished entries [B, 1, E, width], the tokens of the unfinished window
    (projection and gate logits, [B, < m, halves * width] each) and, with overlapping windows, the last finished
    window's first half (kv and gate, [B, m, width] each), which the next entry pools."""

    def __init__(
        self, batch_size: int, width: int, rate: int, overlap: bool, *, dtype: torch.dtype, device: Device
    ) -> None:
        halves = 2 if overlap else 1
        self.rate, self.width, self.overlap = rate, width, overlap
        self.entries = torch.empty(batch_size, 1, 0, width, dtype=dtype, device=device)
        self.waiting_kv = torch.empty(batch_size, 0, halves * width, dtype=dtype, device=device)
        self.waiting_gate = torch.empty_like(self.waiting_kv)
        self.last_kv: torch.Tensor | None = None
        self.last_gate: torch.Tensor | None = None

    @property
    def count(self) -> int:
        return self.entries.shape[2]

    def take(self, kv: torch.Tensor, gate: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Add new tokens' [B, L, halves * width] projections; return the finished windows' ([B, n * m, ...] each)
        and the position of their first token. The rest waits."""
        kv, gate = torch.cat((self.waiting_kv, kv), dim=1), torch.cat((self.waiting_gate, gate), dim=1)
        usable = kv.shape[1] // self.rate * self.rate
        self.waiting_kv, self.waiting_gate = kv[:, usable:], gate[:, usable:]
        return kv[:, :usable], gate[:, :usable], self.count * self.rate

    def add(self, entries: torch.Tensor) -> torch.Tensor:
        """entries [B, 1, n, width] -> every entry held, [B, 1, E, width]."""
        self.entries = torch.cat((self.entries, entries), dim=2)
        return self.entries

    def tensors(self) -> dict[str, torch.Tensor]:
        held = {"entries": self.entries, "waiting_kv": self.waiting_kv, "waiting_gate": self.waiting_gate}
        if self.last_kv is not None and self.last_gate is not None:
            held |= {"last_window_kv": self.last_kv, "last_window_gate": self.last_gate}
        return held


class CompressedCache:
    """A V4 layer's cache: the window's last W - 1 keys (= values) [B, 1, <= W - 1, D], and per compressor (the
    layer's, and a CSA layer's indexer) its CompressorState."""

    def __init__(self, cfg: CompressedConfig, batch_size: int, *, dtype: torch.dtype, device: Device) -> None:
        self.window = torch.empty(batch_size, 1, 0, cfg.head_dim, dtype=dtype, device=device)
        self.keep = cfg.sliding_window - 1
        self.states: dict[str, CompressorState] = {}
        if cfg.kind != "sliding":
            overlap = cfg.kind == "csa"
            make = lambda width: CompressorState(  # noqa: E731
                batch_size, width, cfg.compress_rate, overlap, dtype=dtype, device=device
            )
            self.states["compressor"] = make(cfg.head_dim)
            if overlap:
                self.states["indexer"] = make(cfg.index_head_dim)
        self.seq_len = 0
        self.read_nbytes = 0

    def append(self, kv: torch.Tensor) -> torch.Tensor:
        """kv [B, 1, L, D] -> the held window and kv, [B, 1, n + L, D]; keeps the last W - 1 of them."""
        full = torch.cat((self.window, kv), dim=2)
        self.window = full[:, :, full.shape[2] - min(self.keep, full.shape[2]) :]
        return full

    def _held(self) -> dict[str, torch.Tensor]:
        held = {"window": self.window}
        for name, state in self.states.items():
            prefix = "" if name == "compressor" else "index_"
            held |= {prefix + key: tensor for key, tensor in state.tensors().items()}
        return held

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._held().values())

    @property
    def capacity_nbytes(self) -> int:
        return self.nbytes  # held by concatenation: nothing preallocated

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(t.shape) for name, t in self._held().items()}


# A query block's largest intermediate, in elements (1 GB of float32): see CompressedAttention.query_rows.
QUERY_BLOCK_ELEMENTS = 1 << 28


@dataclass(frozen=True)
class Reads:
    """What one call's queries read: the window's keys [B, 1, held + L, D], the compressor's entries [B, 1, E, D] and
    the indexer's keys [B, E, d_I] (None where the layer has none), the call's first position and the keys held
    before it."""

    keys: torch.Tensor
    entries: torch.Tensor | None
    index_keys: torch.Tensor | None
    start: int
    held: int
    every_key: torch.Tensor | None = None  # a prompt's: keys then entries [B, 1, S, D]
    sink_kv: torch.Tensor | None = None  # and as _sink_kv gives them, without weights


# --- the layer ---------------------------------------------------------------------------------------------------------


class Compressor(nn.Module):
    """HF's compressor weights (kv_proj, gate_proj, position_bias, kv_norm) and the pooling they define."""

    def __init__(
        self,
        cfg: CompressedConfig,
        width: int,
        overlap: bool,
        *,
        device: Device = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        halves = 2 if overlap else 1
        self.cfg, self.width, self.overlap = cfg, width, overlap
        self.kv_proj = nn.Linear(cfg.d_model, halves * width, bias=False, device=device, dtype=dtype)
        self.gate_proj = nn.Linear(cfg.d_model, halves * width, bias=False, device=device, dtype=dtype)
        self.position_bias = nn.Parameter(torch.empty(cfg.compress_rate, halves * width, device=device, dtype=dtype))
        self.kv_norm = RMSNorm(width, cfg.norm_eps, device=device, dtype=dtype)

    def compress(self, x: torch.Tensor, state: CompressorState) -> torch.Tensor:
        """Feed x [B, L, d_model]; return every entry held [B, 1, E, width] (new ones pooled, normed, rotated)."""
        kv, gate, first = state.take(self.kv_proj(x), self.gate_proj(x))
        if kv.shape[1] == 0:
            return state.entries
        batch, m, width = x.shape[0], self.cfg.compress_rate, self.width
        n = kv.shape[1] // m
        kv, gate = kv.view(batch, n, m, -1), gate.view(batch, n, m, -1) + self.position_bias  # [B, n, m, halves*w]
        if self.overlap:  # entry i pools window i-1's first half ("Ca") and window i's second half ("Cb")
            pooled_kv = kv.new_zeros(batch, n, 2 * m, width)
            pooled_gate = gate.new_full((batch, n, 2 * m, width), float("-inf"))  # softmax weight 0 until filled
            pooled_kv[:, :, m:], pooled_gate[:, :, m:] = kv[..., width:], gate[..., width:]
            pooled_kv[:, 1:, :m], pooled_gate[:, 1:, :m] = kv[:, :-1, :, :width], gate[:, :-1, :, :width]
            if state.last_kv is not None and state.last_gate is not None:
                pooled_kv[:, 0, :m], pooled_gate[:, 0, :m] = state.last_kv, state.last_gate
            state.last_kv, state.last_gate = kv[:, -1, :, :width].clone(), gate[:, -1, :, :width].clone()
            kv, gate = pooled_kv, pooled_gate
        entries = self.kv_norm((kv * gate.softmax(dim=2, dtype=torch.float32).to(kv.dtype)).sum(dim=2))  # [B, n, w]
        cos, sin = _pair_angles(first, n, self.cfg, entries, compressed=True, stride=m)
        return state.add(rotate_last_pairs(entries, cos, sin)[:, None])


class IndexerScorer(nn.Module):
    def __init__(self, cfg: CompressedConfig, *, device: Device = None, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.weights_proj = nn.Linear(cfg.d_model, cfg.index_n_heads, bias=False, device=device, dtype=dtype)


class Indexer(Compressor):
    """HF's DeepseekV4Indexer: a compressor at width d_I over the same windows, queries from q_lora's residual."""

    def __init__(self, cfg: CompressedConfig, *, device: Device = None, dtype: torch.dtype | None = None) -> None:
        super().__init__(cfg, cfg.index_head_dim, overlap=True, device=device, dtype=dtype)
        self.q_b_proj = nn.Linear(
            cfg.q_lora_rank, cfg.index_n_heads * cfg.index_head_dim, bias=False, device=device, dtype=dtype
        )
        self.scorer = IndexerScorer(cfg, device=device, dtype=dtype)

    def scores(
        self, x: torch.Tensor, q_resid: torch.Tensor, keys: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> torch.Tensor:
        """[B, L, E]: sum_h w_h * ReLU(q_h . k) / sqrt(d_I), in HF's order of operations (same top-k, ties too)."""
        cfg = self.cfg
        q = rearrange(self.q_b_proj(q_resid), "b l (h d) -> b h l d", h=cfg.index_n_heads)
        q = rotate_last_pairs(q, cos, sin).transpose(1, 2)  # [B, L, H_I, d_I]
        batch, q_len = q.shape[0], q.shape[1]
        # one [B, L * H_I, d_I] x [B, d_I, E] product: matmul would broadcast (copy) the keys once per query
        products = torch.bmm(q.reshape(batch, -1, q.shape[-1]).float(), keys.transpose(-1, -2).float())
        scores = F.relu(products.view(batch, q_len, cfg.index_n_heads, -1)) * cfg.index_head_dim**-0.5  # [B, L, H_I, E]
        weights = self.scorer.weights_proj(x).float() * cfg.index_n_heads**-0.5  # [B, L, H_I]
        return (scores * weights.unsqueeze(-1)).sum(dim=2)


class SparseCompressor(Compressor):
    """HF's DeepseekV4CSACompressor: overlapping windows at width D, and the indexer that picks entries."""

    def __init__(self, cfg: CompressedConfig, *, device: Device = None, dtype: torch.dtype | None = None) -> None:
        super().__init__(cfg, cfg.head_dim, overlap=True, device=device, dtype=dtype)
        self.indexer = Indexer(cfg, device=device, dtype=dtype)


class CompressedAttention(nn.Module):
    """A DeepSeek-V4 attention layer of any kind; state_dict as HF's DeepseekV4Attention's."""

    def __init__(self, cfg: CompressedConfig, *, device: Device = None, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        self.cfg = cfg
        width = cfg.n_heads * cfg.head_dim
        self.q_a_proj = nn.Linear(cfg.d_model, cfg.q_lora_rank, bias=False, **kw)
        self.q_a_norm = RMSNorm(cfg.q_lora_rank, cfg.norm_eps, **kw)
        self.q_b_proj = nn.Linear(cfg.q_lora_rank, width, bias=False, **kw)
        self.kv_proj = nn.Linear(cfg.d_model, cfg.head_dim, bias=False, **kw)
        self.kv_norm = RMSNorm(cfg.head_dim, cfg.norm_eps, **kw)
        # one block per group of heads: [o_groups * o_lora_rank, width / o_groups], applied group by group
        self.o_a_proj = nn.Linear(width // cfg.o_groups, cfg.o_groups * cfg.o_lora_rank, bias=False, **kw)
        self.o_b_proj = nn.Linear(cfg.o_groups * cfg.o_lora_rank, cfg.d_model, bias=False, **kw)
        self.sinks = nn.Parameter(torch.empty(cfg.n_heads, **kw))
        self.compressor: Compressor | None = None
        if cfg.kind == "hca":
            self.compressor = Compressor(cfg, cfg.head_dim, overlap=False, **kw)
        elif cfg.kind == "csa":
            self.compressor = SparseCompressor(cfg, **kw)

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """Linear weights U(+-1/sqrt(fan_in)) from seeded_generator(f"{seed}/{name}"); RMSNorm scales ones; sinks and
        position_bias zeros, as HF's _init_weights sets them."""
        seed_dense_weights(self, seed)
        for module in self.modules():
            if isinstance(module, RMSNorm):
                module.weight.fill_(1.0)
            elif isinstance(module, Compressor):
                module.position_bias.zero_()
        self.sinks.zero_()

    def new_cache(self, batch_size: int = 1) -> CompressedCache:
        weight = self.kv_proj.weight
        return CompressedCache(self.cfg, batch_size, dtype=weight.dtype, device=weight.device)

    def cache_after(self, tokens: int, batch_size: int = 1) -> CompressedCache:
        """The cache after a prefill of tokens tokens, on the meta device: the window's eviction and the compressors'
        bookkeeping run on shape-only tensors."""
        cfg, dtype = self.cfg, self.kv_proj.weight.dtype
        cache = CompressedCache(cfg, batch_size, dtype=dtype, device="meta")
        cache.append(torch.empty(batch_size, 1, checked_tokens(tokens), cfg.head_dim, dtype=dtype, device="meta"))
        for state in cache.states.values():
            halves = 2 if state.overlap else 1
            projected = torch.empty(batch_size, tokens, halves * state.width, dtype=dtype, device="meta")
            kv, _, _ = state.take(projected, projected)
            n = kv.shape[1] // state.rate
            state.add(torch.empty(batch_size, 1, n, state.width, dtype=dtype, device="meta"))
            if state.overlap and n:
                state.last_kv = torch.empty(batch_size, state.rate, state.width, dtype=dtype, device="meta")
                state.last_gate = torch.empty_like(state.last_kv)
        cache.seq_len = tokens
        cache.read_nbytes = batch_size * cfg.read_elements(tokens) * cache.window.element_size()
        return cache

    def forward(
        self,
        x: torch.Tensor,
        *,
        cache: CompressedCache | None = None,
        return_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] or None; S = the window's keys (held and
        new), then every entry held (zero where a query may not, or did not choose to, read it)."""
        cfg = self.cfg
        batch, q_len, _ = x.shape
        cache = self.new_cache(batch) if cache is None else cache
        start, held = cache.seq_len, cache.window.shape[2]
        cos, sin = _pair_angles(start, q_len, cfg, x, compressed=cfg.kind != "sliding")
        q_resid = self.q_a_norm(self.q_a_proj(x))  # [B, L, q_lora_rank]; the heads' queries are made block by block
        kv = rotate_last_pairs(self.kv_norm(self.kv_proj(x))[:, None], cos, sin)  # [B, 1, L, D]
        keys = cache.append(kv)  # [B, 1, held + L, D]
        entries = index_keys = None
        if isinstance(self.compressor, Compressor):  # compressed once per call: the states move on
            entries = self.compressor.compress(x, cache.states["compressor"])  # [B, 1, E, D]
            if isinstance(self.compressor, SparseCompressor):  # [B, E, d_I]
                index_keys = self.compressor.indexer.compress(x, cache.states["indexer"])[:, 0]
        every_key = sink_kv = None
        if q_len > 1:  # one copy per call, shared by every query block
            every_key = keys if entries is None else torch.cat((keys, entries), dim=2)
            sink_kv = None if return_weights else self._sink_kv(every_key)
        reads = Reads(keys, entries, index_keys, start, held, every_key, sink_kv)
        rows = self.query_rows(batch, keys.shape[2] + (0 if entries is None else entries.shape[2]))
        parts = [
            self._rows(
                x[:, first : first + rows],
                q_resid[:, first : first + rows],
                (cos[first : first + rows], sin[first : first + rows]),
                reads,
                first,
                return_weights,
                step=q_len == 1,
            )
            for first in range(0, q_len, rows)
        ]
        cache.seq_len += q_len
        cache.read_nbytes = batch * cfg.read_elements(cache.seq_len) * cache.window.element_size()
        if len(parts) == 1:
            return parts[0]
        out = torch.cat([part for part, _ in parts], dim=1)
        if not return_weights:
            return out, None
        return out, torch.cat([part for _, part in parts if part is not None], dim=2)

    def query_rows(self, batch: int, keys: int) -> int:
        """How many queries one block attends at once: a block's largest intermediates ([B, H, rows, S] scores where
        torch falls back to its math kernel, the CSA indexer's [B, rows, H_I, E]) stay within QUERY_BLOCK_ELEMENTS,
        so a prompt's memory grows with its length, not with length x length."""
        heads = max(self.cfg.n_heads, self.cfg.index_n_heads if self.cfg.kind == "csa" else 0)
        return max(1, QUERY_BLOCK_ELEMENTS // (batch * heads * (max(keys, self.cfg.head_dim) + 1)))  # + the sink

    def _rows(
        self,
        x: torch.Tensor,
        q_resid: torch.Tensor,
        angles: tuple[torch.Tensor, torch.Tensor],
        reads: Reads,
        first: int,
        return_weights: bool,
        *,
        step: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The call's tokens first .. first + l - 1 (x [B, l, d_model], q_resid their q_a_norm(q_a_proj(x)), angles
        their cos, sin) over every key and entry the call reads -> out [B, l, d_model], weights [B, H, l, S] or None.
        step: the call is one decoding step."""
        cfg = self.cfg
        batch, q_len = x.shape[0], x.shape[1]
        cos, sin = angles
        q = rearrange(self.q_b_proj(q_resid), "b l (h d) -> b h l d", h=cfg.n_heads)
        q = rotate_last_pairs(F.rms_norm(q, (cfg.head_dim,), eps=cfg.norm_eps), cos, sin)  # [B, H, l, D]
        start = reads.start + first
        query_pos = torch.arange(start, start + q_len, device=x.device)[:, None]  # [l, 1]
        key_pos = torch.arange(
            reads.start - reads.held, reads.start - reads.held + reads.keys.shape[2], device=x.device
        )
        allowed = (key_pos[None] <= query_pos) & (query_pos - key_pos[None] < cfg.sliding_window)  # [l, held + L]
        allowed = allowed[None, None].expand(batch, 1, -1, -1)
        keys, entries = reads.keys, reads.entries
        mask: torch.Tensor | None = allowed
        chosen: torch.Tensor | None = None
        if entries is not None:
            visible = torch.arange(entries.shape[2], device=x.device)[None] < (query_pos + 1) // cfg.compress_rate
            visible = visible[None, None].expand(batch, 1, -1, -1)  # [B, 1, l, E]
            if reads.index_keys is not None and isinstance(self.compressor, SparseCompressor):
                visible, chosen = self._choose(
                    self.compressor.indexer, x, q_resid, reads.index_keys, visible, start, step
                )
            if chosen is not None and step:  # a decoding step: gather the chosen entries (in cache order)
                gathered = entries[:, 0][torch.arange(batch, device=x.device)[:, None], chosen[:, 0]][:, None]
                keys, mask = torch.cat((keys, gathered), dim=2), None
            else:
                mask = torch.cat((allowed, visible), dim=-1)
                keys = reads.every_key if reads.every_key is not None else torch.cat((keys, entries), dim=2)
        elif reads.every_key is not None:
            keys = reads.every_key
        out, weights = self._attend(q, keys, mask, return_weights, reads.sink_kv if keys is reads.every_key else None)
        if weights is not None and entries is not None and chosen is not None and step:  # to [B, H, 1, held + 1 + E]
            window, spread = weights[..., : -chosen.shape[-1]], weights.new_zeros(*weights.shape[:3], entries.shape[2])
            spread.scatter_(-1, chosen[:, None].expand(-1, cfg.n_heads, -1, -1), weights[..., -chosen.shape[-1] :])
            weights = torch.cat((window, spread), dim=-1)
        out = rotate_last_pairs(out, cos, -sin)  # the values' rotation, undone at the query's position
        grouped = rearrange(out, "b h l d -> (b l) (h d)").view(batch * q_len, cfg.o_groups, -1)  # [B*l, g, in]
        w = self.o_a_proj.weight.view(cfg.o_groups, cfg.o_lora_rank, -1).transpose(1, 2)  # [g, in, o_lora_rank]
        mixed = torch.bmm(grouped.transpose(0, 1), w).transpose(0, 1).reshape(batch, q_len, -1)
        return self.o_b_proj(mixed), weights

    def _choose(
        self,
        indexer: Indexer,
        x: torch.Tensor,
        q_resid: torch.Tensor,
        index_keys: torch.Tensor,
        visible: torch.Tensor,
        start: int,
        step: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The indexer's pick among the visible entries: (visible & chosen [B, 1, L, E], or for a decoding step with
        more than index_topk entries the chosen indices [B, 1, k])."""
        cfg = self.cfg
        entries = index_keys.shape[1]
        if entries <= cfg.index_topk:  # the indexer would choose every visible entry
            return visible, None
        cos, sin = _pair_angles(start, x.shape[1], cfg, x, compressed=True)
        scores = indexer.scores(x, q_resid, index_keys, cos, sin).masked_fill(~visible[:, 0], float("-inf"))
        chosen = scores.topk(cfg.index_topk, dim=-1).indices  # [B, L, k]
        if step:  # rows read in cache order are read much faster, and attention is the same
            return visible, chosen.sort(dim=-1).values
        picked = torch.zeros_like(visible[:, 0]).scatter_(-1, chosen, True)
        return visible & picked[:, None], None

    def _attend(
        self,
        q: torch.Tensor,
        keys: torch.Tensor,
        allowed: torch.Tensor | None,
        return_weights: bool,
        kv: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """q [B, H, L, D] over the one K=V head keys [B, 1, S, D], with each head's sink logit in the softmax; kv:
        _sink_kv(keys) where the caller has it."""
        batch, heads, q_len, dim = q.shape
        if not return_weights:
            return self._attend_fused(q, self._sink_kv(keys) if kv is None else kv, allowed), None
        scores = torch.matmul(q.reshape(batch, 1, heads * q_len, dim), keys.transpose(-1, -2))
        scores = scores.view(batch, heads, q_len, -1).mul_(dim**-0.5)  # [B, H, L, S]
        if allowed is not None:
            scores.masked_fill_(~allowed, float("-inf"))
        sinks = self.sinks.view(1, heads, 1, 1).expand(batch, -1, q_len, 1).to(scores.dtype)
        logits = torch.cat((scores, sinks), dim=-1)
        weights = torch.softmax(logits - logits.amax(dim=-1, keepdim=True), dim=-1)[..., :-1]
        out = torch.matmul(weights.reshape(batch, 1, heads * q_len, -1), keys).view(batch, heads, q_len, dim)
        return out, weights

    @staticmethod
    def _sink_kv(keys: torch.Tensor) -> torch.Tensor:
        """keys [B, 1, S, D] -> [B, 1, S + 1, D + 1]: the keys with a zero channel, then the sink's key [0, ..., 0, 1]
        (see _attend_fused). Built once per call, not per query block: it copies every key."""
        batch, _, length, dim = keys.shape
        kv = keys.new_zeros(batch, 1, length + 1, dim + 1)
        kv[:, :, :-1, :dim] = keys
        kv[:, :, -1, dim] = 1.0
        return kv

    def _attend_fused(self, q: torch.Tensor, kv: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        """As _attend, through attend() (torch's fused kernel, no [B, H, L, S] weights drawn) over kv = _sink_kv(keys):
        the sink becomes one more key, [0, ..., 0, 1], always allowed, whose logit is the extra query channel
        sink_h * sqrt(D); its value is 0 in the D channels read out (the extra one is dropped)."""
        batch, heads, q_len, dim = q.shape
        scale = dim**-0.5
        sink_q = (self.sinks / scale).to(q.dtype).view(1, heads, 1, 1).expand(batch, -1, q_len, 1)
        q = torch.cat((q, sink_q), dim=-1)  # [B, H, L, D + 1]
        mask = KeyMask(None)
        if allowed is not None:
            mask = KeyMask(torch.cat((allowed, allowed.new_ones(*allowed.shape[:-1], 1)), dim=-1))
        return attend(q, kv, kv, scale=scale, mask=mask, return_weights=False)[0][..., :dim]
