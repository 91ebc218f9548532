"""The trained model's attention on a text, and the model writing with its real cache: forward passes of
attn_core.pretrained, returned as numbers and arrays for the views (no UI code)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attn_core import AttentionConfig, kv_cache_bytes
from attn_core.pretrained import PretrainedLM

SINK_MAJORITY = 0.5  # a head "puts most of its attention" on a token above this share


@dataclass(frozen=True)
class TrainedAttention:
    """Every head's post-softmax weights on one text, with what the views measure from them."""

    ids: list[int]
    labels: list[str]  # one readable label per token
    total_tokens: int  # tokens in the whole text, before the cut to what is shown
    maps: np.ndarray  # [layers, heads, L, L] float16 (the measures below come from float32)
    first_token_share: np.ndarray  # [layers, heads]: mean weight on token 0 over queries 1..L-1
    previous_token_share: np.ndarray  # [layers, heads]: mean weight on key i-1 over queries i = 1..L-1
    js_within_group: float  # mean Jensen-Shannon distance between heads that share a KV head
    js_across_groups: float  # ... between heads that do not
    group_size: int  # query heads per KV head


def trained_attention(lm: PretrainedLM, text: str, max_tokens: int) -> TrainedAttention:
    """Run the text's first max_tokens tokens through the model, returning every attention map."""
    all_ids = lm.encode(text)
    ids = all_ids[:max_tokens]
    if not ids:
        raise ValueError("The text has no tokens.")  # the page never sends an empty text
    with torch.inference_mode():
        _, maps = lm(torch.tensor([ids]), return_attention=True)
    weights = torch.stack([layer[0] for layer in maps]).float()  # [layers, H, L, L]
    group = lm.attention.group_size
    within, across = group_similarity(weights, group)
    return TrainedAttention(
        ids=ids,
        labels=lm.token_strings(ids),
        total_tokens=len(all_ids),
        maps=weights.numpy().astype(np.float16),
        first_token_share=first_token_share(weights).numpy(),
        previous_token_share=previous_token_share(weights).numpy(),
        js_within_group=within,
        js_across_groups=across,
        group_size=group,
    )


def first_token_share(weights: torch.Tensor) -> torch.Tensor:
    """weights [..., L, L] -> [...]: the mean weight queries 1..L-1 give key 0 (the attention sink); query 0 has no
    other choice and is left out. NaN for a one-token text."""
    return weights[..., 1:, 0].mean(dim=-1)


def previous_token_share(weights: torch.Tensor) -> torch.Tensor:
    """weights [..., L, L] -> [...]: the mean weight query i gives key i - 1, over i = 1..L-1."""
    return torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


def js_distance(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon distance (base 2, in [0, 1]) between distributions along the last axis."""
    m = (p + q) / 2

    def kl(a: torch.Tensor) -> torch.Tensor:
        return torch.where(a > 0, a * (torch.log2(a.clamp_min(1e-30)) - torch.log2(m.clamp_min(1e-30))), 0).sum(-1)

    return ((kl(p) + kl(q)) / 2).clamp_min(0).sqrt()


def group_similarity(weights: torch.Tensor, group_size: int) -> tuple[float, float]:
    """Mean JS distance between heads' attention rows (queries 1..L-1), over pairs of heads in the same layer that
    share a KV head, and over pairs that do not. weights [layers, H, L, L]."""
    rows = weights[:, :, 1:]  # [layers, H, L-1, L]
    if rows.shape[2] == 0:
        return float("nan"), float("nan")
    heads = rows.shape[1]
    within: list[float] = []
    across: list[float] = []
    for a in range(heads):
        for b in range(a + 1, heads):
            distance = js_distance(rows[:, a], rows[:, b]).mean().item()
            (within if a // group_size == b // group_size else across).append(distance)
    return float(np.mean(within)) if within else float("nan"), float(np.mean(across)) if across else float("nan")


def pooled_maps(maps: np.ndarray, size: int) -> np.ndarray:
    """[layers, H, L, L] -> [layers, H, size, size] by averaging blocks of positions (size >= L: unchanged)."""
    length = maps.shape[-1]
    if length <= size:
        return maps.astype(np.float32)
    edges = np.linspace(0, length, size + 1).round().astype(int)
    rows = np.add.reduceat(maps.astype(np.float32), edges[:-1], axis=2) / np.diff(edges)[:, None]
    return np.add.reduceat(rows, edges[:-1], axis=3) / np.diff(edges)


# --- the model writing -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WritingStep:
    token_id: int
    label: str
    cached_tokens: int  # tokens in every layer's cache after this step's forward pass
    cache_bytes: int  # measured: bytes of every layer's cache tensors
    formula_bytes: int  # layers x 2 x KV heads x head_dim x tokens x bytes per number
    layer_k_shape: tuple[int, ...]  # one layer's key cache as read back
    text: str  # everything written so far, control tokens left out


@dataclass(frozen=True)
class WritingTrace:
    prompt_ids: list[int]
    prompt_labels: list[str]
    steps: list[WritingStep]
    n_layers: int
    n_heads: int  # query heads per layer
    n_kv_heads: int  # KV heads per layer, as trained
    per_token_bytes: dict[str, int]  # the whole model's cache per token: "gqa" (as trained), "mha", "mqa"
    ended: bool  # the model wrote its end token; else the answer was cut at max_new_tokens (or the context's end)


def writing_trace(lm: PretrainedLM, messages: list[dict[str, str]], max_new_tokens: int) -> WritingTrace:
    """Greedy generation through the chat template, recording after each new token what the caches hold."""
    prompt = lm.chat_ids(messages)
    cache = lm.new_cache()
    steps, tokens = [], []
    cfg = lm.config
    for token in lm.generate_steps(prompt, max_new_tokens, cache):
        tokens.append(token)
        held = cache.seq_len  # the token just chosen enters the cache at the next forward pass
        steps.append(
            WritingStep(
                token_id=token,
                label=lm.token_strings([token])[0],
                cached_tokens=held,
                cache_bytes=cache.nbytes,
                formula_bytes=cfg.n_layers * 2 * cfg.n_kv_heads * cfg.head_dim * held * 4,
                layer_k_shape=tuple(cache.layers[0].shapes()["k"]),
                text=lm.decode(tokens, skip_special=True),
            )
        )
    per_token = {
        name: cfg.n_layers * kv_cache_bytes(_as_variant(lm.attention, name), batch=1, seq_len=1)
        for name in ("mha", "gqa", "mqa")
    }
    return WritingTrace(
        prompt_ids=prompt,
        prompt_labels=lm.token_strings(prompt),
        steps=steps,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        n_kv_heads=cfg.n_kv_heads,
        per_token_bytes=per_token,
        ended=bool(tokens) and tokens[-1] == lm.tokenizer.spec.eos_id,
    )


def _as_variant(attention: AttentionConfig, variant: str) -> AttentionConfig:
    """The same layer with every query head's own KV head (mha), one shared (mqa), or as trained (gqa)."""
    if variant == "gqa":
        return attention
    return AttentionConfig(
        variant=variant, d_model=attention.d_model, n_heads=attention.n_heads, head_dim=attention.head_dim
    )
