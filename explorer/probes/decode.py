"""Token-by-token decoding through a real layer and its cache: shapes, bytes and agreement with a full pass, per step.

A prompt is prefilled, then one token at a time is fed with the cache. The layer computes in float32, so that the
comparison with a full recompute shows float32 round-off and nothing else. Every tensor the layer appends to its cache
is also appended, cast, to a second cache of the same kind in the storage dtype (bfloat16, ...): its bytes are what a
cache in that dtype holds, measured from real tensors rather than scaled.

The full recompute is one forward pass over the whole sequence without a cache. With causal attention its row t is
exactly what recomputing the prefix up to t would give (token t cannot see later tokens), so it is the reference for
every step at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core import (
    AttentionConfig,
    GroupedKVCache,
    LatentKVCache,
    as_dtype,
    build_attention,
    empty_cache,
    kv_cache_bytes,
    parameter_count,
    repeated_kv_cache_bytes,
)
from explorer.i18n import N_

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
    parameters = parameter_count(cfg)
    if parameters > MAX_TRACE_PARAMETERS:
        raise TraceTooHeavy(
            N_(
                "{weights} weights; the step-by-step decode runs layers of at most {most}: choose a smaller "
                "$d_{{\\text{{model}}}}$ (or latent width $d_c$)."
            ),
            weights=parameters,
            most=MAX_TRACE_PARAMETERS,
        )
    work = parameters * (prompt_len + steps) * batch
    if work > MAX_TRACE_WORK:
        raise TraceTooHeavy(
            N_(
                "{weights} weights × {tokens} tokens × batch {batch} = {work} M multiply-adds a pass, above the "
                "{most} M this page runs at each new setting: use fewer tokens, a smaller batch or a smaller $d_{{\\text{{model}}}}$."
            ),
            weights=parameters,
            tokens=prompt_len + steps,
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
