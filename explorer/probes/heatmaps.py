"""Attention weights of real layers for the heatmaps page: every head on one input, the steps inside one head, one
decode step through the cache, and the four variants compared on the same input.

Everything returned is plain numpy or python numbers. Work is bounded by a token window (see token_window): with
causal attention the first N rows of the attention matrix are exactly those of the full-length pass, since a query
never sees a later key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
import torch
from einops import rearrange
from torch import nn

from attn_core import (
    AttentionConfig,
    GroupedKVCache,
    GroupedQueryAttention,
    LatentKVCache,
    MultiHeadLatentAttention,
    build_attention,
    causal_allowed,
    seeded_generator,
)
from explorer.probes import with_weights

MAX_TEXT_CHARS = 200
MAX_TEXT_TOKENS = 128
MAX_WINDOW_TOKENS = 512
WINDOW_CELL_BUDGET = 2**21  # computed heads x tokens^2 weights held per pass (8 MiB of float32)
WINDOW_WORK_BUDGET = 2**32  # multiply-adds of the computed heads' four projections over the window
COMPARE_WORK_BUDGET = (
    2**28
)  # tokens x d_model^2 for the variants compared (MHA built and four layers run): kept within a rerun
MLA_CONVERSION_MAX_D_MODEL = (
    1024  # the singular vectors of MHA's [2 d_model, d_model] key-value weights: work grows as d_model^3
)


# --- inputs ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InputSpec:
    """What goes into the layer: seeded random vectors for n_tokens positions, or text tokens through a seeded
    embedding (one fixed random vector per distinct token). Hashable, so it can key a cache."""

    d_model: int
    seed: int
    scale: float = 1.0
    tokens: tuple[str, ...] | None = None
    n_tokens: int = 0
    # The words whose vectors the tokens get, one per token, where the tokens translate them: the lesson's sentence in
    # Chinese is its English one's numbers, so both languages show one example. None: each token is its own word.
    meanings: tuple[str, ...] | None = None

    @property
    def length(self) -> int:
        return len(self.tokens) if self.tokens is not None else self.n_tokens

    def labels(self) -> list[str]:
        """One label per position: the token, or its index for random inputs."""
        return list(self.tokens) if self.tokens is not None else [str(i) for i in range(self.n_tokens)]

    def truncated(self, length: int) -> InputSpec:
        """The first `length` positions."""
        if self.tokens is not None:
            meanings = None if self.meanings is None else self.meanings[:length]
            return replace(self, tokens=self.tokens[:length], meanings=meanings)
        return replace(self, n_tokens=min(self.n_tokens, length))


# Scripts written without spaces between words (Chinese, Japanese kana, their punctuation and full-width forms): with
# no tokenizer for the seeded layers, each of their characters is a token of its own.
UNSPACED = "\u2e80-\u2fdf\u3000-\u30ff\u3100-\u312f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_WORDS = re.compile(f"[{UNSPACED}]|[^\\s{UNSPACED}]+")


def tokenize(text: str, mode: str) -> list[str]:
    """Characters ("chars") or words ("words"): whitespace-separated runs, where a character of a script written
    without spaces (Chinese: 我爱猫 -> 我 爱 猫) is a word of its own, so mixed text splits at both."""
    return list(text) if mode == "chars" else _WORDS.findall(text)


def seeded_vector(key: str, d_model: int) -> torch.Tensor:
    """A standard normal vector determined by key alone (the same in every session)."""
    return torch.randn(d_model, generator=seeded_generator(key))


def make_inputs(spec: InputSpec) -> torch.Tensor:
    """spec -> x [1, L, d_model]. Each position's vector depends only on (seed, token or position), so a shorter
    window is exactly the start of a longer one, and a repeated token gets the same vector every time."""
    if spec.tokens is not None:
        keys = [f"token|{spec.seed}|{token}" for token in spec.meanings or spec.tokens]
    else:
        keys = [f"position|{spec.seed}|{i}" for i in range(spec.n_tokens)]
    if not keys:
        return torch.zeros(1, 0, spec.d_model)
    return (torch.stack([seeded_vector(key, spec.d_model) for key in keys]) * spec.scale)[None]


def token_window(n_heads: int, d_model: int, head_dim: int, wanted: int) -> int:
    """How many tokens are computed for n_heads heads of head_dim (the heads a pass computes, not the layer's):
    all wanted ones, up to what one pass can do interactively here."""
    by_cells = math.isqrt(WINDOW_CELL_BUDGET // n_heads)
    by_work = WINDOW_WORK_BUDGET // (4 * d_model * n_heads * head_dim)
    return max(1, min(wanted, MAX_WINDOW_TOKENS, by_cells, by_work))


# --- one head's queries, keys and values, from the layer's own projections -----------------------------------------
@dataclass
class HeadTensors:
    q: torch.Tensor  # [H, L, d_k] after RoPE, one per query head
    k: torch.Tensor  # [G, S, d_k] after RoPE, one per KV head (MLA: G = H, each head's own, up-projected)
    v: torch.Tensor  # [G, S, d_v]
    kv_head: list[int]  # the KV head each query head reads
    scale: float  # 1 / sqrt(d_k)


def head_tensors(layer: GroupedQueryAttention | MultiHeadLatentAttention, x: torch.Tensor) -> HeadTensors:
    """The q, k, v the layer's forward pass attends with (prefill from position 0, batch 1), per head."""
    cfg = layer.cfg
    if cfg.variant == "mla":
        latent = cast(MultiHeadLatentAttention, layer)
        q = latent.queries(x, 0).joined()  # [1, H, L, d_nope + d_h^R]
        c_kv, k_rope = latent.compress(x, 0)
        keys, values = latent.up_project(c_kv, k_rope)  # [1, H, S, d_nope + d_h^R], [1, H, S, d_v]
        return HeadTensors(q[0], keys[0], values[0], list(range(cfg.n_heads)), cfg.qk_head_dim**-0.5)
    grouped = cast(GroupedQueryAttention, layer)
    q = grouped.queries(x, 0).joined()
    k, v = grouped.keys_values(x, 0)
    kv_head = [h // cfg.group_size for h in range(cfg.n_heads)]
    return HeadTensors(q[0], k[0], v[0], kv_head, cfg.head_dim**-0.5)


@contextmanager
def projections_computed_once(layer: nn.Module) -> Iterator[dict[nn.Linear, list[tuple[torch.Tensor, torch.Tensor]]]]:
    """While a layer is taken apart, each of its linear projections called again on an input equal to one it has
    already seen returns the output it gave then, instead of a second product with d_model² weights (the costliest
    step of a wide layer). Yields {projection: [(input, output), ...]} in call order, so the caller can read what went in.

    Same input, same weights, same kernel: the numbers are the ones a second call would compute.
    """
    calls: dict[nn.Linear, list[tuple[torch.Tensor, torch.Tensor]]] = {}
    for module in layer.modules():
        if not isinstance(module, nn.Linear):
            continue
        seen = calls[module] = []

        def remembering(
            inp: torch.Tensor,
            compute: Callable[[torch.Tensor], torch.Tensor] = module.forward,
            seen: list[tuple[torch.Tensor, torch.Tensor]] = seen,
        ) -> torch.Tensor:
            for past_in, past_out in seen:
                if past_in.shape == inp.shape and torch.equal(past_in, inp):
                    return past_out
            out = compute(inp)
            seen.append((inp, out))
            return out

        # An instance attribute: shadows Linear.forward on this layer only (mypy cannot type replacing a method).
        module.forward = remembering  # type: ignore[method-assign,assignment]
    try:
        yield calls
    finally:
        for module in calls:
            del module.forward


@dataclass(frozen=True)
class HeadSteps:
    """Scaled dot-product attention for one head, one step at a time."""

    q: np.ndarray  # [L, d_k]
    k: np.ndarray  # [S, d_k]
    v: np.ndarray  # [S, d_v]
    scores: np.ndarray  # [L, S] q kᵀ
    scaled: np.ndarray  # [L, S] × 1/√d_k
    masked: np.ndarray  # [L, S] with -inf where the causal mask forbids
    weights: np.ndarray  # [L, S] after softmax
    out: np.ndarray  # [L, d_v]


@dataclass(frozen=True)
class DecodeStep:
    """The last token decoded through the real cache after a prefill of the others."""

    row: np.ndarray  # [H, S] its weights, one row per computed head
    cached_before: int  # tokens the cache held before the step
    cache_shapes: dict[str, tuple[int, ...]]  # the cached tensors after the step
    cache_elements_per_token: int


@dataclass(frozen=True)
class VariantPass:
    """One layer's forward pass taken apart. Arrays are indexed by position in `heads`."""

    weights: np.ndarray  # [H, L, S] post-softmax, of the computed heads
    q: np.ndarray  # [H, L, d_k] after RoPE
    k: np.ndarray  # [G, S, d_k] after RoPE, one per KV head read (MLA: one per head, up-projected)
    v: np.ndarray  # [G, S, d_v]
    heads: list[int]  # the query head of each row
    kv_head: list[int]  # the KV head each row reads
    kv_heads: list[int]  # the KV head of each row of k and v
    scale: float  # 1 / sqrt(d_k)
    output_rebuild_error: float  # heads' outputs side by side vs what o_proj received
    output_scale: float  # largest |value| o_proj received
    decode: DecodeStep


@dataclass(frozen=True)
class Comparison:
    """One variant made from the MHA layer, against MHA on the same input."""

    weights: np.ndarray  # [H, L, S]
    output_distance: float  # ||out - out_mha|| / ||out_mha||
    overlap_with_mha: np.ndarray  # [H] mean map overlap of head h with MHA's head h
    within_group_overlap: float | None  # mean overlap between heads of one KV group (None: no such pair)
    between_group_overlap: float | None  # and of different groups
    group_size: int


@dataclass(frozen=True)
class Skipped:
    """A variant the comparison did not compute, and why (a sentence's end, in English: the page words it from
    d_model and limit)."""

    reason: str
    d_model: int = 0
    limit: int = 0


def head_steps(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> HeadSteps:
    """Scaled dot-product attention for one head, one step at a time: q [L, d_k], k [S, d_k], v [S, d_v].

    The causal mask is aligned to the end (query i is position S - L + i), as in the layer.
    """
    scores = q @ k.T  # [L, S]
    scaled = scores * scale
    masked = scaled
    if causal:
        allowed = causal_allowed(q.shape[0], k.shape[0], q.device)[0, 0]
        masked = scaled.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    out = weights @ v  # [L, d_v]
    return HeadSteps(
        q=q.numpy(),
        k=k.numpy(),
        v=v.numpy(),
        scores=scores.numpy(),
        scaled=scaled.numpy(),
        masked=masked.numpy(),
        weights=weights.numpy(),
        out=out.numpy(),
    )


def steps_of_head(result: VariantPass, head: int, causal: bool) -> HeadSteps:
    """head_steps for one head of an explore_variant result: its query, and the KV head it reads."""
    index = result.heads.index(head)
    kv = result.kv_heads.index(result.kv_head[index])
    q, k, v = (torch.from_numpy(array) for array in (result.q[index], result.k[kv], result.v[kv]))
    return head_steps(q, k, v, result.scale, causal)


# --- the page's pass ------------------------------------------------------------------------------------------------
@torch.inference_mode()
def explore_variant(
    cfg: AttentionConfig, seed: int, inputs: InputSpec, *, causal: bool, heads: range | None = None
) -> VariantPass:
    """Run the layer built from (cfg, seed) on the inputs, asking for its weights, and take it apart.

    heads: the query heads to compute (all by default): the layer is built with only those and the KV heads they
    read (build_attention's heads=), whose heads are the full layer's. Arrays are indexed by position in `heads`
    (.heads and .kv_head give each row's head and the KV head it reads; .kv_heads the heads of k and v).

    One build and one forward pass serve every section of the page: the post-softmax weights of every head [H, L, S];
    each head's q, k, v (for the step-by-step view), read from the projections that forward pass computed; a check
    that the heads' outputs put side by side are what o_proj received; and one decode step through the real cache:
    the last token attending to the L - 1 cached ones and itself.
    """
    heads = range(cfg.n_heads) if heads is None else heads
    kv_heads = cfg.kv_heads_read(heads)
    layer = build_attention(cfg, seed=seed, heads=heads)
    x = make_inputs(inputs)
    with projections_computed_once(layer) as calls:
        out, weights = with_weights(layer(x, return_weights=True, causal=causal))  # weights [1, H, L, S]
        parts = head_tensors(layer, x)
        decode = decode_last_token(layer, x, parts)
    heads_in = calls[layer.o_proj][0][0]  # what o_proj received in the forward pass: [1, L, H * d_v]
    per_head_out = torch.einsum("hls,hsd->hld", weights[0], parts.v[parts.kv_head])  # [H, L, d_v]
    side_by_side = rearrange(per_head_out, "h l d -> 1 l (h d)")
    return VariantPass(
        weights=weights[0].numpy(),
        q=parts.q.numpy(),
        k=parts.k.numpy(),
        v=parts.v.numpy(),
        heads=list(heads),
        kv_head=[kv_heads[local] for local in parts.kv_head],
        kv_heads=list(kv_heads),
        scale=parts.scale,
        output_rebuild_error=float((side_by_side - heads_in).abs().max()) if out.numel() else 0.0,
        output_scale=float(heads_in.abs().max()) if out.numel() else 0.0,
        decode=decode,
    )


def prefilled_cache(
    layer: GroupedQueryAttention | MultiHeadLatentAttention, x: torch.Tensor, parts: HeadTensors
) -> GroupedKVCache | LatentKVCache:
    """A fresh cache holding all but the last token as a prefill stores them, through the cache's own append: for
    grouped layers their keys after RoPE and values (parts: what the forward pass attended with), for MLA the
    normalised latent c_kv and the rotated shared key k_rope (the layer's own compress). A prefill forward pass would
    also run the queries and o_proj over those tokens, whose results a cache does not keep."""
    if layer.cfg.variant == "mla":
        latent = cast(MultiHeadLatentAttention, layer).new_cache(1)
        if x.shape[1] > 1:
            c_kv, k_rope = cast(MultiHeadLatentAttention, layer).compress(x, 0)  # [1, 1, L, d_c], [1, 1, L, d_h^R]
            latent.append(c_kv[:, :, :-1], k_rope[:, :, :-1])
        return latent
    grouped = cast(GroupedKVCache, layer.new_cache(1))  # the app's variants have no window (attn_core.options)
    if x.shape[1] > 1:
        grouped.append(parts.k[None, :, :-1], parts.v[None, :, :-1])  # [1, K, L - 1, d_h]
    return grouped


def decode_last_token(
    layer: GroupedQueryAttention | MultiHeadLatentAttention, x: torch.Tensor, parts: HeadTensors
) -> DecodeStep:
    """Prefill all but the last token into a fresh cache, then decode the last one asking for its weights.

    The decode step is the real generation path (for MLA, attention in latent space with absorbed weights).
    """
    cache = prefilled_cache(layer, x, parts)
    held_before = cache.seq_len
    _, weights = with_weights(layer(x[:, -1:], cache=cache, return_weights=True))  # [1, H, 1, S]
    shapes = cache.shapes()
    return DecodeStep(
        row=weights[0, :, 0].numpy(),  # [H, S]
        cached_before=held_before,
        cache_shapes={name: tuple(shape) for name, shape in shapes.items()},
        cache_elements_per_token=sum(math.prod(shape[3:]) * shape[1] for shape in shapes.values()),
    )


# --- comparing variants on one input --------------------------------------------------------------------------------
def pooled_from_mha(mha: GroupedQueryAttention, cfg: AttentionConfig) -> GroupedQueryAttention:
    """A GQA/MQA layer made from an MHA layer the way Ainslie et al. (2023, GQA) start their uptraining: each group's
    key and value heads are the mean of the MHA heads in it; queries and output projection are kept as they are."""
    group = cfg.group_size
    state = dict(mha.state_dict())
    for name in ("k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias"):
        if name in state and group > 1:  # groups of one head: MHA's own weights, shared rather than copied
            per_head = state[name].reshape(cfg.n_kv_heads, group, cfg.head_dim, -1)  # [G, r, d_h, d_model or 1]
            state[name] = per_head.mean(dim=1).reshape(cfg.n_kv_heads * cfg.head_dim, *state[name].shape[1:])
    layer = GroupedQueryAttention(cfg, device="meta")
    layer.load_state_dict(state, assign=True)  # shares q_proj and o_proj with the MHA layer: no copy
    return layer


@torch.no_grad()
def joint_kv_basis(mha: GroupedQueryAttention) -> torch.Tensor:
    """The right singular vectors of MHA's joint key-value weights [W_K; W_V] ([2 d_model, d_model]), as the columns
    of a [d_model, d_model] matrix in order of decreasing singular value.

    Computed as the eigenvectors of the Gram matrix W_Kᵀ·W_K + W_Vᵀ·W_V (the order of the rows does not change it):
    a half to a third of the SVD's time here, and the rank-d_c truncation it gives is as close to the best one (tests hold
    it to Eckart–Young's residual). Depends on the MHA weights only, so one basis serves every latent width d_c.
    """
    w_k, w_v = mha.k_proj.weight, mha.v_proj.weight
    gram = w_k.T @ w_k + w_v.T @ w_v  # [d_model, d_model]
    _, vectors = torch.linalg.eigh(gram)  # ascending eigenvalues
    return vectors.flip(-1)


def latent_from_mha(
    mha: GroupedQueryAttention, cfg: AttentionConfig, input_rms: float, basis: torch.Tensor | np.ndarray | None = None
) -> MultiHeadLatentAttention:
    """An MLA layer made from an MHA layer: its joint key-value weights [W_K; W_V] (head by head) replaced by their
    best rank-d_c approximation: W_a = the top d_c right singular vectors V_r (rows), W_b = [W_K; W_V]·V_r (= U·Σ).
    basis: joint_kv_basis(mha), when already computed.

    What a conversion cannot carry over is set to zero: the decoupled rotary query and key (MHA's keys differ per
    head, MLA's rotary key is shared), so this layer attends without position. Queries are scaled by
    sqrt((d_h + d_h^R) / d_h) so the softmax temperature is MHA's. The latent's RMSNorm divides each token by its own
    RMS; its gain is set to the expected RMS for inputs of that scale, so it cancels on average, not per token.
    """
    mcfg = mha.cfg
    d_h, heads = mcfg.head_dim, cfg.n_heads
    if (cfg.qk_nope_head_dim, cfg.v_head_dim, cfg.q_lora_rank) != (d_h, d_h, None) or cfg.n_heads != mcfg.n_heads:
        raise ValueError("latent_from_mha needs an MLA config with MHA's heads and head widths and a full-rank query.")
    d_r, d_c = cfg.latent_widths.qk_rope_head_dim, cfg.latent_widths.kv_lora_rank
    w_k = mha.k_proj.weight.reshape(heads, d_h, -1)
    w_v = mha.v_proj.weight.reshape(heads, d_h, -1)
    joint = torch.cat((w_k, w_v), dim=1).reshape(heads * 2 * d_h, -1)  # kv_b_proj's layout: per head [k_nope; v]
    basis = joint_kv_basis(mha) if basis is None else torch.as_tensor(basis)
    d_model = mcfg.d_model
    rank = min(d_c, d_model)
    top = basis[:, :rank]  # [d_model, rank]
    kv_a = torch.zeros(d_c + d_r, d_model)
    kv_a[:rank] = top.T
    kv_b = torch.zeros(heads * 2 * d_h, d_c)
    kv_b[:, :rank] = joint @ top
    q = torch.zeros(heads, d_h + d_r, d_model)
    q[:, :d_h] = mha.q_proj.weight.reshape(heads, d_h, -1) * math.sqrt((d_h + d_r) / d_h)
    state = {
        "q_proj.weight": q.reshape(heads * (d_h + d_r), d_model),
        "kv_a_proj_with_mqa.weight": kv_a,
        "kv_a_layernorm.weight": torch.full((d_c,), input_rms * math.sqrt(rank / d_c)),
        "kv_b_proj.weight": kv_b,
        "o_proj.weight": mha.o_proj.weight,
    }
    layer = MultiHeadLatentAttention(cfg, device="meta")
    layer.load_state_dict(state, assign=True)
    return layer


def pairwise_l1_sum(weights: torch.Tensor) -> float:
    """Sum over pairs a < b along the first axis of sum over the rest of |w_a - w_b|, weights [n, ...] (in float64).

    Few heads: pair by pair. More: with the n values at each position sorted, x_(1) <= ... <= x_(n), the sum over their
    pairs is sum_k (2k - n - 1) x_(k), so no pair is visited (n log n per position instead of n^2; numpy's sort, much
    faster than torch's on these shapes).
    """
    n = weights.shape[0]
    if n <= 16:
        total = torch.zeros((), dtype=torch.float64)
        for a in range(n - 1):
            total += (weights[a] - weights[a + 1 :]).abs().sum(dtype=torch.float64)
        return float(total)
    ordered = np.sort(rearrange(weights, "n ... -> (...) n").numpy(), axis=-1)  # [positions, n]
    coefficient = np.arange(1 - n, n, 2, dtype=np.float64)  # 2k - n - 1 for k = 1 .. n
    return float((ordered.astype(np.float64) @ coefficient).sum())


def group_overlaps(weights: torch.Tensor, group_size: int) -> tuple[float | None, float | None]:
    """Mean over head pairs and query rows of 1 - total variation distance between two heads' rows (the share of
    attention both put on the same keys; 1 = identical maps): (pairs in the same KV group, pairs in different groups),
    None where there is no such pair. weights [H, L, S]; groups are consecutive heads."""
    heads, rows = weights.shape[0], weights.shape[1]
    n_groups = heads // group_size
    within_pairs = n_groups * group_size * (group_size - 1) // 2
    between_pairs = heads * (heads - 1) // 2 - within_pairs
    cells = weights.flatten(1)  # [H, L * S]
    cells = cells[:, (cells != 0).any(0)]  # keys no head may see (the causal mask) add nothing to any pair: skip them
    per_group = cells.reshape(n_groups, group_size, -1)  # [G, r, cells]
    within_l1 = sum(pairwise_l1_sum(group) for group in per_group) if within_pairs else 0.0
    between_l1 = pairwise_l1_sum(cells) - within_l1 if between_pairs else None
    # TV = L1 / 2 per row; averaged over rows and pairs
    within = float(1 - within_l1 / (2 * rows * within_pairs)) if within_pairs else None
    between = float(1 - between_l1 / (2 * rows * between_pairs)) if between_l1 is not None else None
    return within, between


@torch.inference_mode()
def compare_from_mha(
    configs: dict[str, AttentionConfig],
    seed: int,
    inputs: InputSpec,
    *,
    causal: bool,
    basis_of: Callable[[GroupedQueryAttention], torch.Tensor | np.ndarray] = joint_kv_basis,
) -> dict[str, Comparison | Skipped]:
    """Each variant made from one MHA layer (built from the seed), run on the same input.

    Because every variant keeps MHA's queries and output projection, head h of each can be compared with head h of
    MHA, and the outputs with MHA's output: differences come from how keys and values are shared, not from
    different random weights. Returns per variant a Comparison (or Skipped, with the reason): its weights [H, L, S],
    output distance ||out - out_mha|| / ||out_mha||, mean map overlap with MHA's same head, and mean overlap between
    heads of the same KV group and of different groups. basis_of(mha) gives joint_kv_basis(mha) for the MLA
    conversion; a caller may answer it from a cache (it depends on the MHA weights only, not on the input).
    """
    first = next(iter(configs.values()))
    mha_cfg = AttentionConfig("mha", d_model=first.d_model, n_heads=first.n_heads, rope=first.rope)
    mha = build_attention(mha_cfg, seed=seed)
    x = make_inputs(inputs)
    mha_out, mha_weights = with_weights(mha(x, return_weights=True, causal=causal))
    results: dict[str, Comparison | Skipped] = {}
    for variant, cfg in configs.items():
        if variant == "mla" and cfg.d_model > MLA_CONVERSION_MAX_D_MODEL:
            results[variant] = Skipped(
                f"making MLA from MHA takes the singular vectors of a {2 * cfg.d_model:,} × "
                f"{cfg.d_model:,} matrix, too slow here above d_model {MLA_CONVERSION_MAX_D_MODEL:,}",
                d_model=cfg.d_model,
                limit=MLA_CONVERSION_MAX_D_MODEL,
            )
            continue
        layer: GroupedQueryAttention | MultiHeadLatentAttention
        if variant == "mha":
            layer = mha
        elif variant == "mla":
            layer = latent_from_mha(mha, cfg, input_rms=inputs.scale, basis=basis_of(mha))
        else:
            layer = pooled_from_mha(mha, cfg)
        out, weights = with_weights(layer(x, return_weights=True, causal=causal))
        weights = weights[0]  # [H, L, S]
        group = cfg.group_size if variant != "mla" else 1
        within, between = group_overlaps(weights, group)
        per_head_tv = (weights - mha_weights[0]).abs().sum(-1).mean(-1) / 2  # [H]
        results[variant] = Comparison(
            weights=weights.numpy(),
            output_distance=float((out - mha_out).norm() / mha_out.norm()),
            overlap_with_mha=(1 - per_head_tv).numpy(),
            within_group_overlap=within,
            between_group_overlap=between,
            group_size=group,
        )
    return results


# --- downsampling for the browser -----------------------------------------------------------------------------------
def block_size(length: int, side: int) -> int:
    """The block edge that brings length positions down to at most side cells."""
    return max(1, math.ceil(length / side))


def pool_blocks(matrix: np.ndarray, rows: int, cols: int, how: str) -> np.ndarray:
    """matrix [L, S] -> [ceil(L / rows), ceil(S / cols)]: the mean or max of each rows x cols block.

    NaN cells (masked scores) are left out; a block with no other cell stays NaN. Edge blocks use the cells they have.
    """
    if how not in ("mean", "max"):
        raise ValueError(f"how={how!r}: pool with 'mean' or 'max'.")
    if rows == 1 and cols == 1:
        return matrix.astype(np.float32, copy=False)
    n_rows, n_cols = matrix.shape
    out_rows, out_cols = math.ceil(n_rows / rows), math.ceil(n_cols / cols)
    padded = np.full((out_rows * rows, out_cols * cols), np.nan, dtype=np.float64)
    padded[:n_rows, :n_cols] = matrix
    blocks = padded.reshape(out_rows, rows, out_cols, cols)
    valid = ~np.isnan(blocks)
    count = valid.sum(axis=(1, 3))
    if how == "mean":
        total = np.where(valid, blocks, 0.0).sum(axis=(1, 3))
        result = np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)
    else:
        result = np.where(valid, blocks, -np.inf).max(axis=(1, 3))
        result[count == 0] = np.nan
    return result.astype(np.float32)
