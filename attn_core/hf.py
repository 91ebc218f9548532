"""Any supported model's attention from its config.json: build one layer, or describe every layer's cache.

    cfg = json.loads(Path("config.json").read_text())   # as published, or transformers' config.to_dict()
    layer = build_layer(cfg, layer_idx=3, seed=0)        # takes HF's self_attn.state_dict() with strict=True
    model = describe_model(cfg)                          # nothing allocated: caches measured on the meta device
    model.layer_kinds                                    # ["sliding", "full", ...]
    model.cache_bytes(tokens=131072, batch=1, dtype="bfloat16")

Two tables drive both: READERS maps a model_type to a function (config dict, layer index) -> (kind, layer config),
and DESIGNS maps a layer config's type to how it is built and what its cache weighs (the closed form and its one-line
formula). Field names and defaults are those of transformers' configuration_<model_type>.py: a config.json may leave
out any field its config class defaults, except hidden_size, num_attention_heads and num_hidden_layers, which say
what the model is. A new design adds a reader and, for a new layer config type, a Design (ARCHITECTURE.md, "Where
things go").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from . import compressed, dsa, gated, linear, mamba
from .accounting import as_dtype, bytes_per_element
from .build import build_attention
from .compressed import CompressedAttention, CompressedConfig
from .config import AttentionConfig, GroupedVariant
from .contract import CachedLayer
from .dsa import DeepSeekSparseAttention, DSAConfig
from .gated import GatedAttention, GatedAttentionConfig
from .hf_fields import (
    bool_field,
    float_field,
    int_field,
    layer_index,
    layer_types,
    mla_softmax_scale,
    rope_parameters,
    rope_settings,
)
from .hybrids import KIMI_MODEL_TYPES, QWEN_MODEL_TYPES, kimi_linear_layer, qwen_hybrid_layer
from .linear import GatedDeltaNet, GatedDeltaNetConfig, KimiDeltaAttention, KimiDeltaConfig
from .mamba import HYBRID_MODEL_TYPES, FeedForwardBlock, Mamba2Config, Mamba2Mixer, hybrid_layer
from .options import NO_OPTIONS, AttentionOptions, QkNorm, held_tokens
from .rope import RopeScaling

if TYPE_CHECKING:
    from .cache import GroupedKVCache, LatentKVCache, WindowedKVCache
    from .compressed import CompressedCache
    from .dsa import DSACache
    from .grouped import GroupedQueryAttention
    from .latent import MultiHeadLatentAttention
    from .linear import LinearStateCache

GROUPED_LAYER_TYPES = ("full_attention", "sliding_attention")
# A cache at more tokens than this is a typo, not a question (a billion tokens; published contexts reach 10M).
MAX_TOKENS = 1 << 30
MAX_BATCH = 1 << 16


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
    is the config's numbers, said as a ValueError like every other bad field."""
    try:
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
        self._meta_layers: dict[tuple[Any, torch.dtype], nn.Module] = {}

    def _measured(self, config: Any, tokens: int, batch: int, dtype: torch.dtype) -> tuple[int, int]:
        if not design_for(config).holds_cache:
            return 0, 0
        key = (config, dtype)
        if key not in self._meta_layers:
            self._meta_layers[key] = _built(config, None, "meta", dtype)
        cache = self._meta_layers[key].cache_after(tokens, batch_size=batch)  # type: ignore[operator]
        return cache.nbytes, cache.read_nbytes

    def kinds(self, *, tokens: int, batch: int = 1, dtype: torch.dtype | str = "bfloat16") -> list[KindSummary]:
        """Per kind, in order of first appearance: its count, its layers' cache bytes after `tokens` tokens, the
        bytes the decoding step of token `tokens` reads from them, and its formula."""
        tokens, batch, torch_dtype = _checked(tokens, batch, dtype)
        measured: dict[Any, tuple[int, int]] = {}
        totals: dict[str, list[int]] = {}
        formulas: dict[str, str] = {}
        for kind, config in zip(self.layer_kinds, self.layer_configs, strict=True):
            if config not in measured:
                measured[config] = self._measured(config, tokens, batch, torch_dtype)
            held, read = measured[config]
            total = totals.setdefault(kind, [0, 0, 0])
            total[0], total[1], total[2] = total[0] + 1, total[1] + held, total[2] + read
            formulas.setdefault(kind, design_for(config).formula(config))
        return [KindSummary(kind, count, held, read, formulas[kind]) for kind, (count, held, read) in totals.items()]

    def cache_bytes(self, *, tokens: int, batch: int = 1, dtype: torch.dtype | str = "bfloat16") -> int:
        """Bytes every layer's cache holds after `tokens` tokens."""
        return sum(kind.nbytes for kind in self.kinds(tokens=tokens, batch=batch, dtype=dtype))

    def read_bytes(self, *, tokens: int, batch: int = 1, dtype: torch.dtype | str = "bfloat16") -> int:
        """Bytes the decoding step of token `tokens` (position tokens - 1) reads from every layer's cache, its own
        keys included: all held for a full layer, the sinks and the window for a sliding one."""
        return sum(kind.read_nbytes for kind in self.kinds(tokens=tokens, batch=batch, dtype=dtype))

    def formula_bytes(self, *, tokens: int, batch: int = 1, dtype: torch.dtype | str = "bfloat16") -> int:
        """cache_bytes from each design's closed form instead of the meta-device caches (they agree)."""
        tokens, batch, torch_dtype = _checked(tokens, batch, dtype)
        size = bytes_per_element(torch_dtype)
        return sum(design_for(c).cache_bytes(c, tokens, batch, size) for c in self.layer_configs)


def describe_model(hf: Mapping[str, Any]) -> ModelDescription:
    """Every layer of the model hf (a config.json dict) describes: kinds, configs and caches (nothing allocated)."""
    hf = _text_config(hf)
    layers = [READERS[hf["model_type"]](hf, i) for i in range(int_field(hf, "num_hidden_layers"))]
    return ModelDescription(hf["model_type"], layers)


def _text_config(hf: Mapping[str, Any]) -> Mapping[str, Any]:
    """hf itself, or its text_config for a multimodal wrapper (gemma3); a ValueError if its model_type has no
    reader."""
    if not isinstance(hf, Mapping):
        raise ValueError(f"the config must be a dict (a config.json read with json.load), got {type(hf).__name__}.")
    model_type = hf.get("model_type")
    if model_type in WRAPPERS:
        text = hf.get("text_config")
        if not isinstance(text, Mapping):
            raise ValueError(f"model_type={model_type!r} needs text_config, a dict: it is missing.")
        hf = {"model_type": WRAPPERS[model_type], **text}
        model_type = hf["model_type"]
    if model_type not in READERS:
        supported = ", ".join(sorted({*READERS, *WRAPPERS}))
        raise ValueError(f"model_type={model_type!r} is not supported: supported are {supported}.")
    return hf


def _checked(tokens: object, batch: object, dtype: torch.dtype | str) -> tuple[int, int, torch.dtype]:
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 <= tokens <= MAX_TOKENS:
        raise ValueError(f"tokens must be a whole number from 0 to {MAX_TOKENS:,}, got {tokens!r}.")
    if not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be a whole number from 1 to {MAX_BATCH:,}, got {batch!r}.")
    return tokens, batch, as_dtype(dtype)


# --- reading config fields (attn_core.hf_fields) ------------------------------------------------------------
def _window(hf: Mapping[str, Any], default: int | None, context: int) -> int | None:
    window = hf.get("sliding_window", default)
    if window is None:
        return None
    window = int_field({**hf, "sliding_window": window}, "sliding_window")
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
) -> LayerShape:
    """A grouped layer: hidden_size, num_attention_heads, num_key_value_heads and head_dim as the config class
    resolves them (a missing num_key_value_heads: kv_heads_default, None meaning num_attention_heads)."""
    d_model, heads = int_field(hf, "hidden_size"), int_field(hf, "num_attention_heads")
    kv_heads = int_field(hf, "num_key_value_heads", heads if kv_heads_default is None else kv_heads_default)
    head_dim = int_field(hf, "head_dim", d_model // heads if head_dim_default is None else head_dim_default)
    if heads % kv_heads:
        raise ValueError(
            f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}: check the config."
        )
    variant: GroupedVariant = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    cfg = AttentionConfig(
        variant,
        d_model=d_model,
        n_heads=heads,
        n_kv_heads=kv_heads if variant == "gqa" else None,
        head_dim=head_dim,
        rope_theta=theta,
        bias=bias,
        o_bias=o_bias,
        norm_eps=float_field(hf, "rms_norm_eps", 1e-6),
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
        theta, scaling = rope_settings(hf, default_theta, context, params=params)
    elif layer_type == "sliding_attention":
        theta, scaling = float_field(hf, "rope_local_base_freq", 10000.0), RopeScaling()
    else:
        theta = float_field(hf, "rope_theta", 1_000_000.0)
        scaling = RopeScaling.from_hf(hf.get("rope_scaling"), context)
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
}  # multimodal configs whose text_config is read


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


READERS.update(
    {
        **dict.fromkeys(QWEN_MODEL_TYPES, qwen_hybrid_layer),
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
        mamba2: Mamba2Mixer,
    ) -> tuple[
        CachedLayer[GroupedKVCache | WindowedKVCache],
        CachedLayer[LatentKVCache],
        CachedLayer[DSACache],
        CachedLayer[CompressedCache],
        CachedLayer[GroupedKVCache],
        CachedLayer[LinearStateCache],
        CachedLayer[LinearStateCache],
        CachedLayer[LinearStateCache],
    ]:
        return grouped, latent, sparse, compressed, gated, delta, kimi, mamba2
