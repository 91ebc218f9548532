"""Reading a model's config.json (HF key names): the one way every reader and from_hf of attn_core reads a field.

A field that is absent or null takes the default its transformers config class gives it, when there is one;
otherwise it is a ValueError naming the field and the model. A field of the wrong kind is a ValueError naming it and
what it must be. `name=` says how a field of a nested dict is named ("linear_attn_config.num_heads").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .rope import RopeScaling, yarn_mscale

MISSING: Any = object()  # no default: the field must be given


def field(hf: Mapping[str, Any], key: str, default: Any = MISSING, *, model: str | None = None, name: str = "") -> Any:
    """hf[key] as given, or default when absent or null; a ValueError naming it when there is no default."""
    value = hf.get(key)
    if value is None:
        value = default
    if value is MISSING or value is None:
        model = model or hf.get("model_type") or "this layer"
        raise ValueError(f"config field {(name or key)!r} is missing: {model} needs it.")
    return value


def int_field(
    hf: Mapping[str, Any],
    key: str,
    default: Any = MISSING,
    *,
    minimum: int = 1,
    model: str | None = None,
    name: str = "",
) -> int:
    """hf[key] as a whole number >= minimum (a size: >= 1 unless said)."""
    value = field(hf, key, default, model=model, name=name)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"config field {(name or key)!r} must be a whole number >= {minimum}, got {value!r}.")
    return value


def float_field(
    hf: Mapping[str, Any], key: str, default: Any = MISSING, *, model: str | None = None, name: str = ""
) -> float:
    """hf[key] as a positive number."""
    value = field(hf, key, default, model=model, name=name)
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"config field {(name or key)!r} must be a positive number, got {value!r}.")
    return float(value)


def bool_field(hf: Mapping[str, Any], key: str, default: bool) -> bool:
    """hf[key] as true or false."""
    value = field(hf, key, default)
    if not isinstance(value, bool):
        raise ValueError(f"config field {key!r} must be true or false, got {value!r}.")
    return value


def layer_index(hf: Mapping[str, Any], layer_idx: int) -> int:
    """layer_idx checked against num_hidden_layers."""
    layers = int_field(hf, "num_hidden_layers")
    if not isinstance(layer_idx, int) or isinstance(layer_idx, bool) or not 0 <= layer_idx < layers:
        raise ValueError(f"layer_idx={layer_idx!r}: this model has layers 0 to {layers - 1} (num_hidden_layers).")
    return layer_idx


def layer_types(hf: Mapping[str, Any], known: Sequence[str], default: Callable[[int], str]) -> list[str]:
    """layer_types as given (one of known per layer, checked), else as the config class fills it in: default(i) for
    layer i."""
    layers = int_field(hf, "num_hidden_layers")
    given = hf.get("layer_types")
    if given is None:
        return [default(i) for i in range(layers)]
    if not isinstance(given, list | tuple) or len(given) != layers or any(t not in known for t in given):
        raise ValueError(
            f"config field 'layer_types' must list {layers} entries (num_hidden_layers), each one of "
            f"{', '.join(known)}."
        )
    return [str(t) for t in given]


def require_model_type(hf: Mapping[str, Any], expected: str) -> None:
    if not isinstance(hf, Mapping):
        raise ValueError(f"the config must be a dict (a config.json read with json.load), got {type(hf).__name__}.")
    if hf.get("model_type") != expected:
        raise ValueError(f"model_type={hf.get('model_type')!r}: this layer reads {expected!r} configs.")


def positive_int(name: str, value: object) -> None:
    """A layer config's own field or an argument (not config.json's), a positive whole number: else a ValueError
    naming it."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive whole number, got {value!r}.")


def positive_float(name: str, value: object) -> None:
    """positive_int for a positive number."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}.")


def positive_fields(config: object, *names: str) -> None:
    """positive_int for each of a layer config's fields (its __post_init__'s check)."""
    for name in names:
        positive_int(name, getattr(config, name))


def rope_parameters(hf: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one (not nested) RoPE dict of a config: rope_parameters (transformers 5) or rope_scaling (older
    config.json files); {} when neither is given."""
    params = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    if not isinstance(params, Mapping):
        raise ValueError("config field 'rope_parameters' (or 'rope_scaling') must be a dict.")
    return params


def rope_settings(
    hf: Mapping[str, Any], default_theta: float, context: int | None, params: Mapping[str, Any] | None = None
) -> tuple[float, RopeScaling]:
    """(theta, scaling) of a config with one RoPE for its layers: params (default: rope_parameters / rope_scaling) for
    the scaling and its rope_theta, else the top-level rope_theta, else default_theta. context: max_position_embeddings
    (YaRN's and Llama 3's original length default to it, as transformers'.)"""
    params = rope_parameters(hf) if params is None else params
    theta = float_field({"rope_theta": params.get("rope_theta", hf.get("rope_theta"))}, "rope_theta", default_theta)
    return theta, RopeScaling.from_hf(params, context)


def mla_softmax_scale(params: Mapping[str, Any], scaling: RopeScaling, qk_head_dim: int) -> float:
    """DeepSeek's MLA score scale: 1/sqrt(d_nope + d_h^R), times yarn_mscale(factor, mscale_all_dim)² when YaRN
    stretches the context (HF's DeepseekV3Attention and DeepseekV32Attention)."""
    scale = qk_head_dim**-0.5
    if scaling.kind != "default" and params.get("mscale_all_dim"):
        scale *= yarn_mscale(scaling.factor, params["mscale_all_dim"]) ** 2
    return scale
