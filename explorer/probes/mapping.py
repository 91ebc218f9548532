"""Which key/value store each query head reads, read off real layers by perturbation, MLA's two ways compared, and
q, k and v fused into one weight.

Nothing here assumes the formula "head i reads group i // (heads / groups)": a layer is built, a few tokens are
prefilled into its cache, one cached store is disturbed, one token is decoded, and the query heads whose outputs
moved are the ones that read that store. The per-head outputs are caught on their way into o_proj, where they are
still side by side ([B, L, H * d_v]) and not yet mixed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TypeVar, cast

import numpy as np
import torch
from einops import rearrange

from attn_core import (
    LAYOUTS,
    AttentionConfig,
    AttentionLayer,
    GroupedKVCache,
    GroupedQueryAttention,
    KVCache,
    LatentKVCache,
    MultiHeadLatentAttention,
    build_attention,
    fuse_qkv,
    fused_blocks,
    kv_head_counts,
)
from explorer.messages import N_
from explorer.probes import with_weights

CONTEXT_TOKENS = 3  # cached tokens before the probing decode step: a few suffice, every head then reads every store
# A head counts as reading a store when its output moves by more than this fraction of the outputs' scale. Readers
# move by O(0.1) of it (the disturbance is as large as the stored values); non-readers by float32 round-off at most.
READ_THRESHOLD = 1e-4


@dataclass(frozen=True)
class ReadMapping:
    """Which query heads read each cached store, found by disturbing it."""

    stores: list[str]  # the cached stores' names: kv0, kv1, ... or c_kv, k_rope
    reads: np.ndarray  # [n_stores, H] bool: head h's output moved when store s was disturbed
    change: np.ndarray  # [n_stores, H] how far it moved, relative to the outputs' largest magnitude


@dataclass(frozen=True)
class MorphFrame:
    """One step of the animation (MHA, GQA, ..., MQA, MLA), and what its layer was found to read (as ReadMapping)."""

    key: str  # "mha", "gqa:4", "mqa", "mla"
    variant: str
    n_kv_heads: int
    stores: list[str]
    reads: np.ndarray  # [n_stores, H] bool
    change: np.ndarray  # [n_stores, H]


@dataclass(frozen=True)
class PathShape:
    """One step along a layer: its tensor's shape for a prefill and for the decode step that follows."""

    step: str
    way: str  # "both", or for MLA "naive" or "absorbed"
    prefill: tuple  # a shape, or a tuple of shapes where a step makes two tensors
    decode: tuple
    note: str  # an English message with {placeholders} (marked N_: the probes speak no language), see note_values
    note_values: dict = field(default_factory=dict)  # what fills the note's placeholders: _(note, **note_values)


@dataclass(frozen=True)
class MlaWays:
    """One token decoded after context_len cached ones, naive and absorbed (float32, batch 1)."""

    max_abs_diff: float  # between the two ways' outputs
    output_scale: float  # the outputs' largest magnitude
    naive_ms: float  # fastest of `repeats` decode steps
    absorbed_ms: float
    context_len: int
    repeats: int
    input_width: int  # d_model of the layer timed


@dataclass(frozen=True)
class LayoutCheck:
    blocks: list[tuple[str, int]]  # (projection, head) of each head_dim-wide block of rows, in order
    max_abs_diff: float  # the fused product's blocks vs the separate projections' heads


@dataclass(frozen=True)
class FusedProjection:
    """Shapes of the fused weight at full size (meta device), and the check of each layout on a real layer."""

    weight: tuple[int, ...]
    fused: tuple[int, ...]  # x · W_qkvᵀ for a prefill
    q: tuple[int, ...]
    k: tuple[int, ...]
    v: tuple[int, ...]
    layouts: dict[str, LayoutCheck]
    output_scale: float  # the products' largest magnitude
    input_width: int  # d_model of the layer checked


def narrowed(cfg: AttentionConfig, input_width: int) -> AttentionConfig:
    """cfg with the input width d_model replaced and every per-head width kept: the same heads, groups, latent and
    rotary widths, the same cache shapes; only the projections' input side (x's width) differs."""
    if input_width == cfg.d_model:
        return cfg
    return replace(cfg, d_model=input_width, head_dim=cfg.head_dim)


def store_names(cfg: AttentionConfig) -> list[str]:
    """The separately cached stores of one layer: a K/V head per group, or MLA's latent and its shared rotary key."""
    if cfg.variant == "mla":
        return ["c_kv", "k_rope"]
    return [f"kv{g}" for g in range(cfg.n_kv_heads)]


def _disturb(
    cache: GroupedKVCache | LatentKVCache, cfg: AttentionConfig, row: int, store: int, noise: torch.Generator
) -> None:
    """Add noise as large as the stored values to one store of one batch row, in place."""
    if cfg.variant == "mla":
        latent = cast(LatentKVCache, cache)
        targets = [latent.c_kv[row, 0] if store == 0 else latent.k_rope[row, 0]]
    else:
        grouped = cast(GroupedKVCache, cache)
        targets = [grouped.k[row, store], grouped.v[row, store]]
    for target in targets:
        scale = target.abs().mean() + 1e-3
        target += scale * torch.randn(target.shape, generator=noise, dtype=target.dtype)


def read_mapping(cfg: AttentionConfig, *, seed: int) -> ReadMapping:
    """Which query heads read each cached store of the layer built from cfg and seed.

    One batch row per store plus an undisturbed one: all rows see the same tokens, row 1 + s has store s disturbed
    after the prefill, and all rows decode one more token together.

    Returns a ReadMapping: the stores' names, which heads read each, and how far each head's output moved.
    """
    layer = build_attention(cfg, seed=seed)
    stores = store_names(cfg)
    rows = len(stores) + 1
    generator = torch.Generator().manual_seed(seed)
    context = torch.randn(1, CONTEXT_TOKENS, cfg.d_model, generator=generator).expand(rows, -1, -1)
    new_token = torch.randn(1, 1, cfg.d_model, generator=generator).expand(rows, -1, -1)
    head_outputs: list[torch.Tensor] = []
    hook = layer.o_proj.register_forward_pre_hook(lambda _module, args: head_outputs.append(args[0]))
    try:
        with torch.inference_mode():
            cache = layer.new_cache(batch_size=rows)
            layer(context, cache=cache)
            for store in range(len(stores)):
                _disturb(cache, cfg, 1 + store, store, generator)
            head_outputs.clear()
            layer(new_token, cache=cache)
    finally:
        hook.remove()
    per_head = rearrange(head_outputs[-1][:, 0], "r (h d) -> r h d", h=cfg.n_heads)  # [rows, H, d_v]
    scale = per_head[0].abs().max().item()
    change = ((per_head[1:] - per_head[:1]).abs().amax(dim=-1) / scale).numpy()  # [n_stores, H]
    return ReadMapping(stores=stores, reads=change > READ_THRESHOLD, change=change)


def morph_configs(d_model: int, n_heads: int, kv_lora_rank: int, rope_dim: int) -> list[tuple[str, AttentionConfig]]:
    """The animation's steps: MHA, GQA through every group count between, MQA, then MLA (keys as "gqa:4")."""
    steps: list[tuple[str, AttentionConfig]] = [("mha", AttentionConfig("mha", d_model=d_model, n_heads=n_heads))]
    for groups in reversed(kv_head_counts(n_heads)[1:-1]):  # GQA: every group count between MHA and MQA
        steps.append((f"gqa:{groups}", AttentionConfig("gqa", d_model=d_model, n_heads=n_heads, n_kv_heads=groups)))
    steps.append(("mqa", AttentionConfig("mqa", d_model=d_model, n_heads=n_heads)))
    steps.append(
        (
            "mla",
            AttentionConfig(
                "mla", d_model=d_model, n_heads=n_heads, kv_lora_rank=kv_lora_rank, qk_rope_head_dim=rope_dim
            ),
        )
    )
    return steps


def read_morph(
    d_model: int, n_heads: int, kv_lora_rank: int, rope_dim: int, *, seed: int, input_width: int | None = None
) -> list[MorphFrame]:
    """read_mapping for every animation step; input_width (if given) narrows each layer's input (see narrowed)."""
    frames = []
    for key, cfg in morph_configs(d_model, n_heads, kv_lora_rank, rope_dim):
        probe_cfg = narrowed(cfg, input_width or d_model)
        found = read_mapping(probe_cfg, seed=seed)
        frames.append(
            MorphFrame(key, cfg.variant, cfg.n_kv_heads, stores=found.stores, reads=found.reads, change=found.change)
        )
    return frames


# --- shapes along the path ------------------------------------------------------------------------------------------
def path_shapes(cfg: AttentionConfig, *, batch: int, seq_len: int) -> list[PathShape]:
    """Tensor shapes along one layer, from the real module run on the meta device (exact at any size, no memory).

    One row per step with its shape for a prefill of seq_len tokens and for the decode step that follows
    (1 new token against seq_len + 1 keys). MLA rows carry way = "both", "naive" or "absorbed".
    """
    layer = build_attention(cfg, device="meta")
    results = [_trace(layer, cfg, batch, seq_len, decode=False), _trace(layer, cfg, batch, seq_len, decode=True)]
    return [
        PathShape(step=step, way=way, prefill=prefill, decode=decode, note=note[0], note_values=note[1])
        if isinstance(note, tuple)
        else PathShape(step=step, way=way, prefill=prefill, decode=decode, note=note)
        for (step, way, prefill, note), (_, _, decode, _) in zip(*results, strict=True)
    ]


def _trace(
    layer: GroupedQueryAttention | MultiHeadLatentAttention,
    cfg: AttentionConfig,
    batch: int,
    seq_len: int,
    *,
    decode: bool,
) -> list[tuple]:
    """(step, way, shape, note) rows of one forward on meta: a prefill of seq_len tokens, or one decoded token. Steps
    and notes are English messages marked for the catalog (N_), translated where shown; a note with values is a
    (message, values) pair."""
    meta = torch.device("meta")
    concat: list[torch.Size] = []
    hook = layer.o_proj.register_forward_pre_hook(lambda _module, args: concat.append(args[0].shape))
    try:
        with torch.inference_mode():
            prefill = torch.empty(batch, seq_len, cfg.d_model, device=meta) if decode else None
            x = torch.empty(batch, 1 if decode else seq_len, cfg.d_model, device=meta)
            if cfg.variant == "mla":
                latent = cast(MultiHeadLatentAttention, layer)
                return _latent_rows(latent, cfg, x, _cache_after(latent, batch, prefill), concat)
            grouped = cast(GroupedQueryAttention, layer)
            # the app's variants have no window (attn_core.options): a plain grouped cache
            return _grouped_rows(grouped, cfg, x, cast(GroupedKVCache, _cache_after(grouped, batch, prefill)), concat)
    finally:
        hook.remove()


Cache = TypeVar("Cache", bound=KVCache)


def _cache_after(layer: AttentionLayer[Cache], batch: int, prefill: torch.Tensor | None) -> Cache:
    """A fresh cache of the layer, holding the prefill's tokens when there is one."""
    cache = layer.new_cache(batch)
    if prefill is not None:
        layer(prefill, cache=cache)
    return cache


def _grouped_rows(
    layer: GroupedQueryAttention,
    cfg: AttentionConfig,
    x: torch.Tensor,
    cache: GroupedKVCache,
    concat: list[torch.Size],
) -> list[tuple]:
    start = cache.seq_len
    q = layer.queries(x, start).joined()
    k, v = layer.keys_values(x, start)
    out, weights = with_weights(layer(x, cache=cache, return_weights=True))
    group = cfg.group_size
    seen = (cache.k.shape[0], cfg.n_heads, cache.k.shape[2], cache.k.shape[3])
    return [
        ("x", "both", tuple(x.shape), _coming_in(start)),
        ("q = x · W_q", "both", tuple(q.shape), N_("one query per head")),
        ("k = x · W_k", "both", tuple(k.shape), N_("the new tokens' keys, one per KV head")),
        ("v = x · W_v", "both", tuple(v.shape), N_("the new tokens' values, one per KV head")),
        (N_("cache k, v"), "both", cache.shapes()["k"], N_("what is stored: K/V heads only, never their copies")),
        (
            N_("k, v as each query head sees them"),
            "both",
            seen,
            (N_("no copy: head i reads KV head i // {group}"), {"group": group})
            if group > 1
            else N_("each head has its own"),
        ),
        (N_("scores = softmax(q kᵀ / √d)"), "both", tuple(weights.shape), N_("one row of weights per query and head")),
        (N_("heads' outputs, side by side"), "both", tuple(concat[-1]), N_("weights · v per head, concatenated")),
        (N_("out = · W_o"), "both", tuple(out.shape), N_("back to the model width")),
    ]


def _coming_in(start: int) -> str | tuple[str, dict[str, int]]:
    """The note of the x row: the tokens coming in, after the cached ones if any."""
    if not start:
        return N_("the tokens coming in")
    return (N_("the tokens coming in (after {start} cached)"), {"start": start})


def _latent_rows(
    layer: MultiHeadLatentAttention,
    cfg: AttentionConfig,
    x: torch.Tensor,
    cache: LatentKVCache,
    concat: list[torch.Size],
) -> list[tuple]:
    """MLA's path: the steps both ways share, then the naive way's (keys and values up-projected from the cache) and
    the absorbed way's (queries moved into latent space), each read from a real pass of the layer."""
    start = cache.seq_len
    q_nope, q_rope = layer.queries(x, start)
    rows = _latent_input_rows(layer, x, start, q_nope, q_rope)
    _, weights = with_weights(layer(x, cache=cache, return_weights=True, absorb=False))  # appends to the cache
    rows += _latent_naive_rows(layer, cache, weights, concat[-1])
    rows += _latent_absorbed_rows(layer, x, cache, start, (q_nope, q_rope), concat)
    return rows


def _latent_input_rows(
    layer: MultiHeadLatentAttention, x: torch.Tensor, start: int, q_nope: torch.Tensor, q_rope: torch.Tensor
) -> list[tuple]:
    """The tokens coming in, their queries and what each token leaves for the cache."""
    c_kv_new, k_rope_new = layer.compress(x, start)
    return [
        ("x", "both", tuple(x.shape), _coming_in(start)),
        (
            "q_nope, q_rope = x · W_q",
            "both",
            (tuple(q_nope.shape), tuple(q_rope.shape)),
            N_("per head: a content part and a rotary part"),
        ),
        (
            "c_kv, k_rope = x · W_dkv",
            "both",
            (tuple(c_kv_new.shape), tuple(k_rope_new.shape)),
            N_("one latent and one rotary key per token, for all heads"),
        ),
    ]


def _latent_naive_rows(
    layer: MultiHeadLatentAttention, cache: LatentKVCache, weights: torch.Tensor, heads_out: torch.Size
) -> list[tuple]:
    """The cache after the naive pass, and that pass: every cached token up-projected to keys and values, as MHA."""
    stored = cache.shapes()
    keys, values = layer.up_project(cache.c_kv, cache.k_rope)
    return [
        (N_("cache c_kv, k_rope"), "both", (stored["c_kv"], stored["k_rope"]), N_("what is stored")),
        (
            "k = [c_kv · W_uk ; k_rope], v = c_kv · W_uv",
            "naive",
            (tuple(keys.shape), tuple(values.shape)),
            N_("every cached token up-projected, every step"),
        ),
        (N_("scores = softmax(q kᵀ / √d)"), "naive", tuple(weights.shape), N_("as MHA")),
        (N_("heads' outputs, side by side"), "naive", tuple(heads_out), N_("weights · v per head")),
    ]


def _latent_absorbed_rows(
    layer: MultiHeadLatentAttention,
    x: torch.Tensor,
    cache: LatentKVCache,
    start: int,
    queries: tuple[torch.Tensor, torch.Tensor],
    concat: list[torch.Size],
) -> list[tuple]:
    """The absorbed way: W_uk and W_uv folded into the query and the output, attention over the cache as stored,
    then the output projection both ways end with (its pass runs on a cache refilled to `start` tokens)."""
    q_nope, q_rope = queries
    w_uk, w_uv = layer.absorbed_weights()
    q_latent = torch.einsum("bhln,hnc->bhlc", q_nope, w_uk)
    rows = [
        (
            N_("W_uk, W_uv (slices of kv_b_proj)"),
            "absorbed",
            (tuple(w_uk.shape), tuple(w_uv.shape)),
            N_("folded into the query and the output"),
        ),
        (
            N_("q_nope · W_uk, then [ · ; q_rope]"),
            "absorbed",
            tuple(torch.cat((q_latent, q_rope), dim=-1).shape),
            N_("queries moved into latent space"),
        ),
        (
            N_("keys = cached [c_kv ; k_rope]"),
            "absorbed",
            tuple(cache.latent.shape),
            N_("one shared key head, read as stored: MQA in latent space"),
        ),
    ]
    out, weights = with_weights(layer(x, cache=_refill_like(layer, cache, start), return_weights=True, absorb=True))
    return [
        *rows,
        (N_("scores = softmax(q kᵀ / √d)"), "absorbed", tuple(weights.shape), N_("the same scores as the naive way")),
        (N_("heads' outputs, side by side"), "absorbed", tuple(concat[-1]), N_("(weights · c_kv) · W_uv per head")),
        (N_("out = · W_o"), "both", tuple(out.shape), N_("back to the model width")),
    ]


def _refill_like(layer: MultiHeadLatentAttention, cache: LatentKVCache, start: int) -> LatentKVCache:
    """A fresh cache holding `start` tokens again (the naive pass above appended the new ones)."""
    fresh = layer.new_cache(cache.latent.shape[0])
    if start:
        fresh.append(cache.c_kv[:, :, :start], cache.k_rope[:, :, :start])
    return fresh


# --- MLA: the two ways ----------------------------------------------------------------------------------------------
def compare_mla_ways(cfg: AttentionConfig, *, seed: int, context_len: int, repeats: int = 5) -> MlaWays:
    """Decode one token after context_len cached tokens, naive (up-project the cache) and absorbed, in float32, batch 1.

    Returns the largest absolute difference between the two outputs, the outputs' largest magnitude, and the fastest
    of `repeats` wall times of each way's decode step in milliseconds (each on its own copy of the same cache): the
    fastest run is the one least disturbed by whatever else the machine was doing.
    """
    if cfg.variant != "mla":
        raise ValueError("The two ways of computing attention belong to MLA: pass an mla config.")
    layer = build_attention(cfg, seed=seed)
    generator = torch.Generator().manual_seed(seed)
    context = torch.randn(1, context_len, cfg.d_model, generator=generator)
    new_token = torch.randn(1, 1, cfg.d_model, generator=generator)
    with torch.inference_mode():
        c_kv, k_rope = layer.compress(context, 0)  # exactly what a prefill would cache

        def filled_cache() -> LatentKVCache:
            cache = layer.new_cache(1)
            cache.append(c_kv, k_rope)
            return cache

        outputs = {
            absorb: layer(new_token, cache=filled_cache(), absorb=absorb)[0] for absorb in (False, True)
        }  # + warm-up
        samples: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeats):  # the two ways take turns, so a busy moment of the machine hits both alike
            for absorb in (False, True):
                cache = filled_cache()
                began = time.perf_counter()
                layer(new_token, cache=cache, absorb=absorb)
                samples[absorb].append(time.perf_counter() - began)
    return MlaWays(
        max_abs_diff=(outputs[True] - outputs[False]).abs().max().item(),
        output_scale=outputs[False].abs().max().item(),
        naive_ms=min(samples[False]) * 1e3,
        absorbed_ms=min(samples[True]) * 1e3,
        context_len=context_len,
        repeats=repeats,
        input_width=cfg.d_model,
    )


# --- one fused weight for q, k and v --------------------------------------------------------------------------------
def fused_projection(cfg: AttentionConfig, *, seed: int, batch: int, seq_len: int, input_width: int) -> FusedProjection:
    """The layer's q, k and v projections as one fused weight, in each layout of attn_core.fused.

    Shapes come from the real layer on the meta device at full size (weight, the fused product for a prefill of
    seq_len tokens, and q, k, v split from it). The check runs the layer built from (cfg narrowed to input_width, seed)
    on a few seeded tokens: each head_dim-wide block of the fused product against the head of the separate
    projection it holds, as the largest absolute difference per layout, with the products' largest magnitude.
    """
    meta = build_attention(cfg, device="meta")
    weight, _ = fuse_qkv(meta, layout="stacked")
    fused = torch.nn.functional.linear(torch.empty(batch, seq_len, cfg.d_model, device="meta"), weight)
    q, k, v = fused.split(
        [cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim], -1
    )
    layer = build_attention(narrowed(cfg, input_width), seed=seed)
    x = torch.randn(1, CONTEXT_TOKENS, input_width, generator=torch.Generator().manual_seed(seed))
    layouts: dict[str, LayoutCheck] = {}
    scale = 0.0
    offset = {"q": 0, "k": cfg.n_heads, "v": cfg.n_heads + cfg.n_kv_heads}  # a head's block among q, k, v side by side
    with torch.inference_mode():
        separate = torch.cat([getattr(layer, f"{name}_proj")(x) for name in "qkv"], -1).unflatten(
            -1, (-1, cfg.head_dim)
        )
        for layout in LAYOUTS:
            blocks = fused_blocks(cfg, layout)
            product = torch.nn.functional.linear(x, *fuse_qkv(layer, layout=layout)).unflatten(-1, (-1, cfg.head_dim))
            expected = separate[:, :, [offset[name] + head for name, head in blocks]]  # the same blocks, in this order
            layouts[layout] = LayoutCheck(blocks=blocks, max_abs_diff=(product - expected).abs().max().item())
            scale = max(scale, product.abs().max().item())
    return FusedProjection(
        weight=tuple(weight.shape),
        fused=tuple(fused.shape),
        q=tuple(q.shape),
        k=tuple(k.shape),
        v=tuple(v.shape),
        layouts=layouts,
        output_scale=scale,
        input_width=input_width,
    )
