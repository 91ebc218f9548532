"""Gemma 3n's and Gemma 4's attention (HF's Gemma3nTextAttention and Gemma4TextAttention, same parameter names):
cross-layer KV sharing, and Gemma 4's global layers whose value is their key.

Every layer normalises each query, key and value head by its RMS (q_norm and k_norm scaled by their weight, the value
by nothing) and scores with a scale of 1; sliding layers keep window - 1 tokens, as HF's sliding cache.

KV sharing (num_kv_shared_layers): the last n layers compute no keys or values. Each reads the cache of the last
earlier layer of its own type (sliding or full) that has one, and holds nothing: it is called with that layer's cache,
`layer(x, cache=cache_of_source)`, after the source has run on the same tokens, and leaves it as it was. A sliding
source's cache keeps what its last call attended to (the prompt's keys and values in a prefill), since a prompt's
early queries need keys the window has since dropped: HF passes the same tensors from layer to layer.

Gemma 4's attention_k_eq_v: a global layer has no v_proj; its value is the RMS-normalised key projection, and its key
that value times k_norm's weight, rotated. The cache holds the value alone, one tensor (half of a K and V cache), and
the keys are made again from it at each call as HF makes them (the same float32 products: bit for bit in float32;
in a 16-bit dtype the value is rounded before the product, as it must be when the value alone is kept).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from einops import rearrange
from torch import nn

from .attend import KeyMask, allowed_positions, attend, window_allowed
from .build import seed_dense_weights
from .cache import GroupedKVCache, GrowingSequenceBuffer, WindowedKVCache, _Cache, checked_tokens
from .hf_fields import (
    bool_field,
    float_field,
    int_field,
    layer_index,
    layer_types,
    once,
    positive_fields,
    rope_settings,
)
from .latent import RMSNorm
from .rope import MEMOISED_LENGTH, PLAIN, RopeScaling, apply_rope, rope_cos_sin

LAYER_TYPES = ("full_attention", "sliding_attention")
MODEL_TYPES = ("gemma3n_text", "gemma4_text")


# --- the layer's config ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KVSharingConfig:
    """One layer of Gemma 3n or Gemma 4. kv_source: the layer whose cache this one reads (HF's kv_sharing_modes
    "reuse"), None for a layer with a cache of its own; stores_kv: later layers read this one's cache ("store")."""

    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    window: int | None = None
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = PLAIN
    bias: bool = False
    norm_eps: float = 1e-6
    k_eq_v: bool = False
    kv_source: int | None = None
    stores_kv: bool = False

    def __post_init__(self) -> None:
        positive_fields(self, "d_model", "n_heads", "n_kv_heads", "head_dim")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"num_attention_heads={self.n_heads} is not a multiple of num_key_value_heads={self.n_kv_heads}."
            )
        if self.window is not None:
            positive_fields(self, "window")
        if self.k_eq_v and self.window is not None:
            raise ValueError("attention_k_eq_v applies to full-attention layers; this one has a sliding window.")
        if self.kv_source is not None and self.stores_kv:
            raise ValueError("a layer that reads another layer's cache (kv_source) has none for others to read.")

    @property
    def kind(self) -> str:
        if self.kv_source is not None:
            return "shared"
        return "full" if self.window is None else "sliding"

    @classmethod
    def from_hf(cls, hf: Mapping[str, Any], layer_idx: int) -> KVSharingConfig:
        """Layer layer_idx of a gemma3n_text or gemma4_text config.json (or transformers' to_dict()), with the
        defaults of Gemma3nTextConfig or Gemma4TextConfig for what it leaves out."""
        model = hf.get("model_type")
        if model not in MODEL_TYPES:
            raise ValueError(f"model_type={model!r}: this layer reads {' or '.join(MODEL_TYPES)} configs.")
        gemma4 = model == "gemma4_text"
        if gemma4 and hf.get("use_bidirectional_attention") == "all":
            raise ValueError("use_bidirectional_attention='all' is not supported: these layers are causal.")
        types = _layer_types(hf, gemma4)
        sources = kv_sources(hf, types, 0 if gemma4 else 15)
        source = sources[layer_index(hf, layer_idx)]
        own = _own_layer(hf, layer_idx if source is None else source, types, gemma4)
        if source is not None:
            heads = _heads_and_width(hf, layer_idx, types, gemma4)
            if heads != (own.n_kv_heads, own.head_dim):
                raise ValueError(
                    f"layer {layer_idx} reads layer {source}'s cache (num_kv_shared_layers) but its heads differ "
                    "from that layer's (num_key_value_heads, head_dim): check per_layer_config."
                )
            return replace(own, kv_source=source, stores_kv=False)
        producers = once(hf, ("kv_producers", gemma4), lambda: set(sources))  # a set: asked by every layer
        return replace(own, stores_kv=layer_idx in producers)


def _layer_types(hf: Mapping[str, Any], gemma4: bool) -> Sequence[str]:
    """layer_types as given, else as the config class fills it: Gemma 3n one full layer in 5, Gemma 4 in 6 (its last
    layer full, as Gemma4TextConfig forces it)."""
    pattern = 6 if gemma4 else 5
    types = layer_types(hf, LAYER_TYPES, lambda i: "sliding_attention" if (i + 1) % pattern else "full_attention")
    if gemma4 and types[-1] != "full_attention":
        # a copy, once per config read: layer_types' list is kept for the config's other layers
        return once(hf, "gemma4_layer_types", lambda: [*types[:-1], "full_attention"])
    return types


def kv_sources(hf: Mapping[str, Any], types: Sequence[str], default_shared: int) -> list[int | None]:
    """_kv_sources(...), worked out once per config read: every layer's reader asks for the whole list."""
    # keyed without types: they follow from hf, and hashing 4,096 of them for every layer cost more than the work
    return once(hf, ("kv_sources", default_shared), lambda: _kv_sources(hf, types, default_shared))


def _kv_sources(hf: Mapping[str, Any], types: Sequence[str], default_shared: int) -> list[int | None]:
    """Per layer, the layer whose cache it reads (the last non-shared one of its type), None for a layer with its
    own: HF's kv_sharing_modes, with a ValueError naming the field where it has no answer."""
    layers = len(types)
    shared = int_field(hf, "num_kv_shared_layers", default_shared, minimum=0)
    if shared >= layers:
        raise ValueError(
            f"num_kv_shared_layers={shared} must be below num_hidden_layers={layers}: some layer has to compute the "
            "keys and values the shared ones read."
        )
    first_shared = layers - shared
    last_of_type = {t: i for i, t in enumerate(types[:first_shared])}
    sources: list[int | None] = [None] * first_shared
    for i in range(first_shared, layers):
        if types[i] not in last_of_type:
            raise ValueError(
                f"layer {i} is a {types[i]} layer among the last num_kv_shared_layers={shared}, but no earlier layer "
                "of that type computes keys and values for it to read: check num_kv_shared_layers and layer_types."
            )
        sources.append(last_of_type[types[i]])
    return sources


def _heads_and_width(hf: Mapping[str, Any], layer_idx: int, types: Sequence[str], gemma4: bool) -> tuple[int, int]:
    """(num_key_value_heads, head_dim) of layer layer_idx: Gemma 4's global layers take global_head_dim (512) and,
    with attention_k_eq_v, num_global_key_value_heads, unless per_layer_config (transformers' to_dict) says."""
    kv_heads = int_field(hf, "num_key_value_heads", 2 if not gemma4 else 4)
    head_dim = int_field(hf, "head_dim", 256)
    if not gemma4:
        return kv_heads, head_dim
    overrides = hf.get("per_layer_config")
    if isinstance(overrides, Mapping):
        layer = overrides.get(str(layer_idx), overrides.get(layer_idx)) or {}
        if not isinstance(layer, Mapping):
            raise ValueError(f"config field 'per_layer_config' must map layer indices to dicts (layer {layer_idx}).")
        name = f"per_layer_config.{layer_idx}"
        return (
            int_field(layer, "num_key_value_heads", kv_heads, name=f"{name}.num_key_value_heads"),
            int_field(layer, "head_dim", head_dim, name=f"{name}.head_dim"),
        )
    if types[layer_idx] != "full_attention":
        return kv_heads, head_dim
    if bool_field(hf, "attention_k_eq_v", False):
        kv_heads = int_field(hf, "num_global_key_value_heads", kv_heads)
    return kv_heads, int_field(hf, "global_head_dim", 512)


GEMMA4_ROPE: dict[str, dict[str, Any]] = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0},
}  # Gemma4TextConfig's default rope_parameters


def _rope(hf: Mapping[str, Any], layer_type: str, context: int, gemma4: bool) -> tuple[float, RopeScaling]:
    """(theta, scaling) of a layer type: rope_parameters nested by type (transformers 5), else Gemma 3n's flat
    rope_theta (global layers, with rope_scaling) and rope_local_base_freq (sliding layers)."""
    nested = hf.get("rope_parameters")
    given = _type_rope(nested, layer_type)
    if gemma4:
        params = given or GEMMA4_ROPE[layer_type]
        return rope_settings(hf, float(GEMMA4_ROPE[layer_type]["rope_theta"]), context, params=params)
    sliding = layer_type == "sliding_attention"
    default_theta = float_field(hf, "rope_local_base_freq", 10_000.0) if sliding else None
    default_theta = default_theta or float_field(hf, "rope_theta", 1_000_000.0)
    if given is not None:
        return rope_settings(hf, default_theta, context, params=given)
    if sliding:
        return default_theta, PLAIN
    return default_theta, RopeScaling.from_hf(hf.get("rope_scaling"), context)


def _type_rope(nested: object, layer_type: str) -> Mapping[str, Any] | None:
    """rope_parameters[layer_type] when the config nests them by layer type, else None."""
    if not isinstance(nested, Mapping) or nested.get(layer_type) is None:
        return None
    params = nested[layer_type]
    if not isinstance(params, Mapping):
        raise ValueError(f"config field 'rope_parameters.{layer_type}' must be a dict, got {params!r}.")
    return params


def _own_layer(hf: Mapping[str, Any], layer_idx: int, types: Sequence[str], gemma4: bool) -> KVSharingConfig:
    """Layer layer_idx as a layer with its own cache."""
    layer_type = types[layer_idx]
    context = int_field(hf, "max_position_embeddings", 131072 if gemma4 else 32768)
    theta, scaling = _rope(hf, layer_type, context, gemma4)
    kv_heads, head_dim = _heads_and_width(hf, layer_idx, types, gemma4)
    window = int_field(hf, "sliding_window", 512) if layer_type == "sliding_attention" else None
    return KVSharingConfig(
        d_model=int_field(hf, "hidden_size"),
        n_heads=int_field(hf, "num_attention_heads"),
        n_kv_heads=kv_heads,
        head_dim=head_dim,
        window=window,
        rope_theta=theta,
        rope_scaling=scaling,
        bias=bool_field(hf, "attention_bias", False),
        norm_eps=float_field(hf, "rms_norm_eps", 1e-6),
        k_eq_v=gemma4 and window is None and bool_field(hf, "attention_k_eq_v", False),
    )


# --- what a layer's cache holds ------------------------------------------------------------------------------------
CACHE_FORMULA = "2 · G · D · T · B · b; min(T, W − 1) with a window; G · D · T · B · b when K = V; 0 when shared"


def cache_bytes_formula(cfg: KVSharingConfig, tokens: int, batch: int, element_bytes: int) -> int:
    """What layer cfg's cache holds after `tokens` tokens: keys and values of the G KV heads (the window - 1 latest
    on a sliding layer), the values alone when K = V, nothing on a layer that reads another's."""
    if tokens < 0 or batch < 0 or element_bytes <= 0:
        raise ValueError(
            f"tokens={tokens}, batch={batch}, element_bytes={element_bytes}: give counts >= 0 and a size > 0."
        )
    if cfg.kv_source is not None:
        return 0
    held = tokens if cfg.window is None else min(tokens, cfg.window - 1)
    return (1 if cfg.k_eq_v else 2) * cfg.n_kv_heads * cfg.head_dim * held * batch * element_bytes


def formula(cfg: KVSharingConfig) -> str:
    """cache_bytes_formula in one line, with this layer's numbers (T tokens, B batch, b bytes per number)."""
    if cfg.kv_source is not None:
        return "0 (reads an earlier layer's cache)"
    numbers = f"G={cfg.n_kv_heads}, D={cfg.head_dim}"
    if cfg.k_eq_v:
        return f"G · D · T · B · b (the value is the key), {numbers}"
    if cfg.window is not None:
        return f"2 · G · D · min(T, W − 1) · B · b, {numbers}, W={cfg.window}"
    return f"2 · G · D · T · B · b, {numbers}"


class KeyValueCache(_Cache):
    """A K = V layer's cache: one tensor, the RMS-normalised key projection [B, G, T, D], which is the value; the key
    is it times key_scale (the layer's k_norm weight), rotated, made again when read."""

    def __init__(
        self,
        batch_size: int,
        n_kv_heads: int,
        head_dim: int,
        *,
        key_scale: torch.Tensor | None,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ):
        self.buffers = {"kv": GrowingSequenceBuffer(batch_size, n_kv_heads, head_dim, dtype=dtype, device=device)}
        self.key_scale = key_scale

    def append(self, v: torch.Tensor) -> torch.Tensor:
        """v [B, G, L, D] -> every value held [B, G, S, D], a view."""
        return self.buffers["kv"].append(v)

    @property
    def v(self) -> torch.Tensor:
        return self.buffers["kv"].view()


class StoringWindowedKVCache(WindowedKVCache):
    """A sliding layer's cache that later layers read: also what its last call attended to (its keys and values in
    the order the layer read them, and how many tokens that call added), until the next call. Not counted in nbytes:
    the next step does not need it."""

    last_read: tuple[torch.Tensor, torch.Tensor] | None = None
    last_new = 0

    def append(self, k: torch.Tensor, v: torch.Tensor, *, ordered: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        self.last_read = super().append(k, v, ordered=ordered)
        self.last_new = k.shape[2]
        return self.last_read


OwnCache = GroupedKVCache | WindowedKVCache | KeyValueCache


class BorrowedCache:
    """What a layer that reads another layer's cache holds: nothing. Its last query reads the source's keys and
    values (read_nbytes: what the source's own last query read)."""

    def __init__(self, source: OwnCache) -> None:
        self.source = source

    @property
    def seq_len(self) -> int:
        return self.source.seq_len

    @property
    def nbytes(self) -> int:
        return 0

    @property
    def capacity_nbytes(self) -> int:
        return 0

    @property
    def read_nbytes(self) -> int:
        return self.source.read_nbytes

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {}


LayerCache = OwnCache | BorrowedCache


# --- the layer -------------------------------------------------------------------------------------------------------
def unit_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / RMS(x) over the last axis in float32, cast back: HF's Gemma3nRMSNorm / Gemma4RMSNorm without a scale."""
    x32 = x.float()
    return (x32 * torch.pow(x32.pow(2).mean(-1, keepdim=True) + eps, -0.5)).type_as(x)


class KVSharingAttention(nn.Module):
    """Gemma 3n's and Gemma 4's attention layer; a layer that reads another's cache has q_proj, q_norm and o_proj
    only, a K = V layer no v_proj, as HF's modules."""

    def __init__(
        self, cfg: KVSharingConfig, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.cfg = cfg
        kw: dict[str, Any] = {"device": device, "dtype": dtype, "bias": cfg.bias}
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, **kw)
        self.q_norm = RMSNorm(cfg.head_dim, cfg.norm_eps, device=device, dtype=dtype)
        self.k_proj: nn.Linear | None = None
        self.v_proj: nn.Linear | None = None
        self.k_norm: RMSNorm | None = None
        if cfg.kv_source is None:
            self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
            self.k_norm = RMSNorm(cfg.head_dim, cfg.norm_eps, device=device, dtype=dtype)
            if not cfg.k_eq_v:
                self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, **kw)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, **kw)
        self._rope_table: tuple[torch.Tensor, torch.Tensor] | None = None  # see _cos_sin_from_0

    @torch.no_grad()
    def init_from_seed(self, seed: int) -> None:
        """Linear weights and biases U(-1/sqrt(fan_in), +) from seeded_generator(f"{seed}/{name}"); the norms' weights
        1, as HF initialises them."""
        seed_dense_weights(self, seed)
        for norm in (self.q_norm, self.k_norm):
            if norm is not None:
                norm.weight.fill_(1.0)

    # --- caches ----------------------------------------------------------------------------------------------------
    def new_cache(self, batch_size: int = 1) -> OwnCache:
        """An empty cache; a layer that reads another's has none (a ValueError saying whose to pass)."""
        if self.cfg.kv_source is not None:
            raise ValueError(
                f"this layer reads layer {self.cfg.kv_source}'s cache (num_kv_shared_layers): call it with that "
                "layer's cache, layer(x, cache=cache_of_source), after that layer has run on the same tokens."
            )
        weight = self.q_proj.weight
        return self._empty_cache(batch_size, weight.device, weight.dtype)

    def _empty_cache(self, batch_size: int, device: torch.device, dtype: torch.dtype) -> OwnCache:
        cfg = self.cfg
        if cfg.k_eq_v:
            key_scale = None if self.k_norm is None else self.k_norm.weight
            return KeyValueCache(
                batch_size, cfg.n_kv_heads, cfg.head_dim, key_scale=key_scale, dtype=dtype, device=device
            )
        if cfg.window is not None:
            windowed = StoringWindowedKVCache if cfg.stores_kv or cfg.kv_source is not None else WindowedKVCache
            return windowed(batch_size, cfg.n_kv_heads, cfg.head_dim, window=cfg.window, dtype=dtype, device=device)
        return GroupedKVCache(batch_size, cfg.n_kv_heads, cfg.head_dim, dtype=dtype, device=device)

    def cache_after(self, tokens: int, batch_size: int = 1) -> LayerCache:
        """The cache after a prefill of `tokens` tokens, built on the meta device through the cache's own append; for
        a layer that reads another's, a BorrowedCache of the source's."""
        cfg, dtype = self.cfg, self.q_proj.weight.dtype
        cache = self._empty_cache(batch_size, torch.device("meta"), dtype)
        if checked_tokens(tokens):
            new = torch.empty(batch_size, cfg.n_kv_heads, tokens, cfg.head_dim, device="meta", dtype=dtype)
            if isinstance(cache, KeyValueCache):
                cache.append(new)
            else:
                cache.append(new, new)
        return cache if cfg.kv_source is None else BorrowedCache(cache)

    # --- the forward pass ------------------------------------------------------------------------------------------
    def _rotated(self, t: torch.Tensor, start: int) -> torch.Tensor:
        """t [B, heads, L, D] rotated for positions start.. as HF's apply_rotary_pos_emb does; only the pairs that
        turn are computed ("proportional" RoPE leaves the others at angle 0: as they are, bit for bit)."""
        cfg, length = self.cfg, t.shape[2]
        if start == 0 and length > MEMOISED_LENGTH and t.device.type != "meta":
            cos, sin = self._cos_sin_from_0(length, t.device, t.dtype)
        else:
            cos, sin = rope_cos_sin(
                start, length, cfg.head_dim, cfg.rope_theta, device=t.device, dtype=t.dtype, scaling=cfg.rope_scaling
            )
        half, turning = cfg.head_dim // 2, cfg.rope_scaling.turning_pairs(cfg.head_dim)
        if turning == half:
            return apply_rope(t, cos, sin)
        first, second = t[..., :turning], t[..., half : half + turning]  # the turning pairs' two halves
        cos, sin = cos[:, :turning], sin[:, :turning]
        out = t.clone()
        out[..., :turning] = first * cos - second * sin
        out[..., half : half + turning] = second * cos + first * sin
        return out

    def _cos_sin_from_0(
        self, length: int, device: torch.device, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin for positions 0..length - 1, sliced from a table kept on the layer and doubled as it runs out:
        a K = V layer rotates every cached key at every step (the same numbers as rope_cos_sin's, which computes
        each position alone)."""
        table = self._rope_table
        if table is None or table[0].shape[0] < length or table[0].device != device or table[0].dtype != dtype:
            cfg, size = self.cfg, 1 << (length - 1).bit_length()
            with torch.inference_mode(False):  # normal tensors, kept for calls where autograd records
                table = rope_cos_sin(
                    0, size, cfg.head_dim, cfg.rope_theta, device=device, dtype=dtype, scaling=cfg.rope_scaling
                )
            self._rope_table = table
        return table[0][:length], table[1][:length]

    def _keys_from_values(self, values: torch.Tensor, key_scale: torch.Tensor | None) -> torch.Tensor:
        """A K = V layer's keys for the values held [B, G, S, D] at positions 0..S - 1: value · k_norm's weight in
        float32 (HF's k_norm, whose normalised key is the value), rotated."""
        if key_scale is None:
            raise ValueError("a K = V cache needs the k_norm weight of the layer that filled it (key_scale).")
        return self._rotated((values.float() * key_scale.float()).type_as(values), 0)

    def forward(
        self, x: torch.Tensor, *, cache: LayerCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> out [B, L, d_model], weights [B, H, L, S] or None; causal, positions from
        cache.seq_len. A layer that reads another's cache takes that cache, after its layer ran on these tokens."""
        if self.cfg.kv_source is not None:
            source = cache.source if isinstance(cache, BorrowedCache) else cache
            return self._read_shared(x, source, return_weights)
        if isinstance(cache, BorrowedCache):
            raise ValueError("a BorrowedCache belongs to a layer that reads another's cache, not to this one.")
        start = cache.seq_len if cache is not None else 0
        q = self._queries(x, start)
        keys, values, mask = self._own_keys(x, cache, start, ordered=return_weights)
        return self._attended(q, keys, values, mask, return_weights)

    def _queries(self, x: torch.Tensor, start: int) -> torch.Tensor:
        q = rearrange(self.q_proj(x), "b l (h d) -> b h l d", h=self.cfg.n_heads)  # [B, H, L, D]
        return self._rotated(self.q_norm(q), start)

    def _own_keys(
        self, x: torch.Tensor, cache: OwnCache | None, start: int, *, ordered: bool
    ) -> tuple[torch.Tensor, torch.Tensor, KeyMask]:
        """The keys and values [B, G, S, D] this layer's queries read (its cache's and the new ones), and the mask."""
        cfg, length = self.cfg, x.shape[1]
        assert self.k_proj is not None  # a layer with its own cache has k_proj and k_norm
        assert self.k_norm is not None
        k = rearrange(self.k_proj(x), "b l (g d) -> b g l d", g=cfg.n_kv_heads)  # [B, G, L, D]
        if cfg.k_eq_v:
            values = unit_rms(k, cfg.norm_eps)
            if isinstance(cache, KeyValueCache):
                values = cache.append(values)
            keys = self._keys_from_values(values, self.k_norm.weight)
            return keys, values, self._causal(length, keys.shape[2], x.device)
        assert self.v_proj is not None  # K != V
        k = self._rotated(self.k_norm(k), start)
        v = unit_rms(rearrange(self.v_proj(x), "b l (g d) -> b g l d", g=cfg.n_kv_heads), cfg.norm_eps)
        if isinstance(cache, WindowedKVCache):
            k, v = cache.append(k, v, ordered=ordered)
            return k, v, _window_mask(cache, length, x.device)
        if isinstance(cache, GroupedKVCache):
            k, v = cache.append(k, v)
        if cfg.window is not None and length > cfg.window:  # a prompt past the window, no cache
            mask = window_allowed(0, length, sinks_held=0, key_start=0, window=cfg.window, device=x.device)
            return k, v, mask
        return k, v, self._causal(length, k.shape[2], x.device)

    @staticmethod
    def _causal(length: int, keys: int, device: torch.device) -> KeyMask:
        return allowed_positions(length, keys, causal=True, key_padding_mask=None, device=device)

    def _read_shared(
        self, x: torch.Tensor, cache: OwnCache | None, return_weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """A layer with kv_source: its queries against the keys and values its source's last call read."""
        source, length = self.cfg.kv_source, x.shape[1]
        if cache is None:
            self.new_cache()  # the ValueError saying whose cache to pass
        assert cache is not None
        if length > cache.seq_len:
            raise ValueError(
                f"the cache holds {cache.seq_len} tokens but this call brings {length}: run layer {source} on these "
                "tokens first, then this layer with its cache."
            )
        q = self._queries(x, cache.seq_len - length)
        if isinstance(cache, KeyValueCache):
            keys = self._keys_from_values(cache.v, cache.key_scale)
            return self._attended(q, keys, cache.v, self._causal(length, keys.shape[2], x.device), return_weights)
        if isinstance(cache, StoringWindowedKVCache) and cache.last_read is not None:
            if cache.last_new != length:
                raise ValueError(
                    f"layer {source}'s last call brought {cache.last_new} tokens and this one {length}: call this "
                    "layer on the same tokens, right after it."
                )
            keys, values = cache.last_read
            return self._attended(q, keys, values, _window_mask(cache, length, x.device), return_weights)
        if isinstance(cache, GroupedKVCache):
            mask = self._causal(length, cache.seq_len, x.device)
            return self._attended(q, cache.k, cache.v, mask, return_weights)
        raise ValueError(
            f"this layer reads layer {source}'s cache, which must come from that layer's new_cache() and have been "
            f"filled by it; got {type(cache).__name__}."
        )

    def _attended(
        self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: KeyMask, return_weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        out, weights = attend(q, keys, values, scale=1.0, mask=mask, return_weights=return_weights)
        return self.o_proj(rearrange(out, "b h l d -> b l (h d)")), weights


def _window_mask(cache: WindowedKVCache, length: int, device: torch.device) -> KeyMask:
    """Where the last `length` queries may look among the keys the cache's last append returned."""
    spans = cache.returned_spans
    if spans is None:  # one token, ring order: every key returned is in its window
        return KeyMask(None)
    sinks_held, key_start = spans
    return window_allowed(
        cache.seq_len - length, length, sinks_held=sinks_held, key_start=key_start, window=cache.window, device=device
    )
