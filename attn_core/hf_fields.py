"""Reading a model's config.json (HF key names): the one way every reader and from_hf of attn_core reads a field.

A field that is absent or null takes the default its transformers config class gives it, when there is one;
otherwise it is a ValueError naming the field and the model. A field of the wrong kind is a ValueError naming it and
what it must be. `name=` says how a field of a nested dict is named ("linear_attn_config.num_heads").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from .config_checks import ConfigFieldError, Need, flag, number, whole
from .rope import RopeScaling, yarn_mscale

MISSING: Any = object()  # no default: the field must be given
T = TypeVar("T")


class ReadOnce(dict[str, Any]):
    """A config.json dict that describe_model reads layer after layer: what a reader works out from the whole config
    (a list of layers, checked) is kept for the next layer's reader (once()), so n layers cost n steps, not n².
    prefix: where its fields sit in the file ("text_config." for a multimodal wrapper's), said in every error."""

    def __init__(self, hf: Mapping[str, Any], prefix: str = "") -> None:
        super().__init__(hf)
        self.memo: dict[Any, Any] = {}
        self.prefix = prefix


def field_name(hf: Mapping[str, Any], name: str) -> str:
    """A field's name as the file has it: with its ReadOnce's prefix."""
    return f"{hf.prefix}{name}" if isinstance(hf, ReadOnce) else name


def once(hf: Mapping[str, Any], key: Any, compute: Callable[[], T]) -> T:
    """compute(), kept in hf's memo under key when hf is a ReadOnce."""
    if not isinstance(hf, ReadOnce):
        return compute()
    if key not in hf.memo:
        hf.memo[key] = compute()
    return cast(T, hf.memo[key])


def field(hf: Mapping[str, Any], key: str, default: Any = MISSING, *, model: str | None = None, name: str = "") -> Any:
    """hf[key] as given, or default when absent or null; a ValueError naming it when there is no default."""
    value = hf.get(key)
    if value is None:
        value = default
    if value is MISSING or value is None:
        model = model or hf.get("model_type") or "this layer"
        raise ConfigFieldError(field_name(hf, name or key), None, Need("given"), str(model))
    return value


def int_field(
    hf: Mapping[str, Any],
    key: str,
    default: Any = MISSING,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    model: str | None = None,
    name: str = "",
) -> int:
    """hf[key] as a whole number from minimum (a size: 1 unless said) to maximum (config_checks.maximum_of the field:
    a width, a layer count or a token count)."""
    return whole(
        field_name(hf, name or key), field(hf, key, default, model=model, name=name), minimum=minimum, maximum=maximum
    )


def float_field(
    hf: Mapping[str, Any],
    key: str,
    default: Any = MISSING,
    *,
    zero: bool = False,
    model: str | None = None,
    name: str = "",
) -> float:
    """hf[key] as a finite positive number (or zero, with zero=True)."""
    return number(field_name(hf, name or key), field(hf, key, default, model=model, name=name), zero=zero)


def bool_field(hf: Mapping[str, Any], key: str, default: bool, *, name: str = "") -> bool:
    """hf[key] as true or false."""
    return flag(field_name(hf, name or key), field(hf, key, default, name=name))


def dict_field(hf: Mapping[str, Any], key: str, *, name: str = "") -> Mapping[str, Any]:
    """hf[key] as a dict; {} when absent or null."""
    value = hf.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigFieldError(field_name(hf, name or key), value, Need("dict"))
    return value


def layer_index(hf: Mapping[str, Any], layer_idx: int) -> int:
    """layer_idx checked against num_hidden_layers."""
    layers = int_field(hf, "num_hidden_layers")
    if not isinstance(layer_idx, int) or isinstance(layer_idx, bool) or not 0 <= layer_idx < layers:
        raise ValueError(f"layer_idx={layer_idx!r}: this model has layers 0 to {layers - 1} (num_hidden_layers).")
    return layer_idx


class _Defaulted(Sequence[str]):
    """layer_types as a config class fills it in, computed per layer asked: describe_model asks each reader for its
    own layer, so a list built whole for each would cost layers² calls."""

    def __init__(self, layers: int, default: Callable[[int], str]) -> None:
        self.layers, self.default = layers, default

    def __len__(self) -> int:
        return self.layers

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.default(j) for j in range(self.layers)[i]]
        if not -self.layers <= i < self.layers:
            raise IndexError(i)
        return self.default(i % self.layers)


def layer_types(hf: Mapping[str, Any], known: Sequence[str], default: Callable[[int], str]) -> Sequence[str]:
    """layer_types as given (one of known per layer, checked), else as the config class fills it in: default(i) for
    layer i."""
    layers = int_field(hf, "num_hidden_layers")
    given = hf.get("layer_types")
    if given is None:
        return _Defaulted(layers, default)
    name = field_name(hf, "layer_types")
    return once(hf, ("layer_types", layers, tuple(known)), lambda: _checked_types(given, layers, tuple(known), name))


def _checked_types(given: Any, layers: int, known: tuple[str, ...], name: str) -> list[str]:
    # set() and map() check every entry at C speed
    if not isinstance(given, list | tuple) or len(given) != layers or not set(map(type, given)) <= {str}:
        raise ConfigFieldError(name, given, Need("list", layers, layers, known))
    if not set(given) <= set(known):
        wrong = next(t for t in given if t not in known)
        raise ConfigFieldError(name, wrong, Need("choice", choices=known))
    return list(given)


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


def rope_name(hf: Mapping[str, Any]) -> str:
    """Which of the two names a config gives its RoPE dict under: rope_parameters (transformers 5), else
    rope_scaling."""
    return "rope_parameters" if hf.get("rope_parameters") else "rope_scaling"


def rope_parameters(hf: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one (not nested) RoPE dict of a config: rope_parameters (transformers 5) or rope_scaling (older
    config.json files); {} when neither is given."""
    params = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    if not isinstance(params, Mapping):
        raise ConfigFieldError(field_name(hf, rope_name(hf)), params, Need("dict"))
    return params


def rope_settings(
    hf: Mapping[str, Any],
    default_theta: float,
    context: int | None,
    params: Mapping[str, Any] | None = None,
    *,
    name: str = "",
) -> tuple[float, RopeScaling]:
    """(theta, scaling) of a config with one RoPE for its layers: params (default: rope_parameters / rope_scaling) for
    the scaling and its rope_theta, else the top-level rope_theta, else default_theta. context: max_position_embeddings
    (YaRN's and Llama 3's original length default to it, as transformers'.) name: the params' dict as the config
    names it (default: rope_name(hf))."""
    if params is None:  # the config's own RoPE dict: the same for every layer
        key = ("rope_settings", default_theta, context, name)
        return once(hf, key, lambda: rope_settings(hf, default_theta, context, rope_parameters(hf), name=name))
    name = field_name(hf, name or rope_name(hf))
    if not isinstance(params, Mapping):
        raise ConfigFieldError(name, params, Need("dict"))
    inner = params.get("rope_theta") is not None
    theta = float_field(
        {"rope_theta": params.get("rope_theta", hf.get("rope_theta"))},
        "rope_theta",
        default_theta,
        name=f"{name}.rope_theta" if inner else field_name(hf, "rope_theta"),
    )
    return theta, RopeScaling.from_hf(params, context, name=name)


def mla_softmax_scale(params: Mapping[str, Any], scaling: RopeScaling, qk_head_dim: int) -> float:
    """DeepSeek's MLA score scale: 1/sqrt(d_nope + d_h^R), times yarn_mscale(factor, mscale_all_dim)² when YaRN
    stretches the context (HF's DeepseekV3Attention and DeepseekV32Attention)."""
    scale = qk_head_dim**-0.5
    if scaling.kind != "default" and params.get("mscale_all_dim"):
        scale *= yarn_mscale(scaling.factor, params["mscale_all_dim"]) ** 2
    return scale
