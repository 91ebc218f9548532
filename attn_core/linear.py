"""Linear attention with a fixed-size state instead of a growing cache: Qwen3-Next's Gated DeltaNet and Kimi Linear's
Kimi Delta Attention (KDA), as HF transformers 5.23 writes them (same parameter names, same numbers).

Both layers keep, per sequence, a recurrent state S [B, H, d_k, d_v] (a matrix per value head that maps a key to a
value) and the last K - 1 inputs of a short causal convolution over q, k and v: that is all the next token needs,
whatever the length. Each token t updates the state by the gated delta rule

    S <- exp(g_t) S;   S <- S + beta_t k_t (v_t - k_t S)^T;   o_t = q_t S

(keys and queries L2-normalised, queries scaled by d_k^-1/2). Gated DeltaNet decays each head's state by one number
per token; KDA by one number per key channel (g_t [d_k]). A prompt is computed chunk by chunk (CHUNK tokens): within a
chunk the updates are folded into a few matrix products (the UT transform, a triangular solve), and the state is
carried from chunk to chunk; one decoding step is the rule above once.

Shapes add to attn_core's legend: K the convolution's kernel, C its channels (the q, k and v widths of all heads), H_k
and H_v Gated DeltaNet's key and value heads (H_v a multiple of H_k: each key head serves H_v / H_k value heads).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from .build import seed_dense_weights, seeded_generator
from .cache import checked_tokens
from .config import AttentionConfig
from .config_checks import ConfigFieldError, Need
from .hf_fields import (
    bool_field,
    dict_field,
    float_field,
    int_field,
    layer_index,
    layer_types,
    once,
    positive_fields,
    positive_float,
    positive_int,
    require_model_type,
)

CHUNK = 64  # tokens per chunk of the chunked rule, as HF's torch_chunk_gated_delta_rule and FLA's kernels
# A chunked call holds [B, H, chunks, CHUNK, CHUNK] matrices (times d_k for KDA's per-channel decay): a long prompt is
# computed in segments of at most this many of those numbers each, carrying the state between them.
SEGMENT_ELEMENTS = 1 << 25
STATE_DTYPE = torch.float32  # HF keeps the recurrent state in float32 whatever the model's dtype (so do FLA's kernels)

CACHE_FORMULA = "B · (H_v · d_k · d_v · 4 + (K − 1) · C · b), whatever T (float32 state, conv tail in b bytes)"


# --- the state cache ---------------------------------------------------------------------------------------------


class LinearStateCache:
    """What a linear attention layer keeps between calls: the recurrent state and the convolution's tail.

    state [B, H_v, d_k, d_v] in float32 (as HF holds it) and conv [B, C, K - 1] (the last K - 1 convolution inputs, in
    the layer's dtype). HF's cache holds K inputs; the K-th oldest is never read again, so it is not kept here. Both
    tensors exist from the first token on and never grow: nbytes is the same at 10 tokens and at 1M. seq_len counts
    the tokens seen; read_nbytes is what the latest call's last token read (the whole state and tail).
    """

    def __init__(
        self,
        batch_size: int,
        *,
        heads: int,
        key_dim: int,
        value_dim: int,
        conv_channels: int,
        conv_kernel: int,
        dtype: torch.dtype,
    ) -> None:
        self.batch_size, self.conv_channels, self.conv_kernel = batch_size, conv_channels, conv_kernel
        self.state_shape = (batch_size, heads, key_dim, value_dim)
        self.dtype = dtype  # the conv tail's; the state is STATE_DTYPE
        # Allocated at the first token on the device computing it, as HF's cache: an empty cache holds nothing.
        self.state: torch.Tensor | None = None  # [B, H_v, d_k, d_v]
        self.conv: torch.Tensor | None = None  # [B, C, K - 1]
        self.seq_len = 0
        self.read_nbytes = 0

    def window(self, new: torch.Tensor) -> torch.Tensor:
        """new [B, C, L] convolution inputs -> [B, C, K - 1 + L]: the tail held (zeros before the first token, as a
        causal convolution pads) followed by them."""
        if self.conv is None:
            return F.pad(new, (self.conv_kernel - 1, 0))
        return torch.cat((self.conv.to(new.dtype), new), dim=-1)

    def update(self, window: torch.Tensor, state: torch.Tensor, tokens: int) -> None:
        """Keep window's last K - 1 inputs and the state after `tokens` new tokens."""
        tail = window[..., window.shape[-1] - (self.conv_kernel - 1) :]
        if self.conv is None or self.state is None:
            self.conv = tail.to(self.dtype).contiguous()
            self.state = state.to(STATE_DTYPE).contiguous()
        else:  # in place: the cache's tensors keep their storage from step to step
            self.conv.copy_(tail)
            self.state.copy_(state)
        self.seq_len += tokens
        self.read_nbytes = self.nbytes  # the last token read the whole state and the tail

    def after_prefill(self, tokens: int) -> LinearStateCache:
        """This empty cache as a prefill of `tokens` tokens leaves it, on the meta device by its own update (no memory,
        no arithmetic): only the last K - 1 inputs make the tail, so no more of the prompt is drawn."""
        if tokens:
            latest = min(tokens, self.conv_kernel - 1)
            window = self.window(
                torch.empty(self.batch_size, self.conv_channels, latest, device="meta", dtype=self.dtype)
            )
            self.update(window, torch.empty(self.state_shape, device="meta", dtype=STATE_DTYPE), tokens)
        return self

    @property
    def nbytes(self) -> int:
        """Bytes held: the state and the tail (0 before the first token)."""
        if self.state is None or self.conv is None:
            return 0
        return self.state.numel() * self.state.element_size() + self.conv.numel() * self.conv.element_size()

    @property
    def capacity_nbytes(self) -> int:
        """Nothing is preallocated beyond what is held."""
        return self.nbytes

    def shapes(self) -> dict[str, tuple[int, ...]]:
        if self.state is None or self.conv is None:
            return {}  # nothing held before the first token
        return {"state": tuple(self.state.shape), "conv": tuple(self.conv.shape)}


def cache_bytes_formula(cfg: GatedDeltaNetConfig | KimiDeltaConfig, tokens: int, batch: int, element_bytes: int) -> int:
    """CACHE_FORMULA in closed form: B · (H_v · d_k · d_v · 4 + (K − 1) · C · b) once a token is seen, 0 before; the
    state is float32 (4 bytes) whatever element_bytes (the conv tail's) is."""
    if tokens < 0 or batch < 0 or element_bytes <= 0:
        raise ValueError(
            f"tokens={tokens}, batch={batch}, element_bytes={element_bytes}: give counts >= 0 and a size > 0."
        )
    if tokens == 0:
        return 0
    state = cfg.state_heads * cfg.state_key_dim * cfg.state_value_dim * STATE_DTYPE.itemsize
    return batch * (state + (cfg.conv_kernel - 1) * cfg.conv_channels * element_bytes)


# --- the delta rule ----------------------------------------------------------------------------------------------


def l2_normalised(x: torch.Tensor, *, divide: bool = False) -> torch.Tensor:
    """x / sqrt(sum x^2 + 1e-6) along the last axis, as FLA and HF write it (Qwen3-Next multiplies by the rsqrt, Kimi
    divides by the sqrt: the last bits differ)."""
    squares = (x * x).sum(dim=-1, keepdim=True) + 1e-6
    return x / torch.sqrt(squares) if divide else x * torch.rsqrt(squares)


def recurrent_delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, state: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gated delta rule token by token (decoding). q, k [B, H, L, d_k] (normalised, q scaled), v [B, H, L, d_v],
    g [B, H, L] (one decay per head) or [B, H, L, d_k] (per key channel), beta [B, H, L], state [B, H, d_k, d_v] or
    None (zeros); all float32 -> out [B, H, L, d_v], the state after the last token."""
    if state is None:
        state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    per_channel = g.dim() == 4
    outs = []
    for t in range(q.shape[2]):
        decay = g[:, :, t, :, None] if per_channel else g[:, :, t, None, None]  # [B, H, d_k or 1, 1]
        state = state * decay.exp()
        k_t = k[:, :, t : t + 1]  # [B, H, 1, d_k]
        delta = (v[:, :, t : t + 1] - k_t @ state) * beta[:, :, t, None, None]  # [B, H, 1, d_v]
        state = state + k_t.transpose(-1, -2) @ delta
        outs.append(q[:, :, t : t + 1] @ state)
    return torch.cat(outs, dim=2), state


def chunk_delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, state: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """recurrent_delta_rule's numbers, CHUNK tokens at a time; a long input in segments of bounded memory."""
    batch, heads, length, key_dim = k.shape
    per_chunk = batch * heads * CHUNK * CHUNK * (key_dim if g.dim() == 4 else 1)
    segment = CHUNK * max(1, SEGMENT_ELEMENTS // per_chunk)
    if length <= segment:
        return _chunks(q, k, v, g, beta, state)
    outs = []
    for start in range(0, length, segment):
        part = slice(start, start + segment)
        out, state = _chunks(q[:, :, part], k[:, :, part], v[:, :, part], g[:, :, part], beta[:, :, part], state)
        outs.append(out)
    assert state is not None
    return torch.cat(outs, dim=2), state


def _chunks(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, state: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    length = q.shape[2]
    pad = -length % CHUNK  # padded tokens have k = 0 and beta = 0, g = 0: they leave the state as it is
    per_channel = g.dim() == 4
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        g = F.pad(g, (0, 0, 0, pad) if per_channel else (0, pad))
        beta = F.pad(beta, (0, pad))
    # [B, H, N, CHUNK, ...]: N chunks
    q, k, v = (rearrange(t, "b h (n c) d -> b h n c d", c=CHUNK) for t in (q, k, v))
    beta = rearrange(beta, "b h (n c) -> b h n c 1", c=CHUNK)
    if per_channel:
        cum = rearrange(g, "b h (n c) d -> b h n c d", c=CHUNK).cumsum(dim=3)  # log decay since the chunk's start
    else:
        cum = rearrange(g, "b h (n c) -> b h n c 1", c=CHUNK).cumsum(dim=3)
    k_beta, v_beta = k * beta, v * beta
    if per_channel:  # one decay per key channel: sum_c x_i[c] k_j[c] exp(cum_i[c] - cum_j[c]) is no plain product
        qk, kk = _channel_decayed_products(q, k_beta, k, cum)
    else:  # decay[i, j] = exp(cum_i - cum_j) for j <= i (what token j's update has decayed by at token i), 0 above
        above = torch.ones(CHUNK, CHUNK, dtype=torch.bool, device=q.device).triu(1)
        c = cum[..., 0]
        pairwise = (c.unsqueeze(4) - c.unsqueeze(3)).masked_fill_(above, float("-inf")).exp_()  # [B, H, N, c, c]
        kk = (k_beta @ k.transpose(-1, -2)).mul_(pairwise)
        qk = (q @ k.transpose(-1, -2)).mul_(pairwise)
    # UT transform: (I + strictly lower part of kk)^-1 applied to the chunk's values and decayed keys turns its CHUNK
    # sequential updates into products (the diagonal is ignored: unitriangular).
    values = torch.linalg.solve_triangular(kk, v_beta, upper=False, unitriangular=True)
    k_cumdecay = torch.linalg.solve_triangular(kk, k_beta * cum.exp(), upper=False, unitriangular=True)
    q_decayed = q * cum.exp()
    k_to_end = k * (cum[:, :, :, -1:] - cum).exp()  # each key decayed to the chunk's end
    chunk_decay = cum[:, :, :, -1].exp().unsqueeze(-1)  # [B, H, N, d_k or 1, 1]
    if state is None:
        state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    out = torch.empty_like(values)
    for n in range(q.shape[2]):
        v_new = values[:, :, n] - k_cumdecay[:, :, n] @ state  # the part of the values the state did not predict
        out[:, :, n] = q_decayed[:, :, n] @ state + qk[:, :, n] @ v_new
        state = state * chunk_decay[:, :, n] + k_to_end[:, :, n].transpose(-1, -2) @ v_new
    return rearrange(out, "b h n c d -> b h (n c) d")[:, :, :length], state


SUB_CHUNK = 8  # KDA's decayed products: blocks of a chunk with one reference point each (8: fastest here)


def _channel_decayed_products(
    q: torch.Tensor, k_beta: torch.Tensor, k: torch.Tensor, cum: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k_beta, k, cum [B, H, N, c, d_k] (cum: log decay since the chunk's start, per channel, non-increasing) ->
    qk, kk [B, H, N, c, c]: x_i . (k_j * exp(cum_i - cum_j)) for j <= i, 0 above.

    Written out, that is a [c, c, d_k] tensor per chunk (HF's way). exp(cum_i - cum_j) = exp(cum_i - cum_r) *
    exp(cum_r - cum_j) for any r, and with r the first token of i's block of SUB_CHUNK tokens and j in an earlier
    block both factors are <= 1 (no overflow, however strong the decay): those blocks become matrix products. Only
    the diagonal blocks, j and i in the same block, are written out, SUB_CHUNK x SUB_CHUNK at a time.
    """
    *lead, chunk, width = q.shape
    blocks = chunk // SUB_CHUNK
    ref = cum[..., ::SUB_CHUNK, :]  # [B, H, N, blocks, d_k]: cum at each block's first token
    position = torch.arange(chunk, device=q.device)
    before = position[None, :] < position[::SUB_CHUNK, None]  # [blocks, c]: token j precedes block I
    to_ref = (ref.unsqueeze(-2) - cum.unsqueeze(-3)).masked_fill_(~before[..., None], float("-inf")).exp_()
    right = k.unsqueeze(-3) * to_ref  # [B, H, N, blocks, c, d_k]: k_j decayed to block I's start (0 from it on)
    from_ref = (cum - ref.repeat_interleave(SUB_CHUNK, dim=-2)).exp_()  # [B, H, N, c, d_k]
    products = []
    within_mask = torch.ones(SUB_CHUNK, SUB_CHUNK, dtype=torch.bool, device=q.device).triu(1)
    block_cum = cum.view(*lead, blocks, SUB_CHUNK, width)
    within = (block_cum.unsqueeze(-2) - block_cum.unsqueeze(-3)).masked_fill_(within_mask[..., None], float("-inf"))
    within = within.exp_()  # [B, H, N, blocks, s, s, d_k]: exp(cum_i - cum_j) inside a block, 0 above
    k_blocks = k.view(*lead, blocks, 1, SUB_CHUNK, width)
    for x in (q, k_beta):
        left = (x * from_ref).view(*lead, blocks, SUB_CHUNK, width)
        full = (left @ right.transpose(-1, -2)).view(*lead, chunk, chunk)  # earlier blocks' part
        diagonal = (x.view(*lead, blocks, SUB_CHUNK, 1, width) * within * k_blocks).sum(-1)  # [.., blocks, s, s]
        # the diagonal blocks of full, as a view: [.., s, s, blocks]
        torch.diagonal(full.view(*lead, blocks, SUB_CHUNK, blocks, SUB_CHUNK), dim1=-4, dim2=-2).copy_(
            diagonal.movedim(-3, -1)
        )
        products.append(full)
    return products[0], products[1]


def delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, state: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token by the recurrence, more by chunks (the same numbers; chunks batch a prompt's work)."""
    rule = recurrent_delta_rule if q.shape[2] == 1 else chunk_delta_rule
    return rule(q, k, v, g, beta, state)


def causal_conv(window: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """window [B, C, K - 1 + L] (the tail, then L new inputs), weight [C, 1, K], bias [C] or None -> silu(conv)
    [B, C, L]: each channel its own K-tap filter over itself, causal by construction (no padding: the tail is the left
    context)."""
    if window.shape[-1] == weight.shape[-1]:  # one token: a dot product per channel, no convolution call
        out = (window * weight[:, 0]).sum(-1, keepdim=True)
        return F.silu(out if bias is None else out + bias[:, None])
    return F.silu(F.conv1d(window, weight, bias, groups=window.shape[1]))


class GatedRMSNorm(nn.Module):
    """RMS norm over a head's d_v values, scaled by weight, times activation(gate): computed in float32, as HF's
    Qwen3NextRMSNormGated (silu) and KimiLinearRMSNormGated (sigmoid)."""

    def __init__(
        self,
        dim: int,
        eps: float,
        activation: Callable[[torch.Tensor], torch.Tensor],
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))
        self.eps, self.activation = eps, activation

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        normed = F.rms_norm(x.float(), (x.shape[-1],), self.weight.float(), self.eps)
        return (normed * self.activation(gate.float())).to(x.dtype)


# --- configs -----------------------------------------------------------------------------------------------------


def require_silu(hf: Mapping[str, Any], model: str) -> None:
    act = hf.get("hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"hidden_act={act!r}: the {model} linear layers are built with silu (the published models').")


HYBRID_LAYER_TYPES = ("linear_attention", "full_attention")


def qwen_layer_types(hf: Mapping[str, Any]) -> Sequence[str]:
    """ "linear_attention" or "full_attention" per layer: layer_types as given (transformers' to_dict), else every
    full_attention_interval-th layer full (config.json as published; 4 when absent, as transformers defaults)."""
    interval = int_field(hf, "full_attention_interval", 4)
    return layer_types(hf, HYBRID_LAYER_TYPES, lambda i: "linear_attention" if (i + 1) % interval else "full_attention")


# Qwen's hybrids: Qwen3-Next, and Qwen3.5 (dense and MoE) whose config.json nests the text model's fields in
# text_config. Same layers; Qwen3.5's Gated DeltaNet projects q, k, v, z, b and a with four separate matrices.
QWEN_HYBRIDS = ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")


def qwen_text_config(hf: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text model's fields of a Qwen hybrid's config: text_config for qwen3_5 and qwen3_5_moe, else hf itself."""
    if not isinstance(hf, Mapping):
        raise ValueError(f"Give the model's config.json as a dict, got {type(hf).__name__}.")
    model_type = hf.get("model_type")
    if model_type not in QWEN_HYBRIDS:
        raise ValueError(f"model_type={model_type!r}: these layers read {', '.join(QWEN_HYBRIDS)} configs.")
    if model_type in ("qwen3_5", "qwen3_5_moe"):
        text = hf.get("text_config")
        if not isinstance(text, Mapping):
            raise ValueError(f"The {model_type} config has no text_config dict: the text model's fields live there.")
        return text
    return hf


def kimi_linear_attn_config(hf: Mapping[str, Any]) -> Mapping[str, Any]:
    """The checkpoint's linear_attn_config sub-dict ({} when absent, as transformers' to_dict may leave it)."""
    return dict_field(hf, "linear_attn_config")


def kimi_layer_types(hf: Mapping[str, Any]) -> Sequence[str]:
    """transformers' precedence: layer_types, else linear_attn_config's full_attn_layers and kda_layers (1-indexed in
    the checkpoint; each layer in one list only), else a full layer every 4th from layer 4 (0-indexed: i and
    i % 4 == 0)."""
    n_layers = int_field(hf, "num_hidden_layers", model="kimi_linear")
    if hf.get("layer_types") is not None:
        return layer_types(hf, HYBRID_LAYER_TYPES, str)
    sub = kimi_linear_attn_config(hf)
    if "full_attn_layers" in sub and "kda_layers" in sub:
        return once(hf, "kimi_layer_types", lambda: _kimi_listed(sub, n_layers))
    return ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n_layers)]


def _kimi_listed(sub: Mapping[str, Any], n_layers: int) -> Sequence[str]:
    """Kimi's layer kinds from linear_attn_config's full_attn_layers and kda_layers."""
    full, kda = (_layer_numbers(sub, key, n_layers) for key in ("full_attn_layers", "kda_layers"))
    if both := full & kda:
        raise ConfigFieldError(
            "linear_attn_config.kda_layers",
            sub["kda_layers"],
            Need("layer_once", other="linear_attn_config.full_attn_layers", layer=min(both)),
        )
    if len(full) + len(kda) < n_layers:
        missing = sorted(set(range(1, n_layers + 1)) - full - kda)
        raise ValueError(
            f"linear_attn_config lists layers {missing[:8]}{' ...' if len(missing) > 8 else ''} in neither "
            "full_attn_layers nor kda_layers: name each once."
        )
    return _Numbered(n_layers, full)


def _layer_numbers(sub: Mapping[str, Any], key: str, n_layers: int) -> set[int]:
    """linear_attn_config[key]: a list of layer numbers 1..n_layers, each once."""
    name, given = f"linear_attn_config.{key}", sub[key]
    if not isinstance(given, list | tuple):
        raise ConfigFieldError(name, given, Need("list"))
    if not set(map(type, given)) <= {int}:  # 4.0, true, "4": not a layer's number
        raise ConfigFieldError(name, next(n for n in given if type(n) is not int), Need("layer_in", 1, n_layers))
    numbers = set(given)
    if numbers and not 1 <= min(numbers) <= max(numbers) <= n_layers:
        wrong = next(n for n in given if not 1 <= n <= n_layers)
        raise ConfigFieldError(name, wrong, Need("layer_in", 1, n_layers))
    if len(numbers) < len(given):
        repeated = next(n for n in given if given.count(n) > 1)
        raise ConfigFieldError(name, given, Need("layer_once", other=name, layer=repeated))
    return numbers


class _Numbered(Sequence[str]):
    """Kimi's layer kinds from its full layers' numbers (1-indexed), a layer at a time."""

    def __init__(self, n_layers: int, full: set[int]) -> None:
        self.n_layers, self.full = n_layers, full

    def __len__(self) -> int:
        return self.n_layers

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(self.n_layers)[i]]
        if not 0 <= i < self.n_layers:
            raise IndexError(i)
        return "full_attention" if i + 1 in self.full else "linear_attention"


@dataclass(frozen=True)
class GatedDeltaNetConfig:
    """A Gated DeltaNet layer's shape (the linear layers of Qwen3-Next and Qwen3.5). HF's names: hidden_size,
    linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim,
    rms_norm_eps. fused_projections: Qwen3-Next's in_proj_qkvz and in_proj_ba (rows grouped per key head); False for
    Qwen3.5's in_proj_qkv, in_proj_z, in_proj_b and in_proj_a."""

    d_model: int
    n_key_heads: int
    n_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4
    norm_eps: float = 1e-6
    fused_projections: bool = True

    def __post_init__(self) -> None:
        positive_fields(
            self, "d_model", "n_key_heads", "n_value_heads", "key_head_dim", "value_head_dim", "conv_kernel"
        )
        positive_float("norm_eps", self.norm_eps)
        if self.n_value_heads % self.n_key_heads:
            raise ValueError(
                f"n_value_heads={self.n_value_heads} is not a multiple of n_key_heads={self.n_key_heads}: each key "
                "head serves a whole number of value heads."
            )

    @property
    def key_dim(self) -> int:
        return self.n_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_value_heads * self.value_head_dim

    @property
    def conv_channels(self) -> int:
        """C: q, k and v of every head go through the convolution."""
        return 2 * self.key_dim + self.value_dim

    @property
    def state_heads(self) -> int:
        return self.n_value_heads

    @property
    def state_key_dim(self) -> int:
        return self.key_head_dim

    @property
    def state_value_dim(self) -> int:
        return self.value_head_dim

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> GatedDeltaNetConfig:
        """Layer layer_idx of a Qwen3-Next or Qwen3.5 config.json (or transformers' to_dict()); it must be a linear
        layer."""
        text = qwen_text_config(hf)
        kind = qwen_layer_types(text)[layer_index(text, layer_idx)]
        if kind != "linear_attention":
            raise ValueError(
                f"Layer {layer_idx} is {kind!r} in layer_types: Gated DeltaNet builds linear_attention layers."
            )
        model = str(hf["model_type"])
        require_silu(text, model)
        count = lambda key, default=None: int_field(text, key, default, model=model)  # noqa: E731
        return cls(
            d_model=count("hidden_size"),
            n_key_heads=count("linear_num_key_heads"),
            n_value_heads=count("linear_num_value_heads"),
            key_head_dim=count("linear_key_head_dim"),
            value_head_dim=count("linear_value_head_dim"),
            conv_kernel=count("linear_conv_kernel_dim", 4),
            norm_eps=float_field(text, "rms_norm_eps", 1e-6, model=model),
            fused_projections=model == "qwen3_next",
        )


@dataclass(frozen=True)
class KimiDeltaConfig:
    """A Kimi Delta Attention layer's shape (Kimi Linear's linear layers): as many key as value heads, d_k = d_v.
    HF's names: hidden_size, linear_num_heads and linear_head_dim (or linear_attn_config's num_heads and head_dim),
    linear_conv_kernel_dim (or short_conv_kernel_size), rms_norm_eps."""

    d_model: int
    n_heads: int
    head_dim: int
    conv_kernel: int = 4
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        positive_fields(self, "d_model", "n_heads", "head_dim", "conv_kernel")
        positive_float("norm_eps", self.norm_eps)

    @property
    def inner_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        return 3 * self.inner_dim

    @property
    def state_heads(self) -> int:
        return self.n_heads

    @property
    def state_key_dim(self) -> int:
        return self.head_dim

    @property
    def state_value_dim(self) -> int:
        return self.head_dim

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> KimiDeltaConfig:
        """Layer layer_idx of a kimi_linear config.json (or transformers' to_dict()); it must be a KDA layer."""
        require_model_type(hf, "kimi_linear")
        kind = kimi_layer_types(hf)[layer_index(hf, layer_idx)]
        if kind != "linear_attention":
            raise ValueError(f"Layer {layer_idx} is {kind!r}: KimiDeltaAttention builds the linear_attention layers.")
        require_silu(hf, "kimi_linear")
        sub = kimi_linear_attn_config(hf)  # the checkpoint's sub-dict wins, as in transformers
        count = lambda key, default=None: int_field(hf, key, default, model="kimi_linear")  # noqa: E731
        nested = lambda key, flat, default: (  # noqa: E731
            int_field(sub, key, model="kimi_linear", name=f"linear_attn_config.{key}")
            if key in sub
            else count(flat, default)
        )
        return cls(
            d_model=count("hidden_size"),
            n_heads=nested("num_heads", "linear_num_heads", 32),
            head_dim=nested("head_dim", "linear_head_dim", 128),
            conv_kernel=nested("short_conv_kernel_size", "linear_conv_kernel_dim", 4),
            norm_eps=float_field(hf, "rms_norm_eps", 1e-5, model="kimi_linear"),
        )


def kimi_attention_config(hf: Mapping[str, Any], layer_idx: int) -> AttentionConfig:
    """Kimi Linear's full-attention layer layer_idx as attn_core's MLA (MultiHeadLatentAttention): MLA without RoPE
    (NoPE: the "rope" part of the key is shared but never rotated), latent norms at eps 1e-6 (HF builds them without
    rms_norm_eps), attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj."""
    require_model_type(hf, "kimi_linear")
    kind = kimi_layer_types(hf)[layer_index(hf, layer_idx)]
    if kind != "full_attention":
        raise ValueError(f"Layer {layer_idx} is {kind!r}: the MLA layers are the full_attention ones.")
    get = lambda key: int_field(hf, key, model="kimi_linear")  # noqa: E731
    n_heads = get("num_attention_heads")
    kv_heads = hf.get("num_key_value_heads")
    if kv_heads not in (None, n_heads):
        raise ValueError(
            f"num_key_value_heads={kv_heads} differs from num_attention_heads={n_heads}: Kimi's MLA up-projects a key "
            "and value per query head (transformers' module fails on KV groups too)."
        )
    bias = bool_field(hf, "attention_bias", False)
    v_head_dim = get("v_head_dim")
    return AttentionConfig(
        "mla",
        d_model=get("hidden_size"),
        n_heads=n_heads,
        head_dim=v_head_dim,  # MLA's widths are all given: head_dim only sizes the "as much as MHA" comparison
        kv_lora_rank=get("kv_lora_rank"),
        q_lora_rank=None if hf.get("q_lora_rank") is None else get("q_lora_rank"),
        qk_nope_head_dim=get("qk_nope_head_dim"),
        qk_rope_head_dim=get("qk_rope_head_dim"),
        v_head_dim=v_head_dim,
        rope=False,
        bias=bias,
        o_bias=bias,
        norm_eps=1e-6,
    )


# --- the layers --------------------------------------------------------------------------------------------------


ConfigT = TypeVar("ConfigT", "GatedDeltaNetConfig", "KimiDeltaConfig")


class _LinearLayer(nn.Module, Generic[ConfigT]):
    """What both linear layers share: the convolution, the state cache, cache_after and seeded weights."""

    cfg: ConfigT
    conv1d: nn.Conv1d

    def new_cache(self, batch_size: int = 1) -> LinearStateCache:
        return self._cache(batch_size, self.conv1d.weight.dtype)

    def _cache(self, batch_size: int, dtype: torch.dtype) -> LinearStateCache:
        cfg = self.cfg
        return LinearStateCache(
            batch_size,
            heads=cfg.state_heads,
            key_dim=cfg.state_key_dim,
            value_dim=cfg.state_value_dim,
            conv_channels=cfg.conv_channels,
            conv_kernel=cfg.conv_kernel,
            dtype=dtype,
        )

    def cache_after(self, tokens: int, batch_size: int = 1, dtype: torch.dtype | None = None) -> LinearStateCache:
        """What the cache holds after a prefill of `tokens` tokens, built on the meta device by the cache's own update
        (no memory, no arithmetic): a state and a tail whatever the count."""
        checked_tokens(tokens)
        positive_int("batch_size", batch_size)
        return self._cache(batch_size, dtype or self.conv1d.weight.dtype).after_prefill(tokens)

    def _convolved(self, mixed: torch.Tensor, cache: LinearStateCache | None) -> tuple[torch.Tensor, torch.Tensor]:
        """mixed [B, L, C] -> the convolution's output [B, L, C] and the window it read [B, C, K - 1 + L]."""
        new = mixed.transpose(1, 2)
        if cache is not None and cache.batch_size != new.shape[0]:
            raise ValueError(
                f"The cache holds {cache.batch_size} sequences but x has {new.shape[0]}: give new_cache(batch_size=...) "
                "the batch you decode."
            )
        window = cache.window(new) if cache is not None else F.pad(new, (self.cfg.conv_kernel - 1, 0))
        return causal_conv(window, self.conv1d.weight).transpose(1, 2), window

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """Every parameter from its own stream seeded_generator(f"{seed}/{name}"), drawn in float32 on the CPU and
        copied: Linear and conv weights U(-1/sqrt(fan_in), +) as torch's defaults (a depthwise conv's fan_in is K),
        norm weights ones, and the decay parameters as HF's _init_weights draws them (see _init_design)."""
        seed_dense_weights(self, seed)
        for name, param in self.named_parameters():
            module_name = name.rpartition(".")[0]
            module = self.get_submodule(module_name) if module_name else self
            if isinstance(module, nn.Linear | nn.Conv1d):
                continue
            drawn = torch.empty(param.shape)
            if isinstance(module, GatedRMSNorm):
                drawn.fill_(1.0)
            else:
                self._init_design(name, drawn, seeded_generator(f"{seed}/{name}"))
            param.copy_(drawn)

    def _init_design(self, name: str, drawn: torch.Tensor, generator: torch.Generator) -> None:
        raise NotImplementedError


class GatedDeltaNet(_LinearLayer[GatedDeltaNetConfig]):
    """Qwen3-Next's and Qwen3.5's linear attention layer (HF's Qwen3NextGatedDeltaNet and Qwen3_5GatedDeltaNet, same
    parameter names).

    Each token gets queries and keys (H_k heads), values and output gates z (H_v heads), update strengths b
    (beta = sigmoid(b)) and decay inputs a (g = -exp(A_log) softplus(a + dt_bias), one decay per value head and
    token). Qwen3-Next's in_proj_qkvz holds, per key head, its q, k, and its H_v / H_k value heads' v and z, and
    in_proj_ba their b and a; Qwen3.5 has one matrix each for q|k|v, z, b and a. q, k and v pass a causal depthwise convolution (K taps, silu); the gated
    delta rule's output per value head is RMS-normalised and gated by silu(z), then out_proj.
    """

    def __init__(
        self, cfg: GatedDeltaNetConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.cfg = cfg
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        channels = cfg.conv_channels
        self.conv1d = nn.Conv1d(channels, channels, cfg.conv_kernel, groups=channels, bias=False, **kw)
        if cfg.fused_projections:
            self.in_proj_qkvz = nn.Linear(cfg.d_model, 2 * cfg.key_dim + 2 * cfg.value_dim, bias=False, **kw)
            self.in_proj_ba = nn.Linear(cfg.d_model, 2 * cfg.n_value_heads, bias=False, **kw)
        else:
            self.in_proj_qkv = nn.Linear(cfg.d_model, channels, bias=False, **kw)
            self.in_proj_z = nn.Linear(cfg.d_model, cfg.value_dim, bias=False, **kw)
            self.in_proj_b = nn.Linear(cfg.d_model, cfg.n_value_heads, bias=False, **kw)
            self.in_proj_a = nn.Linear(cfg.d_model, cfg.n_value_heads, bias=False, **kw)
        self.dt_bias = nn.Parameter(torch.ones(cfg.n_value_heads, **kw))
        self.A_log = nn.Parameter(torch.zeros(cfg.n_value_heads, **kw))
        self.norm = GatedRMSNorm(cfg.value_head_dim, cfg.norm_eps, F.silu, **kw)
        self.out_proj = nn.Linear(cfg.value_dim, cfg.d_model, bias=False, **kw)

    def _init_design(self, name: str, drawn: torch.Tensor, generator: torch.Generator) -> None:
        # HF's _init_weights: dt_bias ones, A = U(0.01, 16) (kept away from 0 so log A is finite), stored as log A
        if name == "dt_bias":
            drawn.fill_(1.0)
        elif name == "A_log":
            drawn.uniform_(0.01, 16.0, generator=generator).log_()
        else:
            raise ValueError(f"{name}: no initialisation known.")

    def _projected(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [B, L, d_model] -> q|k|v [B, L, C] (all heads' queries, then keys, then values), z [B, L, H_v, d_v],
        b and a [B, L, H_v]."""
        cfg = self.cfg
        batch, length, _ = x.shape
        if not cfg.fused_projections:
            z = self.in_proj_z(x).view(batch, length, cfg.n_value_heads, cfg.value_head_dim)
            return self.in_proj_qkv(x), z, self.in_proj_b(x), self.in_proj_a(x)
        per_key_head = cfg.n_value_heads // cfg.n_key_heads
        widths = [
            cfg.key_head_dim,
            cfg.key_head_dim,
            per_key_head * cfg.value_head_dim,
            per_key_head * cfg.value_head_dim,
        ]
        q, k, v, z = self.in_proj_qkvz(x).view(batch, length, cfg.n_key_heads, -1).split(widths, dim=-1)
        b, a = self.in_proj_ba(x).view(batch, length, cfg.n_key_heads, -1).split(per_key_head, dim=-1)
        mixed = torch.cat([t.reshape(batch, length, -1) for t in (q, k, v)], dim=-1)
        z = z.reshape(batch, length, cfg.n_value_heads, cfg.value_head_dim)
        return mixed, z, b.reshape(batch, length, -1), a.reshape(batch, length, -1)

    def forward(
        self, x: torch.Tensor, *, cache: LinearStateCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], None (a linear layer has no attention weights to return)."""
        cfg = self.cfg
        batch, length, _ = x.shape
        per_key_head = cfg.n_value_heads // cfg.n_key_heads
        mixed, z, b, a = self._projected(x)
        mixed, window = self._convolved(mixed, cache)
        q, k, v = mixed.float().split([cfg.key_dim, cfg.key_dim, cfg.value_dim], dim=-1)
        # [B, H_v, L, d]: each key head's query and key serve its H_v / H_k value heads
        q = rearrange(q, "b l (h d) -> b h l d", d=cfg.key_head_dim).repeat_interleave(per_key_head, dim=1)
        k = rearrange(k, "b l (h d) -> b h l d", d=cfg.key_head_dim).repeat_interleave(per_key_head, dim=1)
        v = rearrange(v, "b l (h d) -> b h l d", d=cfg.value_head_dim)
        q = l2_normalised(q) * cfg.key_head_dim**-0.5
        k = l2_normalised(k)
        beta = rearrange(b, "b l h -> b h l").float().sigmoid()
        decay_in = rearrange(a, "b l h -> b h l").float() + self.dt_bias.float()[:, None]
        g = -self.A_log.float().exp()[:, None] * F.softplus(decay_in)  # [B, H_v, L], log decay per token
        out, state = delta_rule(q, k, v, g, beta, cache.state if cache is not None else None)
        if cache is not None:
            cache.update(window, state, length)
        out = self.norm(rearrange(out, "b h l d -> b l h d").to(x.dtype), z)
        return self.out_proj(out.reshape(batch, length, cfg.value_dim)), None


class KimiForgetGate(nn.Module):
    """KDA's per-channel decay: g = -exp(A_log) softplus(f_b_proj(f_a_proj(x)) + dt_bias), [B, L, H, d_k] (HF's
    KimiLinearForgetGate, same names)."""

    def __init__(
        self, cfg: KimiDeltaConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        self.head_dim = cfg.head_dim
        self.f_a_proj = nn.Linear(cfg.d_model, cfg.head_dim, bias=False, **kw)
        self.f_b_proj = nn.Linear(cfg.head_dim, cfg.inner_dim, bias=False, **kw)
        self.dt_bias = nn.Parameter(torch.zeros(cfg.inner_dim, **kw))
        self.A_log = nn.Parameter(torch.zeros(1, 1, cfg.n_heads, 1, **kw))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.f_b_proj(self.f_a_proj(x)).float() + self.dt_bias.float()
        gate = gate.view(*x.shape[:2], -1, self.head_dim)
        return -self.A_log.float().exp() * F.softplus(gate)  # softplus is linear above 20, as HF's bound


class KimiDeltaAttention(_LinearLayer[KimiDeltaConfig]):
    """Kimi Linear's KDA layer (HF's KimiLinearDeltaAttention, same parameter names): a gated delta rule whose decay
    is per key channel (forget_gate), with separate q/k/v projections, beta = sigmoid(b_proj(x)), and an output gated
    by sigmoid(g_b_proj(g_a_proj(x))) after the RMS norm (o_norm)."""

    def __init__(
        self, cfg: KimiDeltaConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.cfg = cfg
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        inner = cfg.inner_dim
        self.q_proj = nn.Linear(cfg.d_model, inner, bias=False, **kw)
        self.k_proj = nn.Linear(cfg.d_model, inner, bias=False, **kw)
        self.v_proj = nn.Linear(cfg.d_model, inner, bias=False, **kw)
        channels = cfg.conv_channels
        self.conv1d = nn.Conv1d(channels, channels, cfg.conv_kernel, groups=channels, bias=False, **kw)
        self.forget_gate = KimiForgetGate(cfg, **kw)
        self.b_proj = nn.Linear(cfg.d_model, cfg.n_heads, bias=False, **kw)
        self.g_a_proj = nn.Linear(cfg.d_model, cfg.head_dim, bias=False, **kw)
        self.g_b_proj = nn.Linear(cfg.head_dim, inner, bias=False, **kw)
        self.o_norm = GatedRMSNorm(cfg.head_dim, cfg.norm_eps, torch.sigmoid, **kw)
        self.o_proj = nn.Linear(inner, cfg.d_model, bias=False, **kw)

    def _init_design(self, name: str, drawn: torch.Tensor, generator: torch.Generator) -> None:
        # HF's _init_weights (FLA's): A = U(1, 16) stored as log A; dt = exp(U(log 1e-3, log 1e-1)) clamped at 1e-4,
        # stored as softplus^-1(dt) so that softplus(dt_bias) = dt
        if name == "forget_gate.A_log":
            drawn.uniform_(1.0, 16.0, generator=generator).log_()
        elif name == "forget_gate.dt_bias":
            dt = drawn.uniform_(math.log(1e-3), math.log(1e-1), generator=generator).exp().clamp_min(1e-4)
            drawn.copy_(dt + torch.log(-torch.expm1(-dt)))
        else:
            raise ValueError(f"{name}: no initialisation known.")

    def forward(
        self, x: torch.Tensor, *, cache: LinearStateCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], None (a linear layer has no attention weights to return)."""
        cfg = self.cfg
        batch, length, _ = x.shape
        mixed = torch.cat((self.q_proj(x), self.k_proj(x), self.v_proj(x)), dim=-1)  # [B, L, C]
        mixed, window = self._convolved(mixed, cache)
        q, k, v = (rearrange(t, "b l (h d) -> b h l d", d=cfg.head_dim) for t in mixed.float().split(cfg.inner_dim, -1))
        q = l2_normalised(q, divide=True) * cfg.head_dim**-0.5
        k = l2_normalised(k, divide=True)
        g = rearrange(self.forget_gate(x), "b l h d -> b h l d")
        beta = rearrange(self.b_proj(x).float().sigmoid(), "b l h -> b h l")
        out, state = delta_rule(q, k, v, g, beta, cache.state if cache is not None else None)
        if cache is not None:
            cache.update(window, state, length)
        gate = self.g_b_proj(self.g_a_proj(x)).view(batch, length, -1, cfg.head_dim)
        out = self.o_norm(rearrange(out, "b h l d -> b l h d").to(x.dtype), gate)
        return self.o_proj(out.reshape(batch, length, cfg.inner_dim)), None
