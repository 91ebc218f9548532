"""What a config.json value must be, and the limits past which a config or a cache is a typo: the checks every reader
of attn_core applies (through attn_core.hf_fields, and RopeScaling.from_hf), and the refusals as values.

A refusal is a ValueError whose str() is an English sentence naming the field and the value; it also carries them as
typed values (ConfigFieldError's field, value and Need; PastAnyMachine's bytes and limit), so an app can word it in
its reader's language. This module imports nothing of attn_core: rope.py and hf_fields.py both read through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

# Published models have up to ~130 layers, and describe_model reads every one: more than this is a typo.
MAX_LAYERS = 4096
# Any width or count inside one layer (hidden_size, heads, head_dim, ranks, a kernel): the widest published is 16,384
# (hidden_size). Three such widths multiplied (a projection's weights) stay inside torch's 2^63-byte storage sizes.
MAX_WIDTH = 1 << 19
# A context length (max_position_embeddings, a window, top-k): a billion tokens; published contexts reach 10M.
MAX_TOKENS = 1 << 30
MAX_BATCH = 1 << 16
# One layer's weights, or every layer's cache, past this (1 PiB) is more memory than any machine has.
MAX_BYTES = 1 << 50

# Fields bounded by something other than MAX_WIDTH: layer counts and indices, and token counts.
FIELD_MAXIMA = {
    "num_hidden_layers": MAX_LAYERS,
    "max_window_layers": MAX_LAYERS,
    "sliding_window_pattern": MAX_LAYERS,
    "full_attention_interval": MAX_LAYERS,
    "max_position_embeddings": MAX_TOKENS,
    "original_max_position_embeddings": MAX_TOKENS,
    "sliding_window": MAX_TOKENS,
    "index_topk": MAX_TOKENS,
    "compress_rates": MAX_TOKENS,
    "compress_rate_csa": MAX_TOKENS,
    "compress_rate_hca": MAX_TOKENS,
}

NeedKind = Literal["given", "whole", "number", "bool", "dict", "list", "choice", "divides", "layer_once", "layer_in"]


@dataclass(frozen=True)
class Need:
    """What a field needs. kind "given": present; "whole": a whole number from minimum to maximum; "number": a finite
    number above 0 (minimum 0: at least 0); "bool": true or false; "dict" / "list": that container; "choice": one of
    choices; "divides": a whole number dividing the field `other` (of value `other_value`); "layer_once": each layer
    number in one list only, and `other` lists layer `layer` too; "layer_in": layer numbers from minimum to maximum."""

    kind: NeedKind
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    other: str = ""
    other_value: Any = None
    layer: int | None = None


class ConfigFieldError(ValueError):
    """A config.json field the reader cannot use: `field` (dotted inside a nested dict: "rope_scaling.factor"), the
    value given (None when missing), what it needs."""

    def __init__(self, field: str, value: Any, need: Need, model: str = "") -> None:
        super().__init__(_sentence(field, value, need, model))
        self.field, self.value, self.need, self.model = field, value, need, model

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.field, self.value, self.need, self.model))


@dataclass(frozen=True)
class Footprint:
    """Bytes a config asks for past MAX_BYTES: "weights" of one layer, or the "cache" of every layer after `tokens`
    tokens of `batch` sequences."""

    what: Literal["weights", "cache"]
    nbytes: int
    tokens: int = 0
    batch: int = 1
    fields: tuple[str, ...] = field(default=())


class PastAnyMachine(ValueError):
    """A size no machine holds: its Footprint and the limit (MAX_BYTES)."""

    def __init__(self, footprint: Footprint) -> None:
        self.footprint, self.limit = footprint, MAX_BYTES
        if footprint.what == "weights":
            said = f"one layer's weights would take {footprint.nbytes:,} bytes"
        else:
            said = (
                f"the caches would hold {footprint.nbytes:,} bytes after {footprint.tokens:,} tokens of "
                f"{footprint.batch:,} sequences"
            )
        hint = f": check {', '.join(footprint.fields)}" if footprint.fields else ""
        super().__init__(f"{said}, more than any machine holds (the limit is {MAX_BYTES:,} bytes, 1 PiB){hint}.")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.footprint,))


def _sentence(name: str, value: Any, need: Need, model: str) -> str:
    start, shown = f"config field {name!r}", _shown(value)
    match need.kind:
        case "given":
            return f"{start} is missing: {model or 'this layer'} needs it."
        case "whole":
            return f"{start} must be a whole number from {need.minimum:,} to {need.maximum:,}, got {shown}."
        case "number":
            floor = "a number >= 0" if need.minimum == 0 else "a positive number"
            return f"{start} must be {floor} (finite), got {shown}."
        case "bool":
            return f"{start} must be true or false, got {shown}."
        case "dict":
            return f"{start} must be a dict, got {type(value).__name__}: {shown}."
        case "list" if need.minimum is not None:
            return (
                f"{start} must list {need.minimum:,} entries (num_hidden_layers), each one of "
                f"{', '.join(need.choices)}; got {shown}."
            )
        case "list":
            return f"{start} must be a list, got {type(value).__name__}: {shown}."
        case "choice":
            return f"{start}: {shown} is not supported; choose one of {', '.join(need.choices)}."
        case "divides":
            return (
                f"{need.other}={need.other_value!r} is not a multiple of {name}={shown}: {start} must divide it; "
                "check the config."
            )
        case "layer_once":
            return f"{start} lists layer {need.layer}, which {need.other} lists too: name each layer once."
        case "layer_in":
            return f"{start} lists layer {shown}: layers are numbered {need.minimum:,} to {need.maximum:,}."
    raise AssertionError(need.kind)


def _shown(value: Any) -> str:
    """value as written in a message: its repr, cut short (a pasted list may hold thousands of entries)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def maximum_of(name: str) -> int:
    """The largest whole number the field `name` (its last dotted part) may hold."""
    return FIELD_MAXIMA.get(name.rsplit(".", 1)[-1], MAX_WIDTH)


def whole(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None, model: str = "") -> int:
    """value as a whole number from minimum to maximum (default: maximum_of(name)), else ConfigFieldError."""
    top = maximum_of(name) if maximum is None else maximum
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= top:
        raise ConfigFieldError(name, value, Need("whole", minimum, top), model)
    return value


def number(name: str, value: Any, *, zero: bool = False, model: str = "") -> float:
    """value as a finite number > 0 (>= 0 with zero=True), else ConfigFieldError."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (value >= 0 if zero else value > 0):
        raise ConfigFieldError(name, value, Need("number", 0 if zero else None), model)
    return float(value)


def flag(name: str, value: Any, *, model: str = "") -> bool:
    """value as true or false (JSON's, not a string or a number), else ConfigFieldError."""
    if not isinstance(value, bool):
        raise ConfigFieldError(name, value, Need("bool"), model)
    return value


def choice(name: str, value: Any, choices: tuple[str, ...], *, model: str = "") -> str:
    if not isinstance(value, str) or value not in choices:
        raise ConfigFieldError(name, value, Need("choice", choices=choices), model)
    return value


def within_any_machine(footprint: Footprint) -> None:
    """A PastAnyMachine when footprint.nbytes is past MAX_BYTES."""
    if footprint.nbytes > MAX_BYTES:
        raise PastAnyMachine(footprint)
