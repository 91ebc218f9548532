"""MiniMax's lightning attention (MiniMax-Text-01 and MiniMax-M1; HF transformers' MiniMaxLightningAttention, same
parameter and buffer names): linear attention whose state decays by a fixed rate per head.

Queries, keys and values are silu(qkv_proj(x)), unnormalised, H heads of D. Per head the state is S [D, D], and each
token t does

    S <- exp(-s) S + k_t^T v_t;   o_t = q_t S

with s the head's slope: 2^(-8h/H) for head h = 1..H, times (1 - i / (layers - 1) + 1e-5) on layer i, so the last
layers forget slowest. The heads' outputs are RMS-normalised together, gated by sigmoid(output_gate(x)) and
projected (out_proj). A prompt is computed block_size tokens at a time as HF does (within a block, decayed products
q k^T; across blocks, the state): the same numbers as the rule above. One decoding step is the rule once.

The cache is S alone, [B, H, D, D] in the layer's dtype (HF keeps it in the values' dtype): the same bytes at 4k
tokens as at 4M. MiniMax puts one softmax layer after every seven lightning ones (attn_type_list 1 among 0s); those
are grouped layers (attn_core.hf reads them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .build import seed_dense_weights
from .cache import checked_tokens
from .hf_fields import field, int_field, layer_index, layer_types, once, positive_fields
from .latent import RMSNorm

CACHE_FORMULA = "B · H · D · D · b, whatever T (each head's decayed state Kᵀ V, in the model's dtype)"
MINIMAX_LAYER_TYPES = ("full_attention", "linear_attention")
# the config.json formats read: transformers' (layer_types) and MiniMax's own (attn_type_list: 0 lightning, 1 softmax)
MINIMAX_MODEL_TYPES = ("minimax", "minimax_m1", "minimax_text_01")
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"silu": F.silu, "gelu": F.gelu, "relu": F.relu}


def minimax_layer_types(hf: Mapping[str, Any]) -> Sequence[str]:
    """_minimax_layer_types(...), worked out once per config read: every layer's reader asks for the whole list."""
    return once(hf, "minimax_layer_types", lambda: _minimax_layer_types(hf))


def _minimax_layer_types(hf: Mapping[str, Any]) -> Sequence[str]:
    """Each layer's type: layer_types as given, else attn_type_list (0: linear_attention, 1: full_attention), else
    MiniMaxConfig's default (full on even layers, linear on odd). A ValueError naming the field when malformed."""
    layers = int_field(hf, "num_hidden_layers")
    given = hf.get("attn_type_list")
    if hf.get("layer_types") is not None or given is None:
        return layer_types(hf, MINIMAX_LAYER_TYPES, lambda i: "full_attention" if (i + 1) % 2 else "linear_attention")
    if (
        not isinstance(given, list | tuple)
        or len(given) != layers
        or any(isinstance(t, bool) or t not in (0, 1) for t in given)
    ):
        raise ValueError(
            f"config field 'attn_type_list' must list {layers} entries (num_hidden_layers), each 0 (lightning "
            "attention) or 1 (softmax attention)."
        )
    return ["linear_attention" if t == 0 else "full_attention" for t in given]


@dataclass(frozen=True)
class LightningConfig:
    """One lightning attention layer. layer_idx and n_layers set its heads' decay rates."""

    d_model: int
    n_heads: int
    head_dim: int
    layer_idx: int
    n_layers: int
    block_size: int = 256
    hidden_act: str = "silu"

    def __post_init__(self) -> None:
        positive_fields(self, "d_model", "n_heads", "head_dim", "n_layers", "block_size")
        if not isinstance(self.layer_idx, int) or not 0 <= self.layer_idx < self.n_layers:
            raise ValueError(f"layer_idx={self.layer_idx!r}: this model has layers 0 to {self.n_layers - 1}.")
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(
                f"hidden_act={self.hidden_act!r} is not supported: choose one of {', '.join(ACTIVATIONS)}."
            )

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> LightningConfig:
        """From a MiniMax config.json (MiniMaxConfig's defaults: head_dim hidden_size / heads, block_size 256)."""
        layer_index(hf, layer_idx)
        d_model, heads = int_field(hf, "hidden_size"), int_field(hf, "num_attention_heads")
        return cls(
            d_model=d_model,
            n_heads=heads,
            head_dim=int_field(hf, "head_dim", d_model // heads),
            layer_idx=layer_idx,
            n_layers=int_field(hf, "num_hidden_layers"),
            block_size=int_field(hf, "block_size", 256),
            hidden_act=str(field(hf, "hidden_act", "silu")),
        )

    @property
    def inner_dim(self) -> int:
        return self.n_heads * self.head_dim


def cache_bytes_formula(cfg: LightningConfig, tokens: int, batch: int, element_bytes: int) -> int:
    """CACHE_FORMULA in closed form: B · H · D · D · b once a token is seen, 0 before."""
    return 0 if tokens == 0 else batch * cfg.n_heads * cfg.head_dim * cfg.head_dim * element_bytes


class LightningStateCache:
    """A lightning layer's state [B, H, D, D], allocated at the first token (HF's cache holds nothing before);
    seq_len counts the tokens seen, and a step reads the whole state."""

    def __init__(self, batch_size: int, heads: int, head_dim: int, *, dtype: torch.dtype) -> None:
        self.state_shape = (batch_size, heads, head_dim, head_dim)
        self.dtype = dtype
        self.state: torch.Tensor | None = None  # [B, H, D, D]
        self.seq_len = 0
        self.read_nbytes = 0

    def update(self, state: torch.Tensor, tokens: int) -> None:
        if self.state is None:
            self.state = state.to(self.dtype).contiguous()
        else:  # in place: the state keeps its storage from step to step
            self.state.copy_(state)
        self.seq_len += tokens
        self.read_nbytes = self.nbytes

    @property
    def nbytes(self) -> int:
        return 0 if self.state is None else self.state.numel() * self.state.element_size()

    @property
    def capacity_nbytes(self) -> int:
        return self.nbytes

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {} if self.state is None else {"state": tuple(self.state.shape)}


def slope_rates(cfg: LightningConfig) -> torch.Tensor:
    """[H, 1, 1]: each head's decay per token on this layer, in float32 as HF computes it."""
    base = 1 / (2 ** (8 / cfg.n_heads))
    exponent = torch.arange(cfg.n_heads) + 1
    factor = 1 - cfg.layer_idx / (cfg.n_layers - 1 + 1e-5) + 1e-5
    return (base**exponent * factor)[:, None, None]


def decay_factors(slope: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Within a block of block_size tokens: the state's decay at each query, [H, n, 1], each key's decay to the
    block's end, [H, n, 1], and the pairwise decay exp(-s (i - j)) for j <= i (0 above), [1, H, n, n]."""
    positions = torch.arange(block_size) + 1
    query_decay = torch.exp(-slope * positions[:, None])
    key_decay = torch.exp(-slope * (block_size - positions[:, None]))
    distance = slope * (positions[:, None] - positions[None, :])[None, None]
    diagonal_decay = torch.exp(torch.where(distance >= 0, -distance, float("-inf")))
    return query_decay, key_decay, diagonal_decay


class LightningAttention(nn.Module):
    """HF's MiniMaxLightningAttention: qkv_proj, output_gate, norm, out_proj, and its decay buffers (slope_rate,
    query_decay, key_decay, diagonal_decay), which its state_dict holds too."""

    slope_rate: torch.Tensor
    query_decay: torch.Tensor
    key_decay: torch.Tensor
    diagonal_decay: torch.Tensor

    def __init__(
        self, cfg: LightningConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.cfg = cfg
        kw: dict[str, Any] = {"device": device, "dtype": dtype, "bias": False}
        self.qkv_proj = nn.Linear(cfg.d_model, 3 * cfg.inner_dim, **kw)
        self.output_gate = nn.Linear(cfg.d_model, cfg.inner_dim, **kw)
        self.norm = RMSNorm(cfg.inner_dim, 1e-6, device=device, dtype=dtype)  # HF's: eps 1e-6, not rms_norm_eps
        self.out_proj = nn.Linear(cfg.inner_dim, cfg.d_model, **kw)
        meta = torch.device(device if device is not None else torch.get_default_device()).type == "meta"
        for name, value in (self._decay_shapes(dtype) if meta else self._decays()).items():
            self.register_buffer(name, value.to(device=device, dtype=dtype or value.dtype))

    def _decay_shapes(self, dtype: torch.dtype | None) -> dict[str, torch.Tensor]:
        """The decay buffers as shapes alone, on the meta device: a model's many lightning layers are measured there
        (describe_model), and computing each layer's [H, block, block] decays there would cost seconds."""
        heads, block = self.cfg.n_heads, self.cfg.block_size
        shapes = {
            "slope_rate": (heads, 1, 1),
            "query_decay": (heads, block, 1),
            "key_decay": (heads, block, 1),
            "diagonal_decay": (1, heads, block, block),
        }
        return {name: torch.empty(shape, device="meta", dtype=dtype or torch.float32) for name, shape in shapes.items()}

    def _decays(self) -> dict[str, torch.Tensor]:
        slope = slope_rates(self.cfg)
        query_decay, key_decay, diagonal_decay = decay_factors(slope, self.cfg.block_size)
        return {
            "slope_rate": slope,
            "query_decay": query_decay,
            "key_decay": key_decay,
            "diagonal_decay": diagonal_decay,
        }

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """Linear weights U(+-1/sqrt(fan_in)) per (seed, parameter) (attn_core.build.seed_dense_weights), the norm's
        scale ones, the decay buffers computed again (to_empty left them unset)."""
        seed_dense_weights(self, seed)
        self.norm.weight.fill_(1.0)
        for name, value in self._decays().items():
            getattr(self, name).copy_(value)

    def new_cache(self, batch_size: int = 1) -> LightningStateCache:
        return LightningStateCache(batch_size, self.cfg.n_heads, self.cfg.head_dim, dtype=self.qkv_proj.weight.dtype)

    def cache_after(self, tokens: int, batch_size: int = 1) -> LightningStateCache:
        """The cache after a prefill of tokens tokens, on the meta device through its own update."""
        cache = self.new_cache(batch_size)
        if checked_tokens(tokens):
            cache.update(torch.empty(cache.state_shape, device="meta", dtype=cache.dtype), tokens)
        return cache

    def forward(
        self, x: torch.Tensor, *, cache: LightningStateCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], None (no attention weights: a state, not a softmax)."""
        cfg = self.cfg
        batch, length, _ = x.shape
        qkv = ACTIVATIONS[cfg.hidden_act](self.qkv_proj(x)).view(batch, length, cfg.n_heads, 3 * cfg.head_dim)
        q, k, v = (t.transpose(1, 2) for t in qkv.split(cfg.head_dim, dim=3))  # [B, H, L, D]
        state = cache.state if cache is not None else None
        if state is not None and length == 1:  # one decoding step: the rule once
            state = torch.exp(-self.slope_rate) * state + k.transpose(-1, -2) @ v
            out = q @ state
        else:
            out, state = self._blocks(q, k, v, state)
        if cache is not None:
            cache.update(state, length)
        out = self.norm(out.transpose(1, 2).reshape(batch, length, cfg.inner_dim))
        return self.out_proj(torch.sigmoid(self.output_gate(x)) * out), None

    def _blocks(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """q, k, v [B, H, L, D] from state [B, H, D, D] (None: zeros) -> out [B, H, L, D], the state after them; in
        HF's order of operations, block by block."""
        if state is None:
            state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
        outs = []
        for start in range(0, q.shape[2], self.cfg.block_size):
            q_b, k_b, v_b = (t[:, :, start : start + self.cfg.block_size] for t in (q, k, v))
            n = q_b.shape[2]
            intra = ((q_b @ k_b.transpose(-1, -2)) * self.diagonal_decay[:, :, :n, :n]) @ v_b
            inter = (q_b * self.query_decay[:, :n]) @ state
            outs.append(inter + intra)
            block_decay = torch.exp(-self.slope_rate * n)
            state = state * block_decay + (k_b * self.key_decay[:, self.cfg.block_size - n :]).transpose(-1, -2) @ v_b
        return torch.cat(outs, dim=2), state
