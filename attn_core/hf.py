"""Any supported model's attention from its config.json: build one layer, or describe every layer's cache.

    cfg = json.loads(Path("config.json").read_text())   # as published, or transformers' config.to_dict()
    layer = build_layer(cfg, layer_idx=3, seed=0)        # takes HF's self_attn.state_dict() with strict=True
    model = describe_model(cfg)                          # nothing allocated: caches measured on the meta device
    model.layer_kinds                                    # ["sliding", "full", ...]
    model.cache_bytes(tokens=131072, batch=1, dtype="bfloat16")
    model.cache_bytes(tokens=131072, storage="served")   # as its serving code keeps it (attn_core.served)

Two tables drive both: READERS maps a model_type to a function (config dict, layer index) -> (kind, layer config),
and DESIGNS maps a layer config's type to how it is built and what its cache weighs (the closed form and its one-line
formula). Field names and defaults are those of transformers' configuration_<model_type>.py: a config.json may leave
out any field its config class defaults, except hidden_size, num_attention_heads and num_hidden_layers, which say
what the model is. A new design adds a reader and, for a new layer config type, a Design (ARCHITECTURE.md, "Where
things go").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, is_dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from . import compressed, dsa, gated, glm_dsa, kv_sharing, lightning, linear, mamba
from .accounting import as_dtype, bytes_per_element
from .build import build_attention
from .chunked import QueryTemperature
from .compressed import CompressedAttention, CompressedConfig
from .config import AttentionConfig, GroupedVariant
from .config_checks import MAX_BATCH, MAX_TOKENS, ConfigFieldError, Footprint, Need, within_any_machine
from .contract import CachedLayer
from .dsa import DeepSeekSparseAttention, DSAConfig
from .gated import GatedAttention, GatedAttentionConfig
from .glm_dsa import SharedTopKAttention, SharedTopKConfig, read_glm_moe_dsa
from .hf_fields import (
    ReadOnce,
    bool_field,
    field,
    field_name,
    float_field,
    int_field,
    layer_index,
    layer_types,
    mla_softmax_scale,
    rope_parameters,
    rope_settings,
)
from .hybrids import KIMI_MODEL_TYPES, QWEN_MODEL_TYPES, kimi_linear_layer, qwen_hybrid_layer
from .kv_sharing import KVSharingAttention, KVSharingConfig
from .lightning import MINIMAX_MODEL_TYPES, LightningAttention, LightningConfig, minimax_layer_types
from .linear import GatedDeltaNet, GatedDeltaNetConfig, KimiDeltaAttention, KimiDeltaConfig
from .mamba import HYBRID_MODEL_TYPES, FeedForwardBlock, Mamba2Config, Mamba2Mixer, hybrid_layer
from .options import NO_OPTIONS, AttentionOptions, QkNorm, held_tokens
from .rope import RopeScaling
from .served import SERVED_AS_HELD, STORAGES, ServedFormat, Storage, served_layout

if TYPE_CHECKING:
    from .cache import GroupedKVCache, LatentKVCache, WindowedKVCache
    from .chunked import ChunkedKVCache
    from .compressed import CompressedCache
    from .dsa import DSACache
    from .grouped import GroupedQueryAttention
    from .kv_sharing import LayerCache
    from .latent import MultiHeadLatentAttention
    from .lightning import LightningStateCache
    from .linear import LinearStateCache

GROUPED_LAYER_TYPES = ("full_attention", "sliding_attention")


# --- the layer configs of this module's designs ------------------------------------------------------------------
@dataclass(frozen=True)
class LayerShape:
    """A grouped (MHA/MQA/GQA) or latent (MLA) layer of a published model: its shape and its options."""

    attention: AttentionConfig
    options: AttentionOptions = NO_OPTIONS

    def __post_init__(self) -> None:
        self.options.check_for(self.attention)


def layer_shape_cache_bytes(shape: LayerShape, tokens: int, batch: int, element_bytes: int) -> int:
    """Closed form of what a LayerShape's cache holds after `tokens` tokens (see layer_shape_formula)."""
    cfg = shape.attention
    return batch * cfg.cache_elements_per_token * held_tokens(shape.options, tokens) * element_bytes


def layer_shape_formula(shape: LayerShape) -> str:
    """layer_shape_cache_bytes in one line, with this layer's numbers (T tokens, B batch, b bytes per number)."""
    cfg, options = shape.attention, shape.options
    if cfg.variant == "mla":
        widths = cfg.latent_widths
        return f"(d_c + d_h^R) · T · B · b, d_c={widths.kv_lora_rank}, d_h^R={widths.qk_rope_head_dim}"
    numbers = f"G={cfg.n_kv_heads}, D={cfg.head_dim}"
    if options.chunk is not None:
        return f"2 · G · D · ((T − 1) mod C + 1) · B · b, {numbers}, C={options.chunk}"
    if options.window is None:
        return f"2 · G · D · T · B · b, {numbers}"
    if options.sink_tokens:
        return (
            "2 · G · D · (min(T, n_s) + min(T − min(T, n_s), W − 1)) · B · b, "
            f"{numbers}, W={options.window}, n_s={options.sink_tokens}"
        )
    return f"2 · G · D · min(T, W − 1) · B · b, {numbers}, W={options.window}"


def _build_layer_shape(
    shape: LayerShape, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
) -> nn.Module:
    return build_attention(shape.attention, seed, device=device, dtype=dtype, options=shape.options)


# --- the registry ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Design:
    """How one type of layer config becomes a layer, and what the layer's cache holds in closed form.

    build(config, seed, device, dtype) -> the layer, which offers cache_after(tokens, batch_size) (the meta-device
    cache whose nbytes and read_nbytes describe_model reads). cache_bytes(config, tokens, batch, element_bytes) is
    the closed form; formula(config) says it in one line.
    """

    build: Callable[[Any, int | None, torch.device | str | None, torch.dtype | None], nn.Module]
    cache_bytes: Callable[[Any, int, int, int], int]
    formula: Callable[[Any], str]
    holds_cache: bool = True  # False: a hybrid's layer that mixes no tokens (MLP, MoE): 0 bytes, measured by no layer


def design_of_class(layer_class: Callable[..., nn.Module], cache_bytes: Callable[..., int], formula: str) -> Design:
    """A Design for a module of the shape attn_core's new designs share: layer_class(config, device=, dtype=) that
    constructs on the meta device, init_from_seed(seed), cache_after(tokens, batch_size); its module's
    cache_bytes_formula and CACHE_FORMULA."""

    def build(config: Any, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None) -> nn.Module:
        target = torch.device(device) if device is not None else torch.get_default_device()
        if seed is None or target.type == "meta":
            return layer_class(config, device=target, dtype=dtype)
        layer = layer_class(config, device="meta", dtype=dtype).to_empty(device=target)
        layer.init_from_seed(seed)  # type: ignore[operator]  # the shared shape's method (see the docstring)
        return layer

    return Design(build=build, cache_bytes=cache_bytes, formula=lambda config: formula)


DESIGNS: dict[type, Design] = {
    LayerShape: Design(build=_build_layer_shape, cache_bytes=layer_shape_cache_bytes, formula=layer_shape_formula),
}

Reader = Callable[[Mapping[str, Any], int], tuple[str, Any]]
READERS: dict[str, Reader] = {}  # filled below, one reader per model_type


def design_for(config: Any) -> Design:
    design = DESIGNS.get(type(config))
    if design is None:
        raise ValueError(f"{type(config).__name__} has no Design in attn_core.hf.DESIGNS.")
    return design


def stands_alone(config: Any) -> bool:
    """Whether the layer build_layer makes from config runs with a cache of its own: not a hybrid's feed-forward
    block (none is built), nor a layer that reads another layer's cache (Gemma's shared KV: cache=the source's;
    GLM-5's shared top-k: topk_from=)."""
    return (
        design_for(config).holds_cache
        and getattr(config, "kv_source", None) is None
        and not hasattr(config, "reads_layer")
    )


# --- the entry points -----------------------------------------------------------------------------------------------
def read_layer(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, Any]:
    """(kind, layer config) of layer layer_idx of the model hf describes."""
    hf = _text_config(hf)
    reader = READERS[hf["model_type"]]
    layer_index(hf, layer_idx)
    return reader(hf, layer_idx)


def build_layer(
    hf: Mapping[str, Any],
    layer_idx: int,
    seed: int | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype | str | None = None,
) -> nn.Module:
    """attn_core's layer for layer layer_idx of the model hf (a config.json dict) describes, with HF's parameter
    names; seeded weights with a seed (attn_core.build), torch's default init without one, nothing on the meta
    device."""
    _, config = read_layer(hf, layer_idx)
    return _built(config, seed, device, None if dtype is None else as_dtype(dtype))


def _built(config: Any, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None) -> nn.Module:
    """The layer for config; torch's own refusal of its sizes (a storage size that overflows, memory it cannot get)
    is the config's numbers, said as a ValueError like every other bad field. Built on the meta device first: weights
    past any machine's memory are refused before anything is allocated."""
    try:
        meta = design_for(config).build(config, None, "meta", dtype)
        size = bytes_per_element(dtype or torch.get_default_dtype())
        weights = sum(p.numel() for p in meta.parameters()) * size
        within_any_machine(Footprint("weights", weights, fields=("hidden_size", "the heads", "their widths")))
        if device is not None and torch.device(device).type == "meta" and seed is None:
            return meta
        return design_for(config).build(config, seed, device, dtype)
    except RuntimeError as error:
        raise ValueError(
            f"the config's sizes are too large to build its layers ({error}): check hidden_size, the heads and their "
            "widths."
        ) from error


@dataclass(frozen=True)
class KindSummary:
    """The layers of one kind: how many, what their caches hold and what one decoding step reads, in bytes."""

    kind: str
    count: int
    nbytes: int
    read_nbytes: int
    formula: str


class ModelDescription:
    """Every layer's kind and config, and their caches measured on the meta device (no memory, no attention)."""

    def __init__(self, model_type: str, layers: list[tuple[str, Any]]) -> None:
        self.model_type = model_type
        self.layer_kinds: list[str] = [kind for kind, _ in layers]
        self.layer_configs: list[Any] = [config for _, config in layers]
        # layer -> the earlier layer whose cache it reads (GLM-5's shared layers: the top-k of a full layer)
        self.reads_from: dict[int, int] = {
            i: config.reads_layer for i, config in enumerate(self.layer_configs) if hasattr(config, "reads_layer")
        }
        self._meta_layers: dict[tuple[Any, torch.dtype], nn.Module] = {}

    @property
    def mixing_layers(self) -> int:
        """How many layers mix tokens (attention or a state): a hybrid's MLP and MoE layers (Nemotron-H's E and -)
        are layers of their own in its config, where other models count them inside each attention layer."""
        return sum(not isinstance(config, FeedForwardBlock) for config in self.layer_configs)

    @property
    def kv_sources(self) -> list[int | None]:
        """Per layer, the layer whose cache it reads (Gemma 3n's and Gemma 4's kv sharing: it holds nothing), None
        for a layer with a cache of its own."""
        return [getattr(config, "kv_source", None) for config in self.layer_configs]

    def _measured(
        self, config: Any, tokens: int, batch: int, dtype: torch.dtype, storage: Storage = "reference"
    ) -> tuple[int, int]:
        if not design_for(config).holds_cache:
            return 0, 0
        # A layer's place in the model sets its weights' values (lightning's decay rates), not its cache: one meta
        # layer measures every layer of the same shapes (MiniMax-M1 at 4,096 layers built 3,584 of them)
        placed = is_dataclass(config) and not isinstance(config, type) and hasattr(config, "layer_idx")
        key = (replace(config, layer_idx=0) if placed else config, dtype)
        if key not in self._meta_layers:
            self._meta_layers[key] = _built(key[0], None, "meta", dtype)
        cache = self._meta_layers[key].cache_after(tokens, batch_size=batch)  # type: ignore[operator]
        layout = served_layout(config) if storage == "served" else None
        if layout is not None:  # the same cache's rows, in the served format
            return layout.bytes(cache.shapes(), tokens)
        return cache.nbytes, cache.read_nbytes

    def served_formats(self) -> dict[str, tuple[ServedFormat, ...]]:
        """Per kind, the formats its layers' caches are served in, each with its source (SERVED_AS_HELD: bf16 as HF's
        module holds it)."""
        formats: dict[str, tuple[ServedFormat, ...]] = {}
        for kind, config in zip(self.layer_kinds, self.layer_configs, strict=True):
            layout = served_layout(config)
            formats.setdefault(kind, (SERVED_AS_HELD,) if layout is None else layout.formats)
        return formats

    @property
    def served_source(self) -> str:
        """Where the served formats of this model's caches come from, each source once."""
        sources = [f.source for formats in self.served_formats().values() for f in formats]
        return "; ".join(dict.fromkeys(sources))

    def kinds(
        self,
        *,
        tokens: int,
        batch: int = 1,
        dtype: torch.dtype | str = "bfloat16",
        storage: Storage = "reference",
    ) -> list[KindSummary]:
        """Per kind, in order of first appearance: its count, its layers' cache bytes after `tokens` tokens, the
        bytes the decoding step of token `tokens` reads from them, and its formula. storage="reference": as HF's
        modules hold the caches, every number in `dtype`; "served": in the formats the models' serving code keeps
        (attn_core.served; bf16 where it keeps what HF's modules hold), which fix their own number types."""
        tokens, batch, torch_dtype = _checked(tokens, batch, dtype, storage)
        self._within_any_machine(tokens, batch, torch_dtype)
        measured: dict[Any, tuple[int, int]] = {}
        totals: dict[str, list[int]] = {}
        formulas: dict[str, str] = {}
        for kind, config in zip(self.layer_kinds, self.layer_configs, strict=True):
            if config not in measured:
                measured[config] = self._measured(config, tokens, batch, torch_dtype, storage)
            held, read = measured[config]
            total = totals.setdefault(kind, [0, 0, 0])
            total[0], total[1], total[2] = total[0] + 1, total[1] + held, total[2] + read
            formulas.setdefault(kind, design_for(config).formula(config))
        return [KindSummary(kind, count, held, read, formulas[kind]) for kind, (count, held, read) in totals.items()]

    def _within_any_machine(self, tokens: int, batch: int, dtype: torch.dtype) -> None:
        """Every layer's cache by its closed form, refused past any machine's memory before torch is asked for
        tensors of that size."""
        size = bytes_per_element(dtype)
        counts = Counter(self.layer_configs)
        held = sum(design_for(c).cache_bytes(c, tokens, batch, size) * n for c, n in counts.items())
        within_any_machine(Footprint("cache", held, tokens, batch))

    def cache_bytes(
        self,
        *,
        tokens: int,
        batch: int = 1,
        dtype: torch.dtype | str = "bfloat16",
        storage: Storage = "reference",
    ) -> int:
        """Bytes every layer's cache holds after `tokens` tokens (storage: see kinds)."""
        return sum(kind.nbytes for kind in self.kinds(tokens=tokens, batch=batch, dtype=dtype, storage=storage))

    def read_bytes(
        self,
        *,
        tokens: int,
        batch: int = 1,
        dtype: torch.dtype | str = "bfloat16",
        storage: Storage = "reference",
    ) -> int:
        """Bytes the decoding step of token `tokens` (position tokens - 1) reads from every layer's cache, its own
        keys included: all held for a full layer, the sinks and the window for a sliding one (storage: see kinds)."""
        kinds = self.kinds(tokens=tokens, batch=batch, dtype=dtype, storage=storage)
        return sum(kind.read_nbytes for kind in kinds)

    def formula_bytes(self, *, tokens: int, batch: int = 1, dtype: torch.dtype | str = "bfloat16") -> int:
        """cache_bytes from each design's closed form instead of the meta-device caches (they agree)."""
        tokens, batch, torch_dtype = _checked(tokens, batch, dtype)
        size = bytes_per_element(torch_dtype)
        return sum(design_for(c).cache_bytes(c, tokens, batch, size) for c in self.layer_configs)


def describe_model(hf: Mapping[str, Any]) -> ModelDescription:
    """Every layer of the model hf (a config.json dict) describes: kinds, configs and caches (nothing allocated)."""
    hf = _text_config(hf)
    hf = hf if isinstance(hf, ReadOnce) else ReadOnce(hf)  # each layer's reader keeps what it works out from it all
    layers = [READERS[hf["model_type"]](hf, i) for i in range(int_field(hf, "num_hidden_layers"))]
    return ModelDescription(hf["model_type"], layers)


def _text_config(hf: Mapping[str, Any]) -> Mapping[str, Any]:
    """hf itself, or its text_config for a multimodal wrapper (gemma3); a ValueError if its model_type has no
    reader."""
    if not isinstance(hf, Mapping):
        raise ValueError(f"the config must be a dict (a config.json read with json.load), got {type(hf).__name__}.")
    model_type = hf.get("model_type")
    if isinstance(model_type, str) and model_type in WRAPPERS:
        text = hf.get("text_config")
        if not isinstance(text, Mapping):
            raise ValueError(f"model_type={model_type!r} needs text_config, a dict: it is missing.")
        hf = ReadOnce({"model_type": WRAPPERS[model_type], **text}, prefix="text_config.")  # errors say where
        model_type = hf["model_type"]
    if not isinstance(model_type, str) or model_type not in READERS:  # a list or a dict included: not a key
        raise ValueError(f"model_type={model_type!r} is not supported: supported are {_supported()}.")
    return hf


def _supported() -> str:
    return ", ".join(sorted({*READERS, *WRAPPERS}))


def _checked(
    tokens: object, batch: object, dtype: torch.dtype | str, storage: object = "reference"
) -> tuple[int, int, torch.dtype]:
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 <= tokens <= MAX_TOKENS:
        raise ValueError(f"tokens must be a whole number from 0 to {MAX_TOKENS:,}, got {tokens!r}.")
    if not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be a whole number from 1 to {MAX_BATCH:,}, got {batch!r}.")
    if storage not in STORAGES:
        raise ValueError(f"storage must be 'reference' or 'served', got {storage!r}.")
    torch_dtype = as_dtype(dtype)
    if storage == "served" and torch_dtype != torch.bfloat16:
        raise ValueError(
            f"dtype={dtype!r} with storage='served': served formats fix their own numbers (bf16 where a model is "
            "served as HF holds it); leave dtype at bfloat16, or use storage='reference'."
        )
    return tokens, batch, torch_dtype


# --- reading config fields (attn_core.hf_fields) ------------------------------------------------------------
def _window(hf: Mapping[str, Any], default: int | None, context: int) -> int | None:
    window = hf.get("sliding_window", default)
    if window is None:
        return None
    window = int_field(hf, "sliding_window", window)
    if window > context:
        raise ValueError(
            f"sliding_window={window} is larger than the context (max_position_embeddings={context}): a window that "
            "long is no window; check the config."
        )
    return window


def _grouped(
    hf: Mapping[str, Any],
    *,
    kv_heads_default: int | None,
    head_dim_default: int | None,
    bias: bool,
    o_bias: bool | None = None,
    theta: float,
    options: AttentionOptions,
    rope: bool = True,
    rope_interleave: bool = False,
    eps_default: float = 1e-6,
) -> LayerShape:
    """A grouped layer: hidden_size, num_attention_heads, num_key_value_heads and head_dim as the config class
    resolves them (a missing num_key_value_heads: kv_heads_default, None meaning num_attention_heads); rope False for
    a NoPE layer."""
    d_model, heads = int_field(hf, "hidden_size"), int_field(hf, "num_attention_heads")
    kv_heads = int_field(hf, "num_key_value_heads", heads if kv_heads_default is None else kv_heads_default)
    head_dim = int_field(hf, "head_dim", d_model // heads if head_dim_default is None else head_dim_default)
    if heads % kv_heads:  # said of num_key_value_heads, the field that groups the heads
        raise ConfigFieldError(
            "num_key_value_heads", kv_heads, Need("divides", other="num_attention_heads", other_value=heads)
        )
    variant: GroupedVariant = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    cfg = AttentionConfig(
        variant,
        d_model=d_model,
        n_heads=heads,
        n_kv_heads=kv_heads if variant == "gqa" else None,
        head_dim=head_dim,
        rope_theta=theta,
        rope=rope,
        rope_interleave=rope_interleave,
        bias=bias,
        o_bias=o_bias,
        norm_eps=float_field(hf, "rms_norm_eps", eps_default),
    )
    return LayerShape(cfg, options)


def _kind(shape: LayerShape) -> str:
    return "sliding" if shape.options.window is not None else "full"


# --- one reader per model_type ------------------------------------------------------------------------------------
def read_llama(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """LlamaConfig: num_key_value_heads defaults to the heads, head_dim to hidden_size / heads, no window."""
    context = int_field(hf, "max_position_embeddings", 2048)
    theta, scaling = rope_settings(hf, 10000.0, context)
    bias = bool_field(hf, "attention_bias", False)
    options = AttentionOptions(rope_scaling=scaling)
    shape = _grouped(hf, kv_heads_default=None, head_dim_default=None, bias=bias, theta=theta, options=options)
    return "full", shape


def read_mistral(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """MistralConfig: 8 KV heads and sliding_window 4096 unless given (null: full attention); every layer alike."""
    context = int_field(hf, "max_position_embeddings", 4096 * 32)
    theta, scaling = rope_settings(hf, 10000.0, context)
    options = AttentionOptions(window=_window(hf, 4096, context), rope_scaling=scaling)
    shape = _grouped(hf, kv_heads_default=8, head_dim_default=None, bias=False, theta=theta, options=options)
    return _kind(shape), shape


def _qwen(hf: Mapping[str, Any], layer_idx: int, *, qwen3: bool) -> tuple[str, LayerShape]:
    """Qwen2Config / Qwen3Config: a window only with use_sliding_window, on layers from max_window_layers on (or as
    layer_types say); Qwen2 has biases on q, k, v (not o), Qwen3 attention_bias on all four and q/k RMSNorm."""
    context = int_field(hf, "max_position_embeddings", 32768)
    theta, scaling = rope_settings(hf, 10000.0, context)
    use_window = bool_field(hf, "use_sliding_window", False)
    window = _window(hf, 4096, context) if use_window else None
    first_windowed = int_field(hf, "max_window_layers", 28, minimum=0)
    types = layer_types(
        hf,
        GROUPED_LAYER_TYPES,
        lambda i: "sliding_attention" if window is not None and i >= first_windowed else "full_attention",
    )
    layer_window = window if types[layer_idx] == "sliding_attention" else None
    if types[layer_idx] == "sliding_attention" and window is None:
        raise ValueError("layer_types names a sliding_attention layer, but the config has no sliding_window in use.")
    qk_norm: QkNorm | None = "rms" if qwen3 else None
    options = AttentionOptions(window=layer_window, qk_norm=qk_norm, rope_scaling=scaling)
    if qwen3:
        bias = bool_field(hf, "attention_bias", False)
        shape = _grouped(hf, kv_heads_default=32, head_dim_default=128, bias=bias, theta=theta, options=options)
    else:
        shape = _grouped(
            hf, kv_heads_default=32, head_dim_default=None, bias=True, o_bias=False, theta=theta, options=options
        )
    return _kind(shape), shape


def read_qwen2(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    return _qwen(hf, layer_idx, qwen3=False)


def read_qwen3(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    return _qwen(hf, layer_idx, qwen3=True)


def read_gemma3_text(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """Gemma3TextConfig: local (sliding) layers and one global layer per sliding_window_pattern (6); local layers
    use rope_local_base_freq (10,000) and no scaling, global ones rope_theta (1,000,000) and rope_scaling (both in
    transformers 5's nested rope_parameters); q/k RMSNorm with 1 + weight; scores scaled by
    query_pre_attn_scalar ** -0.5."""
    if hf.get("attn_logit_softcapping") is not None:
        raise ValueError("attn_logit_softcapping is not supported (Gemma 3 publishes none; Gemma 2 caps at 50).")
    if hf.get("use_bidirectional_attention"):
        raise ValueError("use_bidirectional_attention is not supported: these layers are causal.")
    context = int_field(hf, "max_position_embeddings", 131072)
    pattern = int_field(hf, "sliding_window_pattern", 6)
    types = layer_types(
        hf, GROUPED_LAYER_TYPES, lambda i: "sliding_attention" if (i + 1) % pattern else "full_attention"
    )
    layer_type = types[layer_idx]
    nested = hf.get("rope_parameters")
    if isinstance(nested, Mapping) and layer_type in nested:
        params = nested[layer_type] or {}
        # a nested entry without its theta takes the flat field, as Gemma3TextConfig fills it in
        if layer_type == "sliding_attention":
            default_theta = float_field(hf, "rope_local_base_freq", 10000.0)
        else:
            default_theta = float_field(hf, "rope_theta", 1_000_000.0)
        theta, scaling = rope_settings(hf, default_theta, context, params=params, name=f"rope_parameters.{layer_type}")
    elif layer_type == "sliding_attention":
        theta, scaling = float_field(hf, "rope_local_base_freq", 10000.0), RopeScaling()
    else:
        theta = float_field(hf, "rope_theta", 1_000_000.0)
        scaling = RopeScaling.from_hf(hf.get("rope_scaling"), context, name=field_name(hf, "rope_scaling"))
    window = _window(hf, 4096, context) if layer_type == "sliding_attention" else None
    options = AttentionOptions(
        window=window,
        qk_norm="rms_unit_offset",
        scale=float_field(hf, "query_pre_attn_scalar", 256) ** -0.5,
        rope_scaling=scaling,
    )
    bias = bool_field(hf, "attention_bias", False)
    shape = _grouped(hf, kv_heads_default=4, head_dim_default=256, bias=bias, theta=theta, options=options)
    return _kind(shape), shape


GPT_OSS_ROPE = {
    "rope_type": "yarn",
    "factor": 32.0,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "truncate": False,
    "original_max_position_embeddings": 4096,
}  # GptOssConfig's default rope_parameters


def read_gpt_oss(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """GptOssConfig: sliding (window 128) and full layers alternating, a learned sink logit per head, biases on all
    four projections, YaRN (factor 32) with rope_theta 150,000."""
    context = int_field(hf, "max_position_embeddings", 131072)
    rope_given = hf.get("rope_parameters") or hf.get("rope_scaling")
    theta, scaling = rope_settings(hf if rope_given else {**hf, "rope_parameters": GPT_OSS_ROPE}, 150000.0, context)
    types = layer_types(hf, GROUPED_LAYER_TYPES, lambda i: "sliding_attention" if (i + 1) % 2 else "full_attention")
    window = _window(hf, 128, context) if types[layer_idx] == "sliding_attention" else None
    options = AttentionOptions(window=window, learned_sinks=True, rope_scaling=scaling)
    bias = bool_field(hf, "attention_bias", True)
    shape = _grouped(hf, kv_heads_default=8, head_dim_default=64, bias=bias, theta=theta, options=options)
    return _kind(shape), shape


def read_deepseek_v3(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """DeepseekV3Config: MLA on every layer; with YaRN, its frequencies and attention factor on the rotary part, and
    the scores scaled by yarn_mscale(factor, mscale_all_dim)² on top of 1/sqrt(d_nope + d_h^R), as
    DeepseekV3Attention does."""
    context = int_field(hf, "max_position_embeddings", 4096)
    theta, scaling = rope_settings(hf, 10000.0, context)
    q_lora_rank = hf.get("q_lora_rank", 1536)
    value_width = int_field(hf, "v_head_dim", 128)
    cfg = AttentionConfig(
        "mla",
        d_model=int_field(hf, "hidden_size"),
        n_heads=int_field(hf, "num_attention_heads"),
        head_dim=value_width,
        kv_lora_rank=int_field(hf, "kv_lora_rank", 512),
        qk_nope_head_dim=int_field(hf, "qk_nope_head_dim", 128),
        qk_rope_head_dim=int_field(hf, "qk_rope_head_dim", 64),
        v_head_dim=value_width,
        q_lora_rank=None if q_lora_rank is None else int_field(hf, "q_lora_rank"),
        rope_interleave=bool_field(hf, "rope_interleave", True),
        rope_theta=theta,
        bias=bool_field(hf, "attention_bias", False),
        norm_eps=float_field(hf, "rms_norm_eps", 1e-6),
    )
    scale = mla_softmax_scale(rope_parameters(hf), scaling, cfg.qk_head_dim)
    return "mla", LayerShape(cfg, AttentionOptions(scale=scale, rope_scaling=scaling))


READERS.update(
    {
        "llama": read_llama,
        "mistral": read_mistral,
        "qwen2": read_qwen2,
        "qwen3": read_qwen3,
        "gemma3_text": read_gemma3_text,
        "gpt_oss": read_gpt_oss,
        "deepseek_v3": read_deepseek_v3,
    }
)
WRAPPERS = {
    "gemma3": "gemma3_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "gemma3n": "gemma3n_text",
    "gemma4": "gemma4_text",
    "llama4": "llama4_text",
}  # multimodal configs whose text_config is read


# --- NoPE layers and chunked local attention (Llama 4, SmolLM3) ------------------------------------------------------
def uses_rope(hf: Mapping[str, Any], layer_idx: int, *, empty_derives: bool) -> bool:
    """Whether layer layer_idx rotates: no_rope_layers as given (1 RoPE, 0 NoPE; at least num_hidden_layers entries),
    else NoPE on every no_rope_layer_interval-th layer (4), as the config classes derive it. Llama4TextConfig derives
    it for an empty list too (empty_derives), SmolLM3Config only when it is absent. Only this layer's entry is
    checked: describe_model reads every layer, so a whole-list check here would cost layers² (seconds at 4096)."""
    layers = int_field(hf, "num_hidden_layers")
    given = hf.get("no_rope_layers")
    if given is None or (empty_derives and given == []):
        return (layer_idx + 1) % int_field(hf, "no_rope_layer_interval", 4) != 0
    flag = given[layer_idx] if isinstance(given, list | tuple) and len(given) >= layers else None
    if not isinstance(flag, int) or flag not in (0, 1):  # bool is an int
        raise ValueError(
            f"config field 'no_rope_layers' must list at least {layers} entries (num_hidden_layers), each 1 (the "
            "layer uses RoPE) or 0 (NoPE)."
        )
    return bool(flag)


def _layer_type(hf: Mapping[str, Any], layer_idx: int, known: tuple[str, ...], default: str) -> str:
    """layer_types[layer_idx] as given, else default, this layer's as the config class derives it. This entry is
    checked (as uses_rope's), the whole list only when it is wrong, for layer_types' message."""
    given = hf.get("layer_types")
    if given is None:
        return default
    entry = (
        given[layer_idx] if isinstance(given, list | tuple) and len(given) == int_field(hf, "num_hidden_layers") else 0
    )
    if isinstance(entry, str) and entry in known:
        return entry
    return layer_types(hf, known, lambda i: default)[layer_idx]


def _nope_kind(shape: LayerShape) -> str:
    """full, sliding or chunked; a layer without RoPE is "nope" (full attention) or that kind + "_nope"."""
    base = "chunked" if shape.options.chunk is not None else _kind(shape)
    if shape.attention.rope:
        return base
    return "nope" if base == "full" else f"{base}_nope"


def _temperature_tuning(hf: Mapping[str, Any]) -> bool:
    """attn_temperature_tuning as transformers 4 read it, by truth: Llama 4 Scout's config.json gives 4."""
    value = field(hf, "attn_temperature_tuning", True)
    if not isinstance(value, int):  # bool is an int
        raise ValueError(f"config field 'attn_temperature_tuning' must be true or false, got {value!r}.")
    if value < 0:
        raise ValueError(f"config field 'attn_temperature_tuning' must be true or false (or 0 or more), got {value}.")
    return bool(value)


def read_llama4_text(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """Llama4TextConfig: chunked local attention (attention_chunk_size 8192) on its RoPE layers, and a NoPE global
    layer every 4th (no_rope_layers; layer_types as given, else chunked where the layer rotates); RoPE on interleaved
    pairs (HF's complex rotation) with llama3 scaling, then the weightless q/k norm (use_qk_norm) on RoPE layers;
    on NoPE layers the query temperature (attn_temperature_tuning, floor_scale 8192, attn_scale 0.1)."""
    context = int_field(hf, "max_position_embeddings", 131072)
    theta, scaling = rope_settings(hf, 500000.0, context)
    rotates = uses_rope(hf, layer_idx, empty_derives=True)
    default = "chunked_attention" if rotates else "full_attention"
    chunk = None
    if _layer_type(hf, layer_idx, ("chunked_attention", "full_attention"), default) == "chunked_attention":
        if "attention_chunk_size" in hf and hf["attention_chunk_size"] is None:
            raise ValueError(
                f"config field 'attention_chunk_size' is null, but layer {layer_idx} is chunked_attention "
                "(layer_types or no_rope_layers): give the chunk's tokens."
            )
        chunk = int_field(hf, "attention_chunk_size", 8192)
    temperature = None
    if not rotates and _temperature_tuning(hf):
        temperature = QueryTemperature(int_field(hf, "floor_scale", 8192), float_field(hf, "attn_scale", 0.1))
    qk_norm: QkNorm | None = "l2" if rotates and bool_field(hf, "use_qk_norm", True) else None
    options = AttentionOptions(chunk=chunk, qk_norm=qk_norm, temperature=temperature, rope_scaling=scaling)
    shape = _grouped(
        hf,
        kv_heads_default=8,
        head_dim_default=128,
        bias=bool_field(hf, "attention_bias", False),
        theta=theta,
        options=options,
        rope=rotates,
        rope_interleave=True,
        eps_default=1e-5,
    )
    return _nope_kind(shape), shape


def read_smollm3(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """SmolLM3Config: Llama's layer with NoPE on every no_rope_layer_interval-th layer (no_rope_layers), rope_theta
    2,000,000 unless given; a window only with use_sliding_window, and then on the NoPE layers (layer_types)."""
    context = int_field(hf, "max_position_embeddings", 32768)
    theta, scaling = rope_settings(hf, 2_000_000.0, context)
    rotates = uses_rope(hf, layer_idx, empty_derives=False)
    window = _window(hf, None, context) if bool_field(hf, "use_sliding_window", False) else None
    default = "sliding_attention" if window is not None and not rotates else "full_attention"
    sliding = _layer_type(hf, layer_idx, GROUPED_LAYER_TYPES, default) == "sliding_attention"
    if sliding and window is None:
        raise ValueError("layer_types names a sliding_attention layer, but the config has no sliding_window in use.")
    options = AttentionOptions(window=window if sliding else None, rope_scaling=scaling)
    bias = bool_field(hf, "attention_bias", False)
    shape = _grouped(
        hf,
        kv_heads_default=4,
        head_dim_default=None,
        bias=bias,
        theta=theta,
        options=options,
        rope=rotates,
    )
    return _nope_kind(shape), shape


READERS.update({"llama4_text": read_llama4_text, "smollm3": read_smollm3})


# --- the designs after MLA that live in modules of their own --------------------------------------------------------
def read_kimi_linear(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, Any]:
    """KimiLinearConfig: KDA layers, and MLA without RoPE on the full_attn_layers (a LayerShape, as DeepSeek's)."""
    kind, config = kimi_linear_layer(hf, layer_idx)
    return kind, LayerShape(config) if isinstance(config, AttentionConfig) else config


def read_deepseek_v32(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, Any]:
    """DeepseekV32Config: MLA with the lightning indexer's top-k reading on every layer."""
    return "sparse", DSAConfig.from_hf(hf, layer_idx)


def read_deepseek_v4(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, Any]:
    """DeepseekV4Config: a sliding window on every layer, with compressed entries picked top-k (csa) or read whole
    (hca) on the compressed ones."""
    config = CompressedConfig.from_hf(hf, layer_idx)
    return config.kind, config


def read_kv_sharing(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, Any]:
    """Gemma3nTextConfig / Gemma4TextConfig: sliding and full layers with q/k/v norms; the last
    num_kv_shared_layers read an earlier layer's cache ("shared"); Gemma 4's global layers with K = V."""
    config = KVSharingConfig.from_hf(hf, layer_idx)
    return config.kind, config


READERS.update(
    {
        **dict.fromkeys(QWEN_MODEL_TYPES, qwen_hybrid_layer),
        **dict.fromkeys(kv_sharing.MODEL_TYPES, read_kv_sharing),
        **dict.fromkeys(KIMI_MODEL_TYPES, read_kimi_linear),
        "deepseek_v32": read_deepseek_v32,
        "deepseek_v4": read_deepseek_v4,
    }
)
DESIGNS.update(
    {
        GatedDeltaNetConfig: design_of_class(GatedDeltaNet, linear.cache_bytes_formula, linear.CACHE_FORMULA),
        KimiDeltaConfig: design_of_class(KimiDeltaAttention, linear.cache_bytes_formula, linear.CACHE_FORMULA),
        GatedAttentionConfig: design_of_class(GatedAttention, gated.cache_bytes_formula, gated.CACHE_FORMULA),
        DSAConfig: design_of_class(DeepSeekSparseAttention, dsa.cache_bytes_formula, dsa.CACHE_FORMULA),
        KVSharingConfig: Design(
            build=design_of_class(KVSharingAttention, kv_sharing.cache_bytes_formula, "").build,
            cache_bytes=kv_sharing.cache_bytes_formula,
            formula=kv_sharing.formula,
        ),
        CompressedConfig: Design(
            build=design_of_class(CompressedAttention, compressed.cache_bytes_formula, "").build,
            cache_bytes=compressed.cache_bytes_formula,
            formula=lambda config: compressed.CACHE_FORMULA[config.kind],
        ),
    }
)


def read_mamba_hybrid(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, Any]:
    """NemotronHConfig (hybrid_override_pattern) and GraniteMoeHybridConfig (layer_types): Mamba-2 layers, grouped
    attention layers (a LayerShape), and MLP or MoE layers that hold no cache."""
    kind, config = hybrid_layer(hf, layer_idx)
    return kind, LayerShape(*config) if isinstance(config, tuple) else config


def _no_layer(block: FeedForwardBlock, *_: object) -> nn.Module:
    raise ValueError(
        f"this layer is an {block.kind} layer: it mixes no tokens and holds no cache, and attn_core builds token "
        "mixers only (the Mamba-2 and attention layers)."
    )


READERS.update(dict.fromkeys(HYBRID_MODEL_TYPES, read_mamba_hybrid))
DESIGNS.update(
    {
        Mamba2Config: design_of_class(Mamba2Mixer, mamba.cache_bytes_formula, mamba.CACHE_FORMULA),
        FeedForwardBlock: Design(_no_layer, mamba.feed_forward_bytes, mamba.feed_forward_formula, holds_cache=False),
    }
)


if TYPE_CHECKING:  # mypy checks here that every design's layer meets the contract, and its cache the KVCache protocol

    def _meet_the_contract(
        grouped: GroupedQueryAttention,
        latent: MultiHeadLatentAttention,
        sparse: DeepSeekSparseAttention,
        compressed: CompressedAttention,
        gated: GatedAttention,
        delta: GatedDeltaNet,
        kimi: KimiDeltaAttention,
        kv_sharing: KVSharingAttention,
        mamba2: Mamba2Mixer,
    ) -> tuple[
        CachedLayer[GroupedKVCache | WindowedKVCache | ChunkedKVCache],
        CachedLayer[LatentKVCache],
        CachedLayer[DSACache],
        CachedLayer[CompressedCache],
        CachedLayer[GroupedKVCache],
        CachedLayer[LinearStateCache],
        CachedLayer[LinearStateCache],
        CachedLayer[LayerCache],
        CachedLayer[LinearStateCache],
    ]:
        return grouped, latent, sparse, compressed, gated, delta, kimi, kv_sharing, mamba2


# --- GLM-5 and MiniMax ------------------------------------------------------------------------------------------------
def read_minimax(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, Any]:
    """MiniMaxConfig (and MiniMax's own config.json: attn_type_list, model_type minimax_m1): lightning attention
    ("linear") on linear_attention layers, GQA (8 KV heads unless given, head_dim hidden_size / heads unless given,
    rope_theta 1,000,000) on full_attention ones, windowed where sliding_window is set. MiniMax's own code rotates
    only rotary_dim (64) of each softmax head's 128 dims; HF's MiniMaxAttention, this layer's reference, rotates
    them all. Either way the cache is GQA's."""
    kind = minimax_layer_types(hf)[layer_index(hf, layer_idx)]
    if kind == "linear_attention":
        return "linear", LightningConfig.from_hf(hf, layer_idx)
    context = int_field(hf, "max_position_embeddings", 4096 * 32)
    theta, scaling = rope_settings(hf, 1_000_000.0, context)
    options = AttentionOptions(window=_window(hf, None, context), rope_scaling=scaling)
    shape = _grouped(hf, kv_heads_default=8, head_dim_default=None, bias=False, theta=theta, options=options)
    return _kind(shape), shape


def read_minimax_m2(hf: Mapping[str, Any], layer_idx: int) -> tuple[str, LayerShape]:
    """MiniMaxM2Config: full softmax attention on every layer, read as plain GQA (48 query heads, 8 KV heads of 128
    unless given), a preset of its cache (attn_core.presets). Its cache is GQA's exactly; its layer is not built as
    HF's MiniMaxM2Attention: that one RMS-normalises q and k over all of a layer's heads and rotates rotary_dim of
    each head, so HF's state_dict (q_norm, k_norm) does not load into the layer built here."""
    if "linear_attention" in minimax_layer_types(hf):
        raise ValueError("config field 'attn_type_list' names lightning layers: MiniMax-M2 has softmax layers only.")
    context = int_field(hf, "max_position_embeddings", 196608)
    theta, scaling = rope_settings(hf, 5_000_000.0, context)
    options = AttentionOptions(window=_window(hf, None, context), rope_scaling=scaling)
    shape = _grouped(hf, kv_heads_default=8, head_dim_default=128, bias=False, theta=theta, options=options)
    return _kind(shape), shape


READERS.update(
    {
        "glm_moe_dsa": read_glm_moe_dsa,
        **dict.fromkeys(MINIMAX_MODEL_TYPES, read_minimax),
        "minimax_m2": read_minimax_m2,
    }
)
DESIGNS.update(
    {
        SharedTopKConfig: design_of_class(
            SharedTopKAttention, glm_dsa.shared_cache_bytes_formula, glm_dsa.SHARED_CACHE_FORMULA
        ),
        LightningConfig: design_of_class(LightningAttention, lightning.cache_bytes_formula, lightning.CACHE_FORMULA),
    }
)

if TYPE_CHECKING:  # as above, for GLM-5's shared layers and MiniMax's lightning layers

    def _meet_the_contract_too(
        shared: SharedTopKAttention, lightning_layer: LightningAttention
    ) -> tuple[CachedLayer[LatentKVCache], CachedLayer[LightningStateCache]]:
        return shared, lightning_layer
