"""Scaled dot-product attention over grouped keys, the one place every variant's scores are computed."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from einops import rearrange, repeat
from torch.backends import cuda as cuda_backends


@dataclass(frozen=True)
class KeyMask:
    """Where queries may attend: allowed [B or 1, 1, L, S] (True = may), or None for everywhere.

    plain_causal marks a square causal mask and nothing else (allowed is then None): SDPA computes it itself
    (is_causal=True), and the explicit path draws it only when weights are asked for.
    """

    allowed: torch.Tensor | None
    plain_causal: bool = False


def causal_allowed(q_len: int, k_len: int, device: torch.device | str | None) -> torch.Tensor:
    """[1, 1, L, S]: query i, at position S - L + i, may attend to keys 0 .. S - L + i."""
    return torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril(diagonal=k_len - q_len)[None, None]


# A forward pass asks for the same square causal bias in every layer: kept for the last few lengths up to this many
# numbers (512 x 512 positions, 1 MB of float32).
MEMOISED_BIAS_ELEMENTS = 1 << 18


def causal_bias(length: int, device: torch.device | str | None, dtype: torch.dtype) -> torch.Tensor:
    """[length, length]: 0 where query i may attend to key j (j <= i), -inf above the diagonal; added to scores, it
    masks them as masked_fill would, in one pass over them and with no boolean tensor drawn per call. Memoised up to
    MEMOISED_BIAS_ELEMENTS: callers must not modify the result."""
    if length * length <= MEMOISED_BIAS_ELEMENTS:
        return _memoised_causal_bias(length, device, dtype)
    return _causal_bias(length, device, dtype)


def _causal_bias(length: int, device: torch.device | str | None, dtype: torch.dtype) -> torch.Tensor:
    with torch.inference_mode(False):  # a normal tensor, usable where autograd records
        return torch.full((length, length), float("-inf"), device=device, dtype=dtype).triu_(diagonal=1)


_memoised_causal_bias = lru_cache(maxsize=4)(_causal_bias)


def allowed_positions(
    q_len: int, k_len: int, *, causal: bool, key_padding_mask: torch.Tensor | None, device: torch.device | str | None
) -> KeyMask:
    """Which of S keys each of L queries may attend to.

    The causal part is aligned to the end: the L new queries are the last L of S positions, so each sees every
    cached key and the new keys up to itself.
    """
    if causal and q_len == k_len and key_padding_mask is None:
        return KeyMask(None, plain_causal=True)  # SDPA needs no tensor; the weights path draws it when asked
    mask = None
    if causal and q_len > 1:  # one query, the last position, sees every key: nothing to mask
        mask = causal_allowed(q_len, k_len, device)
    if key_padding_mask is not None:
        if key_padding_mask.shape[-1] != k_len:
            raise ValueError(
                f"key_padding_mask covers {key_padding_mask.shape[-1]} positions but there are {k_len} keys "
                "(cached + new): give one flag per key."
            )
        keep = key_padding_mask.to(device=device, dtype=torch.bool)[:, None, None, :]  # [B, 1, 1, S]
        mask = keep if mask is None else mask & keep
    return KeyMask(mask)


def window_allowed(
    query_start: int,
    q_len: int,
    *,
    sinks_held: int,
    key_start: int,
    window: int,
    sink_tokens: int = 0,
    device: torch.device | str | None = None,
) -> KeyMask:
    """Where L queries at positions query_start.. of a sliding-window layer may attend, [1, 1, L, S]: among keys at
    positions 0 .. sinks_held - 1 (kept first tokens) then key_start .. query_start + L - 1, a key is visible when
    it is not later than the query and within its window (query - key < window) or among the first sink_tokens.

    Drawn as a band (tril/triu) rather than from a [L, S] matrix of distances, and memoised for the sizes a prompt
    asks for in every layer (callers must not modify the result)."""
    if q_len * (sinks_held + query_start + q_len - key_start) <= MEMOISED_BIAS_ELEMENTS * 16:
        return KeyMask(_memoised_window(query_start, q_len, sinks_held, key_start, window, sink_tokens, device))
    return KeyMask(_window(query_start, q_len, sinks_held, key_start, window, sink_tokens, device))


def _window(
    query_start: int,
    q_len: int,
    sinks_held: int,
    key_start: int,
    window: int,
    sink_tokens: int,
    device: torch.device | str | None,
) -> torch.Tensor:
    offset, width = query_start - key_start, query_start + q_len - key_start  # query i sees window key j <= i + offset
    with torch.inference_mode(False):  # a normal tensor, usable where autograd records
        causal = torch.ones(q_len, width, dtype=torch.bool, device=device).tril_(diagonal=offset)
        allowed = causal.triu(diagonal=offset - window + 1)
        first_tokens = min(max(sink_tokens - key_start, 0), width)  # window-part keys that are also kept first tokens
        if first_tokens:
            allowed[:, :first_tokens] = causal[:, :first_tokens]
        if sinks_held:  # kept first tokens come before every query
            allowed = torch.cat((torch.ones(q_len, sinks_held, dtype=torch.bool, device=device), allowed), dim=1)
        return allowed[None, None]


_memoised_window = lru_cache(maxsize=4)(_window)


def sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """torch's scaled_dot_product_attention with its kernels chosen here, the one place every layer's fused attention
    (prefill, chunks and decoding steps) is called: cuDNN attention excluded, flash, memory-efficient and math kept
    in torch's order. On CUDA torch would send a decoding step's non-causal [B, G, R, D] queries to cuDNN, which
    builds a new execution plan for every new key length (~70 ms of CPU a step on an H200, issue 46); the others
    build none. torch.backends.cuda's flag, as sdpa_kernel([...]) sets it, at ~1 us a call rather than ~55 us; it
    changes nothing on a CPU, which has no cuDNN kernel."""
    previous = cuda_backends.cudnn_sdp_enabled()
    cuda_backends.enable_cudnn_sdp(False)
    try:
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa
        )
    finally:
        cuda_backends.enable_cudnn_sdp(previous)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float,
    mask: KeyMask,
    return_weights: bool,
    sinks: torch.Tensor | None = None,
    first_keys_queries: tuple[torch.Tensor, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """q [B, H, L, D], k [B, G, S, D], v [B, G, S, Dv] with H a multiple of G -> out [B, H, L, Dv], weights.

    Query head h reads KV head h // (H / G); mask is what allowed_positions() returns. Without weights this is
    torch's fused SDPA where it has a kernel; with weights (or shared keys wider than values) an explicit softmax
    path that never materialises the repeated keys either (queries are grouped instead).

    sinks [H]: one more logit per head in each softmax, with no value (gpt-oss): weights then sum to less than 1.
    The explicit path computes them.

    first_keys_queries (q2 [B, H, L, D], n): the first n keys are scored with q2 instead of q (kept first tokens at
    StreamingLLM's positions inside the cache, attn_core.options.sink_positions). The explicit path computes them.
    """
    n_heads, n_kv_heads = q.shape[1], k.shape[1]
    # Shared KV heads with keys wider than values (MLA's absorbed step: d_c + d_h^R against d_c) have no fused kernel,
    # and torch's math path scales a copy of every cached key at every step: the explicit path below does not.
    explicit = (
        return_weights
        or sinks is not None
        or first_keys_queries is not None
        or (n_kv_heads != n_heads and k.shape[-1] != v.shape[-1])
    )
    if not explicit and (mask.plain_causal or n_kv_heads == n_heads):
        out = sdpa(
            q,
            k,
            v,
            attn_mask=None if mask.plain_causal else mask.allowed,
            is_causal=mask.plain_causal,
            scale=scale,
            enable_gqa=n_kv_heads != n_heads,
        )
        return out, None
    group = n_heads // n_kv_heads
    allowed = mask.allowed
    if not explicit and allowed is not None and group * allowed.shape[2] > 2 * n_heads * q.shape[-1]:
        # A long prompt under a mask (a sliding window's band): folding would repeat the [L, S] mask once per query
        # head of a group (and torch then converts it to floats), which costs more than the keys and values
        # [2, H, S, D] that enable_gqa repeats (Gemma 3's sliding layer, 2048 tokens: 13 % of the call).
        out = sdpa(q, k, v, attn_mask=allowed, scale=scale, enable_gqa=True)
        return out, None
    if not explicit:
        # Shared KV heads and no plain causal square (decode, chunks, padding). enable_gqa would make torch's math
        # path copy every KV head n_heads / n_kv_heads times, the whole cache at every step. Fold each group's query
        # heads into the query axis instead, so the G KV heads are read as they are (also faster for grouped decode).
        if allowed is not None and allowed.shape[2] > 1:
            allowed = repeat(allowed, "b one l s -> b one (r l) s", r=group)  # [B, 1, R*L, S]
        folded_q = rearrange(q, "b (g r) l d -> b g (r l) d", g=n_kv_heads)  # [B, G, R*L, D]
        out = sdpa(folded_q, k, v, attn_mask=allowed, scale=scale)
        return rearrange(out, "b g (r l) d -> b (g r) l d", r=group), None
    # Each KV head's query heads as one block of rows ([B, G, R*L, D]): one batched product per group reads k as it is.
    batch, q_len, k_len = q.shape[0], q.shape[2], k.shape[2]
    grouped_q = q.reshape(batch, n_kv_heads, -1, q.shape[3])
    scores = torch.matmul(grouped_q, k.transpose(-1, -2)).view(batch, n_heads, q_len, k_len)
    if first_keys_queries is not None:
        other_q, first = first_keys_queries
        first = min(first, k_len)
        other = torch.matmul(other_q.reshape(grouped_q.shape), k[:, :, :first].transpose(-1, -2))
        scores[..., :first] = other.view(batch, n_heads, q_len, first)
    scores = scores.mul_(scale)
    # in place: the scores are this call's own tensor (adding 0 leaves a score as it is, adding -inf masks it)
    if mask.plain_causal:
        scores.add_(causal_bias(q_len, q.device, scores.dtype))
    elif mask.allowed is not None:
        scores.masked_fill_(~mask.allowed, float("-inf"))
    if sinks is None:
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    else:
        weights = _softmax_with_sinks(scores, sinks)
    out = torch.matmul(weights.view(batch, n_kv_heads, -1, k_len), v).view(batch, n_heads, q_len, v.shape[3])
    return out, weights if return_weights else None


def _softmax_with_sinks(scores: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
    """scores [B, H, L, S] (masked with -inf) -> softmax over (scores, the head's sink logit), the sink's share
    dropped: exp(s - m) / (sum exp(s - m) + exp(sink - m)), m the larger of the row's max and the sink, without
    concatenating a column to the scores (as HF's GptOssAttention does)."""
    sink = sinks.view(1, -1, 1, 1).to(torch.float32)
    scores32 = scores.float()  # the caller's own tensor (in float32): changed in place
    # top only keeps exp() in range (the weights do not depend on it): detached, so the sink logits can be trained
    top = torch.maximum(scores32.amax(dim=-1, keepdim=True), sink).detach()
    weights = scores32.sub_(top).exp_()
    denominator = weights.sum(dim=-1, keepdim=True) + (sink - top).exp()
    # in place unless training: exp_'s backward reads its own result
    weights = weights / denominator if weights.requires_grad else weights.div_(denominator)
    return weights.to(scores.dtype)
