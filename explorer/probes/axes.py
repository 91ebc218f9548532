"""The cache's four axes (layers × tokens × width × bytes), measured: every published model's cache by layer kind from
attn_core.describe_model (meta-device caches, nothing allocated) over a grid of context lengths, a config.json a
reader pastes read the same way, and how each design's cache at one length splits into the four axes' cuts.

Numbers only, no words: a problem with a pasted config is a kind and its values (and the core's or the JSON
parser's own message, shown verbatim); the page words them (explorer/axes/text.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from attn_core import (
    PUBLISHED,
    ConfigFieldError,
    ModelDescription,
    PastAnyMachine,
    Storage,
    bytes_per_element,
    context_length,
    describe_model,
)

# Context lengths drawn: 1k to 1M tokens, at 2^n and 1.5 · 2^n (a log axis evenly, with round numbers to pick).
TOKEN_GRID: tuple[int, ...] = tuple(sorted({base * 2**n for n in range(11) for base in (1024, 1536)} - {1536 * 1024}))
MAX_CONFIG_CHARS = 200_000  # a config.json is a few thousand characters; the largest published ones ~10k
REFERENCE_BITS = 16  # the bytes axis is measured against a 16-bit cache (bfloat16, as the models are served)


@dataclass(frozen=True)
class KindCurve:
    """The layers of one kind in a model: their count, formula, and caches along the grid (bytes, all such layers)."""

    kind: str
    count: int
    formula: str
    held: tuple[int, ...]  # held after each grid length of tokens
    read: tuple[int, ...]  # read by the decoding step of that token
    entry: float  # bytes of one cache entry in all these layers: one token's, or what a compressed entry pools
    state: bool = False  # a fixed state (linear attention, Mamba), the same after 1 token as after 1M: no entries


@dataclass(frozen=True)
class FormatRow:
    """One format a kind of a model's layers is served in (attn_core.ServedFormat, as numbers and a citation): its
    fields as (count, number type), its bytes a row, scales included, and its source."""

    kind: str
    name: str
    fields: tuple[tuple[int, str], ...]
    nbytes: int
    source: str


@dataclass(frozen=True)
class ModelCurves:
    name: str
    model_type: str
    layers: int
    context: int | None  # the length it was published for, where its config says
    tokens: tuple[int, ...]
    batch: int
    element_bytes: int
    kinds: tuple[KindCurve, ...]
    mha_entry_numbers: int | None  # numbers one token leaves in one layer of MHA at this model's heads and widths
    storage: Storage = "reference"  # as HF's modules hold the caches, or as the models are served
    formats: tuple[FormatRow, ...] = ()  # the formats the model is served in, whatever the storage drawn

    @property
    def held(self) -> tuple[int, ...]:
        return tuple(sum(values) for values in zip(*(k.held for k in self.kinds), strict=True))

    @property
    def read(self) -> tuple[int, ...]:
        return tuple(sum(values) for values in zip(*(k.read for k in self.kinds), strict=True))

    def at(self, tokens: int) -> int:
        return self.tokens.index(tokens)


@dataclass(frozen=True)
class Missing:
    """A published model the core cannot read yet: its model_type and the core's own message."""

    name: str
    model_type: str
    message: str


def model_curves(
    hf: Mapping[str, Any],
    *,
    name: str,
    tokens: tuple[int, ...] = TOKEN_GRID,
    batch: int = 1,
    dtype: str = "bfloat16",
    storage: Storage = "reference",
) -> ModelCurves:
    """Every layer kind's cache of the model hf describes at each length in `tokens`, in `storage` (served: its
    formats fix the numbers' types, dtype must be bfloat16). ValueError (the core's) when the core cannot read hf."""
    wrapped = hf.get("text_config")
    text: Mapping[str, Any] = wrapped if isinstance(wrapped, Mapping) else hf
    model = describe_model(hf)  # the core bounds the layers (attn_core.MAX_LAYERS) and every width
    per_length = [model.kinds(tokens=t, batch=batch, dtype=dtype, storage=storage) for t in tokens]
    entries, states = _entry_bytes(model, batch, dtype, storage)
    kinds = tuple(
        KindCurve(
            kind=summary.kind,
            count=summary.count,
            formula=summary.formula,
            held=tuple(step[i].nbytes for step in per_length),
            read=tuple(step[i].read_nbytes for step in per_length),
            entry=entries[summary.kind],
            state=summary.kind in states,
        )
        for i, summary in enumerate(per_length[0])
    )
    return ModelCurves(
        name=name,
        model_type=str(model.model_type),
        layers=model.mixing_layers,  # a hybrid's MoE and MLP layers hold no cache and are no layer cut
        context=context_length(dict(hf)),
        tokens=tuple(tokens),
        batch=batch,
        element_bytes=bytes_per_element(dtype),
        kinds=kinds,
        mha_entry_numbers=mha_entry_numbers(text),
        storage=storage,
        formats=format_rows(model),
    )


def format_rows(model: ModelDescription) -> tuple[FormatRow, ...]:
    return tuple(
        FormatRow(kind, f.name, tuple((field.count, field.kind) for field in f.fields), f.nbytes, f.source)
        for kind, formats in model.served_formats().items()
        for f in formats
    )


def _entry_bytes(
    model: ModelDescription, batch: int, dtype: str, storage: Storage
) -> tuple[dict[str, float], set[str]]:
    """Bytes one cache entry takes in all layers of each kind: what one token leaves (the cache after a single token),
    or, for a kind whose entries each pool `compress_rate` tokens (DeepSeek-V4's), its long-run growth per token
    times that rate (after one token such a cache holds its waiting tokens, not an entry). And the kinds that hold a
    fixed state: as much after one token as after 1M (a window grows to W - 1 first)."""
    first = {k.kind: float(k.nbytes) for k in model.kinds(tokens=1, batch=batch, dtype=dtype, storage=storage)}
    long, longer = (model.kinds(tokens=t, batch=batch, dtype=dtype, storage=storage) for t in (1 << 19, 1 << 20))
    growth = {a.kind: (b.nbytes - a.nbytes) / (1 << 19) for a, b in zip(long, longer, strict=True)}
    states = {k.kind for k in longer if k.nbytes > 0 and k.nbytes == first[k.kind]}
    for kind, config in zip(model.layer_kinds, model.layer_configs, strict=True):
        rate = getattr(config, "compress_rate", 0)
        if isinstance(rate, int) and rate > 1 and growth[kind] > 0:
            first[kind] = growth[kind] * rate
    return first, states


def mha_entry_numbers(text: Mapping[str, Any]) -> int | None:
    """What one token would leave in one layer of MHA with this model's heads: a key and a value per query head, of
    the widths its attention computes with (head_dim, or MLA's qk_nope + qk_rope and v_head_dim); None if the config
    does not say."""

    def whole(name: str) -> int | None:
        value = text.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    heads, hidden = whole("num_attention_heads"), whole("hidden_size")
    if heads is None:
        return None
    nope, rope = whole("qk_nope_head_dim"), whole("qk_rope_head_dim")
    key = (nope + rope) if nope and rope else whole("head_dim") or (hidden // heads if hidden else None)
    value = whole("v_head_dim") or whole("head_dim") or (hidden // heads if hidden else None)
    if not key or not value:
        return None
    return heads * (key + value)


def published_curves(
    tokens: tuple[int, ...] = TOKEN_GRID, batch: int = 1, dtype: str = "bfloat16", storage: Storage = "reference"
) -> tuple[list[ModelCurves], list[Missing]]:
    """Every published model the core reads, and each one it does not (with the core's message): none dropped."""
    drawn, missing = [], []
    for name, hf in PUBLISHED.items():
        try:
            drawn.append(model_curves(hf, name=name, tokens=tokens, batch=batch, dtype=dtype, storage=storage))
        except ValueError as error:
            missing.append(Missing(name, str(hf.get("model_type")), str(error)))
    return drawn, missing


# --- a pasted config.json ------------------------------------------------------------------------------------------
Problem = Literal[
    "empty",
    "too_long",
    "not_json",
    "not_object",
    "no_model_type",
    "unsupported",
    "field",
    "too_large",
    "invalid",
    "core_failed",
]


@dataclass(frozen=True)
class ConfigProblem:
    """What is wrong with a pasted config: a kind, the values its sentence names, and the message of the parser or
    the core that found it (shown verbatim beside the page's sentence)."""

    kind: Problem
    values: dict[str, object] = field(default_factory=dict)
    message: str = ""


@dataclass(frozen=True)
class ConfigReading:
    config: dict[str, Any] | None = None
    problem: ConfigProblem | None = None


def read_config(text: str) -> ConfigReading:
    """A config.json's text as the dict describe_model reads, or what is wrong with it. Never raises."""
    if not isinstance(text, str) or not text.strip():
        return ConfigReading(problem=ConfigProblem("empty"))
    if len(text) > MAX_CONFIG_CHARS:
        return ConfigReading(problem=ConfigProblem("too_long", {"chars": len(text), "limit": MAX_CONFIG_CHARS}))
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        values: dict[str, object] = {"line": error.lineno, "column": error.colno}
        return ConfigReading(problem=ConfigProblem("not_json", values, str(error)))
    except (RecursionError, ValueError) as error:  # nested too deep; a number too long to convert
        return ConfigReading(problem=ConfigProblem("not_json", {"line": 1, "column": 1}, str(error)))
    if not isinstance(config, dict):
        return ConfigReading(problem=ConfigProblem("not_object", {"found": type(config).__name__}))
    model_type = config.get("model_type")
    if model_type is None:
        return ConfigReading(problem=ConfigProblem("no_model_type"))
    return ConfigReading(config=config)


@dataclass(frozen=True)
class CustomResult:
    curves: ModelCurves | None = None
    problem: ConfigProblem | None = None


def custom_curves(
    text: str,
    *,
    tokens: tuple[int, ...] = TOKEN_GRID,
    batch: int = 1,
    dtype: str = "bfloat16",
    storage: Storage = "reference",
) -> CustomResult:
    """The page's "your model": a pasted config.json read, then described along the grid; a problem instead of a
    traceback for anything the reader may paste."""
    reading = read_config(text)
    if reading.config is None:
        return CustomResult(problem=reading.problem)
    config = reading.config
    try:
        return CustomResult(
            curves=model_curves(
                config, name=published_name(config), tokens=tokens, batch=batch, dtype=dtype, storage=storage
            )
        )
    except ValueError as error:
        return CustomResult(problem=refusal(error, config))
    except Exception as error:  # the core should have said ValueError: its failure is shown, not a traceback
        return CustomResult(problem=ConfigProblem("core_failed", {}, f"{type(error).__name__}: {error}"))


def published_name(config: Mapping[str, Any]) -> str:
    """A published model's name when the config is its config.json unchanged, else the config's model_type."""
    return next((name for name, hf in PUBLISHED.items() if hf == config), str(config.get("model_type")))


def refusal(error: ValueError, config: Mapping[str, Any]) -> ConfigProblem:
    """The core's refusal as a problem: its typed values where it gives them (the page words those in its language),
    else its English sentence."""
    message = str(error)
    match error:
        case ConfigFieldError(field=name, value=value, need=need):
            values: dict[str, object] = {
                "field": name,
                "value": shown_value(value),
                "need": need.kind,
                "minimum": need.minimum,
                "maximum": need.maximum,
                "choices": need.choices,
                "other": need.other,
                "other_value": shown_value(need.other_value),
                "layer": need.layer,
            }
            return ConfigProblem("field", values, message)
        case PastAnyMachine(footprint=footprint, limit=limit):
            values = {"what": footprint.what, "bytes": footprint.nbytes, "limit": limit}
            return ConfigProblem("too_large", values | {"tokens": footprint.tokens, "batch": footprint.batch}, message)
    if "is not supported" in message and "model_type" in message:
        return ConfigProblem("unsupported", {"model_type": str(config.get("model_type"))}, message)
    return ConfigProblem("invalid", {}, message)


def shown_value(value: object) -> str:
    """A field's value as the JSON it was pasted as, cut short (a list may hold thousands of entries)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}…"


# --- the four axes ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AxisCuts:
    """How many times smaller a model's cache is than if every layer were MHA keeping every token in 16 bits, split
    into the four axes' factors (their product is total; below 1 is larger). At one length, batch 1.

    The cache layers are those that keep entries of tokens (full, window, compressed, latent); the others hold a
    fixed state (linear attention, Mamba) or nothing of their own (a shared KV layer). Each design is credited to
    one axis at every length: a window or a pooled entry to tokens, a state or a shared layer to layers.

    layers  every layer as the mean cache layer ÷ the layers as they are (a state costs more than it saves at
            short lengths: below 1)
    tokens  the cache layers keeping one entry per token ÷ what they hold: windows, compression
    width   MHA's per-token entry ÷ the cache layers' mean entry (one token's, or one pooled entry's)
    bytes   16 bits ÷ the cache's bits per number
    """

    name: str
    layers: float
    tokens: float
    width: float | None
    bytes: float
    total: float | None
    cache_kinds: tuple[str, ...]  # the kinds the tokens and width axes describe


def axis_cuts(curves: ModelCurves, tokens: int, measure: str = "held") -> AxisCuts:
    """The cuts of what is held at `tokens` tokens, or (measure "read") of what the decoding step of that token reads
    against MHA reading every token's keys and values."""
    i = curves.at(tokens)
    values = {k.kind: getattr(k, measure)[i] for k in curves.kinds}
    total = sum(values.values())
    cache = [k for k in curves.kinds if k.entry > 0 and not k.state] or [k for k in curves.kinds if k.entry > 0]
    count = sum(k.count for k in cache)
    held = sum(values[k.kind] for k in cache)
    entries = sum(k.entry for k in cache)  # one entry in every cache layer
    layers = curves.layers * held / count / total if total and count else 1.0
    token_cut = tokens * entries / held if held else 1.0
    width = None
    if curves.mha_entry_numbers and entries:
        width = curves.mha_entry_numbers * curves.element_bytes * curves.batch * count / entries
    byte_cut = REFERENCE_BITS / (8 * curves.element_bytes)
    product = None if width is None else layers * token_cut * width * byte_cut
    return AxisCuts(curves.name, layers, token_cut, width, byte_cut, product, tuple(k.kind for k in cache))


LEADING_CUT = 1.05  # an axis a design cuts by less than this is one it leaves as it was


def leaders(cuts: list[AxisCuts]) -> dict[str, AxisCuts]:
    """The model that cuts each of the layers, tokens and width axes most (the first of equals), for each axis that
    some model cuts by LEADING_CUT or more."""
    found = {}
    for axis in ("layers", "tokens", "width"):
        known = [c for c in cuts if getattr(c, axis) is not None]
        best = max(known, key=lambda c: getattr(c, axis), default=None)
        if best is not None and getattr(best, axis) > LEADING_CUT:
            found[axis] = best
    return found


def first_of_each_kind(models: list[ModelCurves]) -> list[str]:
    """The first model (in the order given: attn_core.PUBLISHED's) with each kind of layer: one model a design family,
    named in that order."""
    firsts: dict[str, str] = {}
    for model in models:
        for kind in model.kinds:
            firsts.setdefault(kind.kind, model.name)
    return list(dict.fromkeys(firsts.values()))


# --- the published models made for a length ------------------------------------------------------------------------
def made_for(models: list[ModelCurves], tokens: int) -> list[ModelCurves]:
    """The models published for `tokens` tokens or more (or whose config names no context): a cache past a model's
    own context is one it never serves, so only these are compared at that length."""
    return [m for m in models if m.context is None or m.context >= tokens]


@dataclass(frozen=True)
class Extremes:
    """Of the models made for a length, the one that keeps (or reads) the most there and the one the least."""

    count: int  # the models compared
    largest: str
    big: int
    smallest: str
    small: int


def extremes(models: list[ModelCurves], tokens: int, measure: str = "held") -> Extremes | None:
    """The largest and smallest cache at `tokens` of the models made for that length; None if fewer than two are, or
    the smallest holds nothing (no ratio)."""
    values = {m.name: getattr(m, measure)[m.at(tokens)] for m in made_for(models, tokens)}
    if len(values) < 2:
        return None
    largest, smallest = max(values, key=values.__getitem__), min(values, key=values.__getitem__)
    if not values[smallest]:
        return None
    return Extremes(len(values), largest, values[largest], smallest, values[smallest])


# --- what the captions say, found in the curves ---------------------------------------------------------------------
@dataclass(frozen=True)
class Plateau:
    """A model (or one kind of its layers) that stops growing within the grid: from `tokens` on it holds `nbytes`."""

    name: str
    kind: str | None  # None: the whole model
    tokens: int
    nbytes: int


def plateaus(curves: ModelCurves) -> list[Plateau]:
    """Where the model's cache stops growing (a window on every layer), else each kind of its layers that does."""
    found = _flat_from(curves.tokens, curves.held)
    if found is not None:
        return [Plateau(curves.name, None, curves.tokens[found], curves.held[found])]
    out = []
    for kind in curves.kinds:
        start = _flat_from(curves.tokens, kind.held)
        if start is not None and len(curves.kinds) > 1:
            out.append(Plateau(curves.name, kind.kind, curves.tokens[start], kind.held[start]))
    return out


def _flat_from(tokens: tuple[int, ...], values: tuple[int, ...]) -> int | None:
    """The first index from which values stay equal to the last (a grid's last two equal at least), else None."""
    if len(values) < 2 or values[-1] != values[-2]:
        return None
    start = len(values) - 1
    while start > 0 and values[start - 1] == values[-1]:
        start -= 1
    return start


@dataclass(frozen=True)
class Crossing:
    """Two models' curves cross between two grid lengths: below `tokens`, `below` keeps less; above it, more."""

    lower_first: str  # the one that is smaller before the crossing
    other: str
    tokens: int  # where they meet, interpolated on the log-log curves


def crossings(models: list[ModelCurves], measure: str) -> list[Crossing]:
    """Every pair of curves that changes order inside the grid, at the length where they meet, in order of length."""
    found = []
    for a_index, a in enumerate(models):
        for b in models[a_index + 1 :]:
            ya, yb = getattr(a, measure), getattr(b, measure)
            for i in range(len(a.tokens) - 1):
                before, after = _log_ratio(ya[i], yb[i]), _log_ratio(ya[i + 1], yb[i + 1])
                if before is None or after is None or before == 0 or (before > 0) == (after > 0) or after == 0:
                    continue
                share = before / (before - after)
                log_t = math.log(a.tokens[i]) + share * (math.log(a.tokens[i + 1]) - math.log(a.tokens[i]))
                lower, other = (a, b) if before < 0 else (b, a)
                found.append(Crossing(lower.name, other.name, round(math.exp(log_t))))
    return sorted(found, key=lambda c: c.tokens)


def _log_ratio(x: int, y: int) -> float | None:
    return math.log(x / y) if x > 0 and y > 0 else None
