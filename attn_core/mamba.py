"""Mamba-2's mixer, the state-space layer of NVIDIA's Nemotron-H hybrids (Nemotron-H, Nemotron 3 Nano) and IBM's
Granite 4.0-H, as HF transformers 5.23 writes it (NemotronHMamba2Mixer, GraniteMoeHybridMambaLayer: same parameter
names, same numbers).

Per sequence the layer keeps a state h [B, H, P, N] (a P x N matrix per head) and the last K - 1 inputs of a short
causal convolution over x, B and C: that is all the next token needs, whatever the length. For each token t, with
x_t [H, P], B_t and C_t [N] per group of heads, and one step size per head dt_t = softplus(dt_raw_t + dt_bias):

    h <- exp(dt_t A) h + dt_t x_t B_t^T;   y_t = h C_t + D x_t;   out = out_proj(norm(y * silu(z)))

(A = -exp(A_log) < 0: the state decays by exp(dt A) per token.) A prompt is computed chunk by chunk (Mamba-2's state
space duality, HF's torch path): within a chunk the outputs are a masked product, like attention scores C_i . B_j
decayed from j to i, and the state is carried from chunk to chunk; one decoding step is the rule above once.

Shapes add to attn_core's legend: H Mamba heads (mamba_num_heads), P a head's width (mamba_head_dim), N the state
size (ssm_state_size), n_g groups of heads sharing B and C (n_groups), K the convolution's kernel, C its channels
(x, B and C: H · P + 2 · n_g · N), Q the scan's chunk (chunk_size).

The hybrids around it name each layer: Nemotron-H's hybrid_override_pattern (M Mamba-2, * attention, - MLP, E mixture
of experts) or layers_block_type; Granite 4.0-H's layer_types. Their attention layers are plain grouped layers without
RoPE; MLP and MoE layers mix no tokens and hold no cache (FeedForwardBlock: 0 bytes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from .build import seed_dense_weights, seeded_generator
from .cache import checked_tokens
from .config import AttentionConfig, GroupedVariant
from .hf_fields import (
    bool_field,
    float_field,
    int_field,
    layer_index,
    once,
    positive_fields,
    positive_float,
    positive_int,
    rope_settings,
)
from .linear import STATE_DTYPE, LinearStateCache, causal_conv
from .options import AttentionOptions
from .rope import RopeScaling

# A chunked call holds [B, chunks, Q, Q, H] scores: a long prompt is computed in segments of at most this many of
# them each, carrying the state between segments.
SEGMENT_ELEMENTS = 1 << 25

# More numbers than this in one weight or one sequence's state is a typo, not a model (Nano's largest: 27.7M): refused
# before torch is asked for a tensor whose size overflows.
MAX_ELEMENTS = 1 << 40

CACHE_FORMULA = "B · (H · P · N · 4 + (K − 1) · C · b), whatever T (float32 SSM state, conv tail in b bytes)"


# --- the layer's shape ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mamba2Config:
    """A Mamba-2 mixer's shape. dt_limit: the step sizes' clamp in the chunked scan (Nemotron-H: time_step_min and no
    upper bound; Granite: time_step_limit). HF's decoding step applies no clamp, and neither does ours."""

    d_model: int
    n_heads: int
    head_dim: int
    state_size: int
    n_groups: int = 1
    conv_kernel: int = 4
    chunk_size: int = 128
    conv_bias: bool = True
    proj_bias: bool = False
    norm_eps: float = 1e-5
    dt_limit: tuple[float, float] = (0.0, math.inf)

    def __post_init__(self) -> None:
        positive_fields(self, "d_model", "n_heads", "head_dim", "state_size", "n_groups", "conv_kernel", "chunk_size")
        positive_float("norm_eps", self.norm_eps)
        if self.n_heads % self.n_groups:
            raise ValueError(
                f"n_heads={self.n_heads} is not a multiple of n_groups={self.n_groups}: each group of heads shares "
                "one B and one C."
            )
        sizes = {
            "the state (n_heads · head_dim · state_size)": self.inner_dim * self.state_size,
            "in_proj (d_model · (2 · n_heads · head_dim + 2 · n_groups · state_size + n_heads))": self.d_model
            * (self.inner_dim + self.conv_channels + self.n_heads),
            "conv1d (channels · conv_kernel)": self.conv_channels * self.conv_kernel,
        }
        for what, count in sizes.items():
            if count > MAX_ELEMENTS:
                raise ValueError(f"{what} would hold {count:.3g} numbers: check mamba_num_heads, its widths and sizes.")
        low, high = self.dt_limit
        if not 0.0 <= low < high:
            raise ValueError(f"dt_limit={self.dt_limit!r}: give a lower bound >= 0 below the upper one.")

    @property
    def inner_dim(self) -> int:
        """H · P: the width of x, z and y."""
        return self.n_heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """C: x, B and C of every head and group go through the convolution."""
        return self.inner_dim + 2 * self.n_groups * self.state_size

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> Mamba2Config:
        """Layer layer_idx of a nemotron_h or granitemoehybrid config.json (or transformers' to_dict()); it must be a
        Mamba-2 layer."""
        kind = hybrid_layer_types(hf)[layer_index(hf, layer_idx)]
        if kind != "linear_attention":
            raise ValueError(
                f"Layer {layer_idx} is {kind!r}: Mamba2Mixer builds the Mamba-2 (linear_attention) layers."
            )
        if hf.get("model_type") == "granitemoehybrid":
            return _granite_mamba(hf)
        return _nemotron_mamba(hf)


def _nemotron_mamba(hf: Mapping[str, Any]) -> Mamba2Config:
    """NemotronHConfig's names and defaults; the projections' bias is use_bias (HF's mixer reads that, not
    mamba_proj_bias)."""
    _require_silu(hf, "mamba_hidden_act")
    count = lambda key, default: int_field(hf, key, default, model="nemotron_h")  # noqa: E731
    return Mamba2Config(
        d_model=int_field(hf, "hidden_size", model="nemotron_h"),
        n_heads=count("mamba_num_heads", 128),
        head_dim=count("mamba_head_dim", 64),
        state_size=count("ssm_state_size", 128),
        n_groups=count("n_groups", 8),
        conv_kernel=count("conv_kernel", 4),
        chunk_size=count("chunk_size", 128),
        conv_bias=bool_field(hf, "use_conv_bias", True),
        proj_bias=bool_field(hf, "use_bias", False),
        norm_eps=float_field(hf, "layer_norm_epsilon", 1e-5, model="nemotron_h"),
        dt_limit=(_step_floor(hf), math.inf),
    )


def _granite_mamba(hf: Mapping[str, Any]) -> Mamba2Config:
    """GraniteMoeHybridConfig's names and defaults: the inner width is mamba_expand · hidden_size, mamba_d_head "auto"
    divides it among the heads."""
    _require_silu(hf, "hidden_act")
    count = lambda key, default: int_field(hf, key, default, model="granitemoehybrid")  # noqa: E731
    d_model, heads = int_field(hf, "hidden_size", model="granitemoehybrid"), count("mamba_n_heads", 128)
    inner = count("mamba_expand", 2) * d_model
    head_dim = inner // heads if hf.get("mamba_d_head", "auto") == "auto" else count("mamba_d_head", None)
    if head_dim * heads != inner:
        raise ValueError(
            f"config field 'mamba_d_head' ({head_dim}) times mamba_n_heads ({heads}) must be mamba_expand · "
            f"hidden_size ({inner})."
        )
    return Mamba2Config(
        d_model=d_model,
        n_heads=heads,
        head_dim=head_dim,
        state_size=count("mamba_d_state", 256),
        n_groups=count("mamba_n_groups", 1),
        conv_kernel=count("mamba_d_conv", 4),
        chunk_size=count("mamba_chunk_size", 256),
        conv_bias=bool_field(hf, "mamba_conv_bias", True),
        proj_bias=bool_field(hf, "mamba_proj_bias", False),
        norm_eps=float_field(hf, "rms_norm_eps", 1e-6, model="granitemoehybrid"),
        dt_limit=_time_step_limit(hf),
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _step_floor(hf: Mapping[str, Any]) -> float:
    """Nemotron-H's time_step_min: the scan's lowest step size (0: none)."""
    floor = hf.get("time_step_min")
    floor = 0.001 if floor is None else floor
    if not _is_number(floor) or not 0 <= floor < math.inf:
        raise ValueError(f"config field 'time_step_min' must be a number >= 0, got {floor!r}.")
    return float(floor)


def _time_step_limit(hf: Mapping[str, Any]) -> tuple[float, float]:
    """Granite's time_step_limit: [low, high] bounds of the scan's step sizes."""
    limit = hf.get("time_step_limit")
    if limit is None:
        return (0.0, math.inf)
    if not isinstance(limit, list | tuple) or len(limit) != 2 or not all(_is_number(v) for v in limit):
        raise ValueError(f"config field 'time_step_limit' must be two numbers [low, high], got {limit!r}.")
    if not 0 <= limit[0] < limit[1]:
        raise ValueError(f"config field 'time_step_limit' must be [low, high] with 0 <= low < high, got {limit!r}.")
    return (float(limit[0]), float(limit[1]))


def _require_silu(hf: Mapping[str, Any], key: str) -> None:
    act = hf.get(key) or "silu"
    if act != "silu":
        raise ValueError(
            f"config field {key!r} is {act!r}: the Mamba-2 layers are built with silu (the published models')."
        )


# --- which layer is which --------------------------------------------------------------------------------------------

# hybrid_override_pattern's letters as NemotronHConfig reads them; legacy layer type names as transformers remaps them
PATTERN_LETTERS = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
LEGACY_NAMES = {"mamba": "linear_attention", "attention": "full_attention"}
HYBRID_MODEL_TYPES = ("nemotron_h", "granitemoehybrid")
# (kind in describe_model) per layer type; MLP and MoE layers mix no tokens and hold no cache
KINDS = {"linear_attention": "mamba", "full_attention": "full", "mlp": "mlp", "moe": "moe"}


def hybrid_layer_types(hf: Mapping[str, Any]) -> list[str]:
    """_hybrid_layer_types(...), worked out once per config read: every layer's reader asks for the whole list."""
    return once(hf, "hybrid_layer_types", lambda: _hybrid_layer_types(hf))


def _hybrid_layer_types(hf: Mapping[str, Any]) -> list[str]:
    """Each layer's type (linear_attention, full_attention, mlp, moe), as transformers' config classes resolve them:
    Nemotron-H's layers_block_type (or layer_types) when given, else hybrid_override_pattern, else its default;
    Granite's layer_types, else Mamba-2 everywhere. Exactly num_hidden_layers of them."""
    if not isinstance(hf, Mapping):
        raise ValueError(f"the config must be a dict (a config.json read with json.load), got {type(hf).__name__}.")
    model_type = hf.get("model_type")
    if model_type not in HYBRID_MODEL_TYPES:
        raise ValueError(f"model_type={model_type!r}: these layers read {', '.join(HYBRID_MODEL_TYPES)} configs.")
    layers = int_field(hf, "num_hidden_layers")
    if model_type == "nemotron_h":
        name = "layers_block_type" if hf.get("layers_block_type") is not None else "layer_types"
        listed = hf.get(name)
        if listed is None:
            return _pattern_types(hf.get("hybrid_override_pattern", "ME*-"), layers)
        known: tuple[str, ...] = ("linear_attention", "full_attention", "mlp", "moe")
    else:
        name, listed, known = "layer_types", hf.get("layer_types"), ("linear_attention", "full_attention")
        if listed is None:
            return ["linear_attention"] * layers
    types = [LEGACY_NAMES.get(t, t) if isinstance(t, str) else t for t in listed] if isinstance(listed, list) else []
    if len(types) != layers or any(t not in known for t in types):
        raise ValueError(
            f"config field {name!r} must list {layers} entries (num_hidden_layers), each one of {', '.join(known)}."
        )
    return [str(t) for t in types]


def _pattern_types(pattern: object, layers: int) -> list[str]:
    if not isinstance(pattern, str):
        raise ValueError(f"config field 'hybrid_override_pattern' must be a string of letters, got {pattern!r}.")
    unknown = sorted(set(pattern) - set(PATTERN_LETTERS))
    if unknown:
        raise ValueError(
            f"config field 'hybrid_override_pattern' has the letter(s) {', '.join(map(repr, unknown))}: each layer is "
            "M (Mamba-2), * (attention), - (MLP) or E (mixture of experts)."
        )
    if len(pattern) != layers:
        raise ValueError(
            f"config field 'hybrid_override_pattern' has {len(pattern)} letters but num_hidden_layers is {layers}: "
            "give one letter per layer."
        )
    return [PATTERN_LETTERS[letter] for letter in pattern]


@dataclass(frozen=True)
class FeedForwardBlock:
    """A layer of a hybrid that mixes no tokens, an MLP or a mixture of experts ("mlp" or "moe"): it holds no cache,
    and attn_core, a library of token mixers, builds none (attn_core.hf counts it as 0 bytes)."""

    kind: str


def feed_forward_bytes(block: FeedForwardBlock, tokens: int, batch: int, element_bytes: int) -> int:
    """What a FeedForwardBlock caches after any count of tokens: nothing."""
    return 0


def feed_forward_formula(block: FeedForwardBlock) -> str:
    return f"0: an {'MLP' if block.kind == 'mlp' else 'MoE'} layer mixes no tokens and caches nothing"


def hybrid_layer(
    hf: Mapping[str, Any], layer_idx: int
) -> tuple[str, Mamba2Config | FeedForwardBlock | tuple[AttentionConfig, AttentionOptions]]:
    """(kind, config) of layer layer_idx: ("mamba", Mamba2Config), ("full", (AttentionConfig, AttentionOptions)) for
    an attention layer, ("mlp" or "moe", FeedForwardBlock) for a layer with no cache."""
    layer_type = hybrid_layer_types(hf)[layer_index(hf, layer_idx)]
    kind = KINDS[layer_type]
    if layer_type == "linear_attention":
        return kind, Mamba2Config.from_hf(hf, layer_idx)
    if layer_type == "full_attention":
        return kind, _hybrid_attention(hf)
    return kind, FeedForwardBlock(kind)


def _hybrid_attention(hf: Mapping[str, Any]) -> tuple[AttentionConfig, AttentionOptions]:
    """A hybrid's attention layer as a grouped layer. Nemotron-H's (NemotronHAttention): no RoPE (the Mamba layers
    carry the positions), no biases whatever attention_bias says, scores scaled by 1/sqrt(head_dim). Granite's:
    attention_bias on all four projections, scores scaled by attention_multiplier, RoPE only when
    position_embedding_type is "rope"."""
    model = str(hf["model_type"])
    granite = model == "granitemoehybrid"
    d_model, heads = int_field(hf, "hidden_size", model=model), int_field(hf, "num_attention_heads", model=model)
    kv_heads = int_field(hf, "num_key_value_heads", heads if granite else 8, model=model)
    head_dim = int_field(hf, "head_dim", d_model // heads if granite else 128, model=model)
    if heads % kv_heads:
        raise ValueError(
            f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}: check the config."
        )
    rope = granite and hf.get("position_embedding_type") == "rope"
    context = int_field(hf, "max_position_embeddings", 2048, model=model)
    theta, scaling = rope_settings(hf, 10000.0, context) if rope else (10000.0, RopeScaling())
    variant: GroupedVariant = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    cfg = AttentionConfig(
        variant,
        d_model=d_model,
        n_heads=heads,
        n_kv_heads=kv_heads if variant == "gqa" else None,
        head_dim=head_dim,
        rope=rope,
        rope_theta=theta,
        bias=granite and bool_field(hf, "attention_bias", False),
    )
    scale = float_field(hf, "attention_multiplier", 1.0, model=model) if granite else None
    return cfg, AttentionOptions(scale=scale, rope_scaling=scaling)


# --- the scan ------------------------------------------------------------------------------------------------------


def segment_sums(a: torch.Tensor) -> torch.Tensor:
    """a [..., Q] log decays per token -> [..., Q, Q]: entry [i, j] = a_{j+1} + ... + a_i for j <= i (0 on the
    diagonal), -inf above. Summed directly rather than as cumsum_i - cumsum_j, which loses the small differences of
    two large sums (a strongly decaying head accumulates hundreds of nats over a chunk)."""
    length = a.shape[-1]
    spread = a.unsqueeze(-1).expand(*a.shape, length)  # [..., i, j] = a_i
    below = torch.ones(length, length, dtype=torch.bool, device=a.device).tril(-1)
    sums = spread.masked_fill(~below, 0.0).cumsum(dim=-2)
    return sums.masked_fill(~below.logical_or(torch.eye(length, dtype=torch.bool, device=a.device)), -math.inf)


def chunk_scan(
    x: torch.Tensor,
    dt: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    chunk: int,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The SSM over a prompt, chunk by chunk. x [B, L, H, P], dt [B, L, H] (step sizes), a [B, L, H] (dt · A: log
    decay per token), b, c [B, L, n_g, N] (each group's, shared by its H / n_g heads), state [B, H, P, N]; all
    float32 -> y [B, L, H, P] (without D's skip), the state after the last token. A long prompt in segments of
    bounded memory."""
    batch, length, heads, _ = x.shape
    per_chunk = batch * chunk * chunk * heads
    segment = chunk * max(1, SEGMENT_ELEMENTS // per_chunk)
    outs = []
    for start in range(0, length, segment):
        part = slice(start, start + segment)
        out, state = _chunks(x[:, part], dt[:, part], a[:, part], b[:, part], c[:, part], chunk, state)
        outs.append(out)
    return (outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)), state


def _chunks(
    x: torch.Tensor,
    dt: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    chunk: int,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    length, groups = x.shape[1], b.shape[2]
    pad = -length % chunk  # padded tokens have dt = 0: no input, no decay, the state passes through them unchanged
    if pad:
        x, dt, a, b, c = (F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad)) for t in (x, dt, a, b, c))
    # [B, n_g, R, n, Q, ...] (R = H / n_g heads per group, n chunks): every product below is a batched matrix product,
    # and B and C's scores are computed once per group, not once per head
    x = rearrange(x * dt[..., None], "b (n q) (g r) p -> b g r n q p", q=chunk, g=groups)  # dt_j x_j: j's input
    b, c = (rearrange(t, "b (n q) g s -> b g () n q s", q=chunk) for t in (b, c))
    a = rearrange(a, "b (n q) (g r) -> b g r n q", q=chunk, g=groups)
    cum = a.cumsum(dim=-1)  # log decay from the chunk's start through each token
    # within a chunk: y_i = sum_{j <= i} (C_i . B_j) exp(a_{j+1} + ... + a_i) dt_j x_j, attention with a decay mask
    y = ((c @ b.transpose(-1, -2)) * segment_sums(a).exp_()) @ x  # [B, n_g, R, n, Q, P]
    # each chunk's own contribution to the state at its end: sum_j exp(cum_end - cum_j) B_j^T dt_j x_j
    added = (b * (cum[..., -1:] - cum).exp_().unsqueeze(-1)).transpose(-1, -2) @ x  # [B, n_g, R, n, N, P]
    chunk_decay = cum[..., -1].exp()[..., None, None]  # [B, n_g, R, n, 1, 1]
    state = rearrange(state, "b (g r) p s -> b g r p s", g=groups)
    starts = state.new_empty(*state.shape[:3], x.shape[3], *state.shape[3:])  # [B, n_g, R, n, P, N]
    for n in range(x.shape[3]):  # the state carried chunk to chunk, as it is at each chunk's start
        starts[:, :, :, n] = state
        state = state * chunk_decay[:, :, :, n] + added[:, :, :, n].transpose(-1, -2)
    # each token reads its chunk's start state, decayed from the chunk's start to it
    y += (c * cum.exp_().unsqueeze(-1)) @ starts.transpose(-1, -2)
    out = rearrange(y, "b g r n q p -> b (n q) (g r) p")[:, :length]
    return out, rearrange(state, "b g r p s -> b (g r) p s")


def recurrent_step(
    x: torch.Tensor, dt: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, state: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token (decoding): x [B, H, P], dt and a [B, H], b and c [B, H, N], state [B, H, P, N] -> y [B, H, P]
    (without D's skip), the new state."""
    state = state * a.exp()[..., None, None] + (dt[..., None] * x)[..., None] * b[:, :, None, :]
    return (state @ c[..., None])[..., 0], state


# --- the layer -----------------------------------------------------------------------------------------------------


class GroupedGatedRMSNorm(nn.Module):
    """y · silu(z), RMS-normalised over each group's H · P / n_g channels, times weight: HF's NemotronHRMSNormGated
    (the gate before the norm, in float32)."""

    def __init__(
        self, dim: int, groups: int, eps: float, *, device: torch.device | str | None = None, dtype: torch.dtype | None
    ) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))
        self.groups, self.eps = groups, eps

    def forward(self, y: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        gated = rearrange(y.float() * F.silu(gate.float()), "... (g d) -> ... g d", g=self.groups)
        normed = gated * torch.rsqrt(gated.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * rearrange(normed, "... g d -> ... (g d)").to(y.dtype)


class Mamba2Mixer(nn.Module):
    """Mamba-2's mixer (HF's NemotronHMamba2Mixer and GraniteMoeHybridMambaLayer, same parameter names).

    in_proj gives, per token, the gate z [H · P], the convolution's inputs x|B|C [C] and the raw step sizes [H];
    x, B and C pass a causal depthwise convolution (K taps, bias, silu); the SSM's output plus D x is gated by silu(z)
    and normalised per group (norm), then out_proj.
    """

    def __init__(
        self, cfg: Mamba2Config, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.cfg = cfg
        kw: dict[str, Any] = {"device": device, "dtype": dtype}
        channels = cfg.conv_channels
        self.conv1d = nn.Conv1d(channels, channels, cfg.conv_kernel, groups=channels, bias=cfg.conv_bias, **kw)
        self.in_proj = nn.Linear(cfg.d_model, cfg.inner_dim + channels + cfg.n_heads, bias=cfg.proj_bias, **kw)
        self.dt_bias = nn.Parameter(torch.ones(cfg.n_heads, **kw))
        self.A_log = nn.Parameter(torch.zeros(cfg.n_heads, **kw))
        self.norm = GroupedGatedRMSNorm(cfg.inner_dim, cfg.n_groups, cfg.norm_eps, **kw)
        self.D = nn.Parameter(torch.ones(cfg.n_heads, **kw))
        self.out_proj = nn.Linear(cfg.inner_dim, cfg.d_model, bias=cfg.proj_bias, **kw)

    def new_cache(self, batch_size: int = 1) -> LinearStateCache:
        return self._cache(batch_size, self.conv1d.weight.dtype)

    def _cache(self, batch_size: int, dtype: torch.dtype) -> LinearStateCache:
        """The state [B, H, P, N] in float32 (as HF keeps it: its scan's final state, whatever the model's dtype) and
        the convolution's K - 1 latest inputs in the layer's dtype (HF keeps K; the oldest is never read again)."""
        cfg = self.cfg
        return LinearStateCache(
            batch_size,
            heads=cfg.n_heads,
            key_dim=cfg.head_dim,
            value_dim=cfg.state_size,
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

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """Linear and conv weights and biases U(-1/sqrt(fan_in), +) from seeded_generator(f"{seed}/{name}") (torch's
        default bound), norm weight ones, and A_log, D and dt_bias as HF's _init_weights sets them: A = 1..H, D = 1,
        dt_bias = softplus^-1(dt) with dt = exp(U(log 1e-3, log 1e-1)) clamped at 1e-4 (its default time steps)."""
        seed_dense_weights(self, seed)
        heads = self.cfg.n_heads
        dt = torch.empty(heads).uniform_(math.log(1e-3), math.log(1e-1), generator=seeded_generator(f"{seed}/dt_bias"))
        dt = dt.exp().clamp_min(1e-4)
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.A_log.copy_(torch.arange(1, heads + 1, dtype=torch.float32).log())
        self.D.fill_(1.0)
        self.norm.weight.fill_(1.0)

    def _convolved(self, xbc: torch.Tensor, cache: LinearStateCache | None) -> tuple[torch.Tensor, torch.Tensor]:
        """xbc [B, L, C] -> the convolution's output [B, L, C] and the window it read [B, C, K - 1 + L]."""
        new = xbc.transpose(1, 2)
        if cache is not None and cache.batch_size != new.shape[0]:
            raise ValueError(
                f"The cache holds {cache.batch_size} sequences but x has {new.shape[0]}: give new_cache(batch_size=...) "
                "the batch you decode."
            )
        window = cache.window(new) if cache is not None else F.pad(new, (self.cfg.conv_kernel - 1, 0))
        return causal_conv(window, self.conv1d.weight, self.conv1d.bias).transpose(1, 2), window

    def forward(
        self, x: torch.Tensor, *, cache: LinearStateCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], None (a state-space layer has no attention weights to return)."""
        cfg = self.cfg
        batch, length, _ = x.shape
        z, xbc, dt_raw = self.in_proj(x).split([cfg.inner_dim, cfg.conv_channels, cfg.n_heads], dim=-1)
        xbc, window = self._convolved(xbc, cache)
        group_width = cfg.n_groups * cfg.state_size
        xs, b, c = xbc.float().split([cfg.inner_dim, group_width, group_width], dim=-1)
        xs = rearrange(xs, "b l (h p) -> b l h p", p=cfg.head_dim)
        b, c = (rearrange(t, "b l (g s) -> b l g s", s=cfg.state_size) for t in (b, c))  # [B, L, n_g, N]
        dt = F.softplus(dt_raw.float() + self.dt_bias.float())  # [B, L, H]
        a_rate = -self.A_log.float().exp()  # [H]
        state = cache.state if cache is not None else None
        if state is not None and length == 1:  # decoding: the recurrence once, no clamp (as HF's step)
            per_group = cfg.n_heads // cfg.n_groups  # each group's B and C serve its H / n_g heads
            b, c = (t[:, 0].repeat_interleave(per_group, dim=1) for t in (b, c))
            y, state = recurrent_step(xs[:, 0], dt[:, 0], dt[:, 0] * a_rate, b, c, state)
            y = y[:, None].to(x.dtype)  # HF's step hands the norm the model's dtype, its scan float32
        else:
            dt = dt.clamp(*cfg.dt_limit)
            if state is None:
                state = xs.new_zeros(batch, cfg.n_heads, cfg.head_dim, cfg.state_size)
            y, state = chunk_scan(xs, dt, dt * a_rate, b, c, cfg.chunk_size, state)
        y = y + xs.to(y.dtype) * self.D.to(y.dtype)[:, None]  # D's skip connection
        if cache is not None:
            cache.update(window, state, length)
        out = self.norm(rearrange(y, "b l h p -> b l (h p)"), z)
        return self.out_proj(out.to(x.dtype)), None


def cache_bytes_formula(cfg: Mamba2Config, tokens: int, batch: int, element_bytes: int) -> int:
    """CACHE_FORMULA in closed form: B · (H · P · N · 4 + (K − 1) · C · b) once a token is seen, 0 before; the state is
    float32 (4 bytes) whatever element_bytes (the conv tail's) is."""
    if tokens < 0 or batch < 0 or element_bytes <= 0:
        raise ValueError(
            f"tokens={tokens}, batch={batch}, element_bytes={element_bytes}: give counts >= 0 and a size > 0."
        )
    if tokens == 0:
        return 0
    state = cfg.n_heads * cfg.head_dim * cfg.state_size * STATE_DTYPE.itemsize
    return batch * (state + (cfg.conv_kernel - 1) * cfg.conv_channels * element_bytes)
