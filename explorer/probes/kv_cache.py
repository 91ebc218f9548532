"""The KV cache page's probes: a real layer decoding token by token with its cache, and published models' caches
measured on the meta device, with what-ifs.

Decoding. A prompt is prefilled, then one token at a time is fed with the cache. The layer computes in float32, so that
the comparison with a full recompute shows float32 round-off and nothing else. Every tensor the layer appends to its
cache is also appended, cast, to a second cache of the same kind in the storage dtype (bfloat16, ...): its bytes are
what a cache in that dtype holds, measured from real tensors rather than scaled.

The full recompute is one forward pass over the whole sequence without a cache. With causal attention its row t is
exactly what recomputing the prefix up to t would give (token t cannot see later tokens), so it is the reference for
every step at once.

Whole models. A what-if keeps a model's width, query heads, head width and layer count, and changes only how keys and
values are kept: every head its own (MHA), one shared (MQA), g groups (GQA), or one latent plus a shared rotary key
(MLA).

All layers of these models have the same attention shape, so one layer is measured and the model is that times
n_layers. On the meta device the real forward pass runs with exact shapes and dtypes and no memory, so a prefill of
DeepSeek-V3's 163,840 tokens costs milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from attn_core import (
    PRESETS,
    AttentionConfig,
    AttentionOptions,
    GroupedKVCache,
    LatentKVCache,
    ModelPreset,
    as_dtype,
    build_attention,
    bytes_per_element,
    empty_cache,
    kv_cache_bytes,
    parameter_count,
    repeated_kv_cache_bytes,
)
from explorer.messages import N_

from .measured import measure_cache

if TYPE_CHECKING:
    from explorer.kinds.kind import Design

# Bounds of the step-by-step decode: it runs real float32 layers on the server's CPU at every new setting.
MAX_PROMPT_LEN = 64
MAX_STEPS = 64
MAX_TRACE_BATCH = 4
# Weights of one float32 layer: above this, drawing them from the seed alone takes a large part of a second.
MAX_TRACE_PARAMETERS = 5_000_000
# Multiply-adds of one pass, ~ weights x tokens x batch; a trace makes two (cached decode, full recompute). Chosen so
# the page answers a new setting within its rerun budget with every variant shown (benchmarks/app.py measures it).
MAX_TRACE_WORK = 300_000_000


@dataclass(frozen=True)
class DecodeTrace:
    """One cache followed through a prefill and `steps` decoded tokens. Lists are indexed by step: 0 = after the
    prefill, i = after the i-th generated token."""

    variant: str
    repeated_heads: bool
    prompt_len: int
    steps: int
    batch: int
    storage_dtype: str  # the dtype of the copy whose bytes are counted, without "torch."
    tokens_held: list[int]
    shapes: list[dict[str, tuple[int, ...]]]  # the cached tensors as read back, by name
    nbytes: list[int]  # the storage-dtype copy
    capacity_nbytes: list[int]  # what that copy has preallocated
    formula_nbytes: list[int]  # the closed form for the same tokens
    max_abs_diff: list[float]  # largest |cached output - full recompute| over that step's new rows, float32
    out_scale: float  # largest |output| of the full pass, to judge the differences by
    parameters: int  # weights of the layer


class StoredCopy:
    """The cache the layer uses, plus a copy of everything appended to it kept in another dtype.

    The layer sees the working cache (seq_len, append); the copy is only written, so it cannot change any output.
    """

    def __init__(self, working: GroupedKVCache | LatentKVCache, copy: GroupedKVCache | LatentKVCache) -> None:
        self.working, self.copy = working, copy
        self._copy_dtype = next(iter(copy.buffers.values())).storage.dtype

    @property
    def seq_len(self) -> int:
        return self.working.seq_len

    def append(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | torch.Tensor:
        self.copy.append(*(t.to(self._copy_dtype) for t in tensors))
        return self.working.append(*tensors)


class TraceTooHeavy(ValueError):
    """Why a trace is not run: a message (English, marked for the catalog) and its values, so that a page can show it
    in its reader's language (explorer.i18n._(error.message, **error.values)); str() is the English sentence."""

    def __init__(self, message: str, **values: int | str):
        self.message, self.values = message, values
        super().__init__(message.format(**{k: f"{v:,}" if isinstance(v, int) else v for k, v in values.items()}))


def check_trace_bounds(cfg: AttentionConfig, *, prompt_len: int, steps: int, batch: int) -> None:
    """Raise TraceTooHeavy (a ValueError), with a sentence, when a trace would be too heavy for an interactive page."""
    if not 1 <= prompt_len <= MAX_PROMPT_LEN:
        raise TraceTooHeavy(
            N_("prompt_len={value}: the step-by-step decode takes 1 to {most} prompt tokens."),
            value=str(prompt_len),
            most=MAX_PROMPT_LEN,
        )
    if not 1 <= steps <= MAX_STEPS:
        raise TraceTooHeavy(
            N_("steps={value}: the step-by-step decode generates 1 to {most} tokens."), value=str(steps), most=MAX_STEPS
        )
    if not 1 <= batch <= MAX_TRACE_BATCH:
        raise TraceTooHeavy(
            N_("batch={value}: the step-by-step decode runs 1 to {most} sequences."),
            value=str(batch),
            most=MAX_TRACE_BATCH,
        )
    check_work_bounds(parameter_count(cfg), tokens=prompt_len + steps, batch=batch)


def check_work_bounds(parameters: int, *, tokens: int, batch: int) -> None:
    """TraceTooHeavy when a layer of `parameters` weights is too large, or too much work over tokens x batch."""
    if parameters > MAX_TRACE_PARAMETERS:
        raise TraceTooHeavy(
            N_(
                "{weights} weights; the step-by-step decode runs layers of at most {most}: choose a smaller "
                "$d_{{\\text{{model}}}}$ (or latent width $d_c$)."
            ),
            weights=parameters,
            most=MAX_TRACE_PARAMETERS,
        )
    work = parameters * tokens * batch
    if work > MAX_TRACE_WORK:
        raise TraceTooHeavy(
            N_(
                "{weights} weights × {tokens} tokens × batch {batch} = {work} M multiply-adds a pass, above the "
                "{most} M this page runs at each new setting: use fewer tokens, a smaller batch or a smaller $d_{{\\text{{model}}}}$."
            ),
            weights=parameters,
            tokens=tokens,
            batch=batch,
            work=round(work / 1e6),
            most=round(MAX_TRACE_WORK / 1e6),
        )


@torch.inference_mode()
def decode_trace(
    cfg: AttentionConfig,
    *,
    prompt_len: int,
    steps: int,
    batch: int,
    seed: int,
    storage_dtype: torch.dtype | str,
    repeated_heads: bool = False,
) -> DecodeTrace:
    """Prefill prompt_len tokens, then decode steps tokens one at a time; record the cache after each (DecodeTrace)."""
    check_trace_bounds(cfg, prompt_len=prompt_len, steps=steps, batch=batch)
    storage_dtype = as_dtype(storage_dtype)
    layer = build_attention(cfg, seed=seed)  # float32 weights drawn from the seed
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, prompt_len + steps, cfg.d_model, generator=generator)  # [B, P + N, d_model], fixed inputs

    reference, _ = layer(x)  # one full pass, no cache: [B, P + N, d_model]
    working = empty_cache(cfg, batch, dtype=torch.float32, device="cpu", repeated_heads=repeated_heads)
    copy = empty_cache(cfg, batch, dtype=storage_dtype, device="cpu", repeated_heads=repeated_heads)
    cache = StoredCopy(working, copy)
    closed_form = repeated_kv_cache_bytes if repeated_heads else kv_cache_bytes

    tokens_held: list[int] = []
    shapes: list[dict[str, tuple[int, ...]]] = []
    nbytes: list[int] = []
    capacity_nbytes: list[int] = []
    formula_nbytes: list[int] = []
    max_abs_diff: list[float] = []

    def record(out: torch.Tensor, rows: slice) -> None:
        tokens_held.append(working.seq_len)
        shapes.append(working.shapes())
        nbytes.append(copy.nbytes)
        capacity_nbytes.append(copy.capacity_nbytes)
        formula_nbytes.append(closed_form(cfg, batch, working.seq_len, storage_dtype))
        max_abs_diff.append(float((out - reference[:, rows]).abs().max()))

    out, _ = layer(x[:, :prompt_len], cache=cache)  # prefill: [B, P, d_model]
    record(out, slice(0, prompt_len))
    for position in range(prompt_len, prompt_len + steps):
        out, _ = layer(x[:, position : position + 1], cache=cache)  # one token: [B, 1, d_model]
        record(out, slice(position, position + 1))

    return DecodeTrace(
        variant=cfg.variant,
        repeated_heads=repeated_heads,
        prompt_len=prompt_len,
        steps=steps,
        batch=batch,
        storage_dtype=str(storage_dtype).removeprefix("torch."),
        tokens_held=tokens_held,
        shapes=shapes,
        nbytes=nbytes,
        capacity_nbytes=capacity_nbytes,
        formula_nbytes=formula_nbytes,
        max_abs_diff=max_abs_diff,
        out_scale=float(reference.abs().max()),
        parameters=sum(p.numel() for p in layer.parameters()),
    )


# --- the designs after MLA, step by step ------------------------------------------------------------------------
@dataclass(frozen=True)
class DesignTrace:
    """One design's cache through a prefill and `steps` decoded tokens, indexed by step as DecodeTrace: what it holds
    and what the step's last query read, measured and in closed form, in the storage dtype."""

    design: str
    prompt_len: int
    steps: int
    batch: int
    storage_dtype: str
    tokens_seen: list[int]  # the cache's seq_len: tokens processed (a window or a state holds fewer, or none)
    nbytes: list[int]
    read_nbytes: list[int]
    formula_nbytes: list[int]
    formula_read_nbytes: list[int]
    float32_nbytes: list[int]  # the float32 layer's own cache, the one its outputs came from
    max_abs_diff: list[float]  # |cached output - full pass without a cache|, float32
    out_scale: float
    parameters: int


def design_parameters(design: Design) -> int:
    """Weights of the design's layer, counted on the meta device (nothing allocated)."""
    return sum(p.numel() for p in design.build(device="meta").parameters())


@torch.inference_mode()
def design_trace(
    design: Design, *, prompt_len: int, steps: int, batch: int, seed: int, storage_dtype: str
) -> DesignTrace:
    """Prefill prompt_len tokens, then decode steps tokens one at a time through the design's real layer, in float32,
    with its cache; the same calls go through a twin on the meta device in the storage dtype, whose cache is the one
    a layer in that dtype would hold (same code, same shapes, no memory). Each step records both caches' bytes and
    the core's closed forms (Design.formula_bytes)."""
    tokens = prompt_len + steps
    check_trace_bounds_tokens(prompt_len, steps, batch)
    parameters = design_parameters(design)
    check_work_bounds(parameters, tokens=tokens, batch=batch)
    dtype = as_dtype(storage_dtype)
    layer = design.build(seed)
    twin = design.build(device="meta", dtype=dtype)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, tokens, _d_model(design), generator=generator)  # [B, P + N, d_model]
    reference, _ = layer(x)  # the full pass without a cache: [B, P + N, d_model]
    cache, twin_cache = design.new_cache(layer, batch), design.new_cache(twin, batch)
    element = bytes_per_element(dtype)
    rows: dict[str, list] = {key: [] for key in ("seen", "held", "read", "f_held", "f_read", "f32", "diff")}

    def call(part: slice) -> None:
        out, _ = layer(x[:, part], cache=cache)
        twin(x[:, part].to(device="meta", dtype=dtype), cache=twin_cache)
        new = part.stop - part.start
        held, read = design.kind.formula_bytes(design, twin_cache.seq_len, batch, element, new)
        for key, value in (
            ("seen", cache.seq_len),
            ("held", twin_cache.nbytes),
            ("read", twin_cache.read_nbytes),
            ("f_held", held),
            ("f_read", read),
            ("f32", cache.nbytes),
            ("diff", float((out - reference[:, part]).abs().max())),
        ):
            rows[key].append(value)

    call(slice(0, prompt_len))  # the prefill
    for position in range(prompt_len, tokens):
        call(slice(position, position + 1))  # one token
    return DesignTrace(
        design=design.name,
        prompt_len=prompt_len,
        steps=steps,
        batch=batch,
        storage_dtype=str(dtype).removeprefix("torch."),
        tokens_seen=rows["seen"],
        nbytes=rows["held"],
        read_nbytes=rows["read"],
        formula_nbytes=rows["f_held"],
        formula_read_nbytes=rows["f_read"],
        float32_nbytes=rows["f32"],
        max_abs_diff=rows["diff"],
        out_scale=float(reference.abs().max()),
        parameters=parameters,
    )


def _d_model(design: Design) -> int:
    return int(design.config.d_model)


def check_trace_bounds_tokens(prompt_len: int, steps: int, batch: int) -> None:
    """TraceTooHeavy for a prompt, a number of steps or a batch outside the decode's bounds."""
    if not 1 <= prompt_len <= MAX_PROMPT_LEN or not 1 <= steps <= MAX_STEPS or not 1 <= batch <= MAX_TRACE_BATCH:
        raise TraceTooHeavy(
            N_(
                "prompt_len={prompt}, steps={steps}, batch={batch}: the step-by-step decode takes 1 to {most_prompt} "
                "prompt tokens, 1 to {most_steps} steps and 1 to {most_batch} sequences."
            ),
            prompt=str(prompt_len),
            steps=str(steps),
            batch=str(batch),
            most_prompt=MAX_PROMPT_LEN,
            most_steps=MAX_STEPS,
            most_batch=MAX_TRACE_BATCH,
        )


# --- whole models ----------------------------------------------------------------------------------------------------
GIB = 2**30


@dataclass(frozen=True)
class ModelRow:
    """One way of keeping a published model's cache: per token, per layer, whole model, at its context length."""

    key: str  # "published", "mha", "mqa", "gqa", "mla" or "published_repeated"
    model: str  # the preset's name
    cfg: AttentionConfig  # the layer this row keeps the cache of
    variant: str
    repeated_heads: bool
    elements_per_token_layer: int  # read off the measured cache
    elements_per_token_layer_formula: int
    bytes_per_token_layer: int
    bytes_per_token_model: int
    tokens_held: int  # by one layer's cache at the model's context (its sliding window, if any)
    layer_bytes_measured: int  # one sequence
    layer_bytes_formula: int
    model_bytes_measured: int  # one sequence, all layers
    batch: int
    model_bytes_batch_measured: int  # `batch` sequences, all layers
    model_bytes_batch_formula: int
    shapes: dict[str, tuple[int, ...]]  # one layer's cached tensors, one sequence
    ratio_to_mha: float
    gqa_equivalent_groups: float  # numbers per token / (2 d_h): the GQA group count that would cache as much


@dataclass(frozen=True)
class MemoryBudget:
    """GPUs' memory, the weights in it, and what is left for the cache (negative when the weights do not fit)."""

    memory: int
    weights: int
    left: int


@dataclass(frozen=True)
class Fit:
    """What fits in a budget: how long each of a batch of sequences grows, and sequences of the full context."""

    tokens_per_sequence: int
    users_at_context: int
    window_bound: bool  # a sliding window caps each sequence's cache below the budget


def what_if_configs(preset: ModelPreset, *, groups: int, latent: int, rope_dim: int) -> dict[str, AttentionConfig]:
    """The preset's attention as published, then re-expressed as MHA, MQA, GQA with `groups` KV heads, and MLA.

    The re-expressions keep d_model, the query heads and the head width d_h (for an MLA model, its per-head key and
    value width); MLA gets the latent width d_c = latent and rotary key width d_h^R = rope_dim, and keeps an MLA
    model's low-rank query.
    """
    published = preset.attention
    d_model, heads, head_dim = published.d_model, published.n_heads, published.head_dim
    if heads % groups:
        raise ValueError(f"{preset.name} has {heads} query heads: {groups} KV groups do not divide them.")
    grouped: dict[str, Any] = {
        "d_model": d_model,
        "n_heads": heads,
        "head_dim": head_dim,
        "rope_theta": published.rope_theta,
    }
    latent_extra: dict[str, Any] = {}
    if published.variant == "mla":
        latent_extra = {
            "q_lora_rank": published.q_lora_rank,
            "qk_nope_head_dim": published.qk_nope_head_dim,
            "v_head_dim": published.v_head_dim,
            "rope_interleave": published.rope_interleave,
        }
    return {
        "published": published,
        "mha": AttentionConfig("mha", **grouped),
        "mqa": AttentionConfig("mqa", **grouped),
        "gqa": AttentionConfig("gqa", n_kv_heads=groups, **grouped),
        "mla": AttentionConfig("mla", kv_lora_rank=latent, qk_rope_head_dim=rope_dim, **grouped | latent_extra),
    }


def tokens_held(preset: ModelPreset, tokens: int) -> int:
    """Tokens one layer's cache holds after `tokens` tokens, as the core's own cache keeps them (measured on the meta
    device): all, or with a sliding window of W the last W - 1 (the next query computes its own key; HF's
    DynamicSlidingWindowLayer keeps as many), so this page and /axes (attn_core.describe_model) agree."""
    if preset.sliding_window is None:
        return tokens
    options = AttentionOptions(window=preset.sliding_window)
    layer = build_attention(preset.attention, device="meta", dtype=torch.float32, options=options)
    return layer.cache_after(tokens).nbytes // kv_cache_bytes(preset.attention, 1, 1, torch.float32)


def model_rows(
    preset_name: str, *, groups: int, latent: int, rope_dim: int, dtype: str, batch: int, repeated_heads: bool = False
) -> list[ModelRow]:
    """One row per way of keeping the cache: per token, per layer, whole model, at the model's context length.

    Measured: one layer prefilled on the meta device with one sequence of the model's context (or its sliding
    window) and again with `batch` sequences. The closed forms are returned beside every measurement.
    With repeated_heads, the published grouped layer is measured once more with K/V cached after repeat_interleave.
    """
    preset = PRESETS[preset_name]
    configs = what_if_configs(preset, groups=groups, latent=latent, rope_dim=rope_dim)
    kinds = [(key, cfg, False) for key, cfg in configs.items()]
    if repeated_heads and preset.attention.variant != "mla":
        kinds.append(("published_repeated", preset.attention, True))
    held = tokens_held(preset, preset.context_len)
    element = bytes_per_element(dtype)
    mha_elements = configs["mha"].cache_elements_per_token
    d_h = preset.attention.head_dim
    rows = []
    for key, cfg, repeated in kinds:
        closed_form = repeated_kv_cache_bytes if repeated else kv_cache_bytes
        one = measure_cache(cfg, batch=1, tokens=held, dtype=dtype, repeated_heads=repeated)
        many = measure_cache(cfg, batch=batch, tokens=held, dtype=dtype, repeated_heads=repeated)
        elements = one.nbytes // (held * element)  # numbers one token leaves in one layer, read off the cache
        rows.append(
            ModelRow(
                key=key,
                model=preset.name,
                cfg=cfg,
                variant=cfg.variant,
                repeated_heads=repeated,
                elements_per_token_layer=elements,
                elements_per_token_layer_formula=(
                    2 * cfg.n_heads * cfg.head_dim if repeated else cfg.cache_elements_per_token
                ),
                bytes_per_token_layer=elements * element,
                bytes_per_token_model=elements * element * preset.n_layers,
                tokens_held=held,
                layer_bytes_measured=one.nbytes,
                layer_bytes_formula=closed_form(cfg, 1, held, dtype),
                model_bytes_measured=one.nbytes * preset.n_layers,
                batch=batch,
                model_bytes_batch_measured=many.nbytes * preset.n_layers,
                model_bytes_batch_formula=closed_form(cfg, batch, held, dtype) * preset.n_layers,
                shapes=one.shapes,
                ratio_to_mha=elements / mha_elements,
                gqa_equivalent_groups=elements / (2 * d_h),
            )
        )
    return rows


def model_bytes(
    preset: ModelPreset,
    cfg: AttentionConfig,
    *,
    batch: int,
    tokens: int,
    dtype: torch.dtype | str,
    repeated_heads: bool = False,
) -> int:
    """Closed form for the whole model: n_layers × one layer's cache for the tokens it holds (window-bounded)."""
    closed_form = repeated_kv_cache_bytes if repeated_heads else kv_cache_bytes
    return preset.n_layers * closed_form(cfg, batch, tokens_held(preset, tokens), dtype)


def memory_budget(preset: ModelPreset, *, gpu_gib: int, gpus: int, dtype: torch.dtype | str) -> MemoryBudget:
    """Memory left for the cache: the GPUs' memory minus the weights, stored in the same dtype as the cache."""
    memory = gpus * gpu_gib * GIB
    weights = int(preset.total_params * bytes_per_element(dtype))
    return MemoryBudget(memory=memory, weights=weights, left=memory - weights)


def sequences_that_fit(preset: ModelPreset, bytes_per_token_model: int, *, budget_left: int, tokens: int) -> int:
    """Sequences of `tokens` tokens whose caches fit together in budget_left bytes (0 if none)."""
    if budget_left <= 0 or tokens <= 0:
        return 0
    return budget_left // (bytes_per_token_model * tokens_held(preset, tokens))


def what_fits(preset: ModelPreset, row: ModelRow, *, budget_left: int, batch: int) -> Fit:
    """How long `batch` sequences can grow, and how many sequences of the full context fit, in budget_left bytes.

    A rolling window caps what each sequence holds at W - 1 tokens per layer (tokens_held), so past W a sequence
    grows for free.
    """
    per_token = row.bytes_per_token_model  # one sequence, all layers
    if budget_left <= 0:
        return Fit(tokens_per_sequence=0, users_at_context=0, window_bound=False)
    tokens = budget_left // (per_token * batch)
    window_bound = preset.sliding_window is not None and tokens >= tokens_held(preset, preset.context_len)
    full = preset.context_len if window_bound else min(tokens, preset.context_len)
    users = sequences_that_fit(preset, per_token, budget_left=budget_left, tokens=preset.context_len)
    return Fit(tokens_per_sequence=int(full), users_at_context=int(users), window_bound=window_bound)


def token_grid(preset: ModelPreset, points: int = 65) -> list[int]:
    """Token counts from 0 to the context length for a line plot, with the sliding window's corner included (where
    the cache stops growing)."""
    grid = {round(i * preset.context_len / (points - 1)) for i in range(points)}
    if preset.sliding_window is not None and preset.sliding_window < preset.context_len:
        grid.add(tokens_held(preset, preset.context_len))
    return sorted(grid)
