"""Reading a model's config.json (HF key names) with errors that name the field: shared by the designs' from_hf."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MISSING = object()


def positive_int(hf: Mapping[str, Any], key: str, default: Any = _MISSING) -> int:
    """hf[key] as a positive whole number (or default when absent, if one is given)."""
    value = hf.get(key, default)
    if value is _MISSING or value is None:
        raise ValueError(f"config is missing {key!r}, which this layer needs (a positive whole number).")
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"config field {key!r} must be a positive whole number, got {value!r}.")
    return value


def positive_float(hf: Mapping[str, Any], key: str, default: Any = _MISSING) -> float:
    value = hf.get(key, default)
    if value is _MISSING or value is None:
        raise ValueError(f"config is missing {key!r}, which this layer needs (a positive number).")
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"config field {key!r} must be a positive number, got {value!r}.")
    return float(value)


def layer_index(hf: Mapping[str, Any], layer_idx: int) -> int:
    """layer_idx checked against num_hidden_layers."""
    n_layers = positive_int(hf, "num_hidden_layers")
    if not isinstance(layer_idx, int) or isinstance(layer_idx, bool) or not 0 <= layer_idx < n_layers:
        raise ValueError(f"layer_idx={layer_idx!r} is out of range: num_hidden_layers is {n_layers}.")
    return layer_idx


def rope_settings(hf: Mapping[str, Any], theta_key: str = "rope_theta") -> tuple[float, str]:
    """(theta, rope type) from a published config (rope_theta, rope_scaling) or transformers' to_dict()
    (rope_parameters). A type other than "default" (YaRN...) is kept so that a layer can refuse to compute with it."""
    params = hf.get("rope_parameters")
    scaling = hf.get("rope_scaling")
    theta = hf.get(theta_key)
    rope_type = "default"
    for source in (scaling, params):
        if isinstance(source, Mapping):
            rope_type = str(source.get("rope_type", source.get("type", rope_type)))
            if theta is None and theta_key == "rope_theta":
                theta = source.get("rope_theta")
    if theta is None:
        theta = 10000.0  # transformers' default for every DeepSeek config
    return positive_float({theta_key: theta}, theta_key), rope_type
