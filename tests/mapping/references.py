"""Independent references for the mapping tests: which store a head reads, found by autograd instead of perturbation."""

from __future__ import annotations

import random

import numpy as np
import torch
from einops import rearrange

from attn_core import AttentionConfig, build_attention
from explorer.settings import Settings, groups_choices, heads_choices, rope_dim_choices


def reads_by_gradient(cfg: AttentionConfig, seed: int, tokens: int = 4) -> np.ndarray:
    """reads[s, h]: does query head h's output (last token) depend on store s? Asked of autograd, not of a cache.

    A grouped layer's store g is made by rows g·d … (g+1)·d of k_proj and v_proj; MLA's c_kv by the first d_c rows of
    kv_a_proj_with_mqa and k_rope by the rest. A head reads a store iff its output has a non-zero gradient there.
    """
    layer = build_attention(cfg, seed=seed)
    x = torch.randn(1, tokens, cfg.d_model, generator=torch.Generator().manual_seed(seed + 1))
    caught = []
    layer.o_proj.register_forward_pre_hook(lambda _m, args: caught.append(args[0]))
    layer(x)
    per_head = rearrange(caught[-1][0, -1], "(h d) -> h d", h=cfg.n_heads)
    if cfg.variant == "mla":
        weights = [layer.kv_a_proj_with_mqa.weight]
        row_sets = [slice(0, cfg.kv_lora_rank), slice(cfg.kv_lora_rank, None)]
    else:
        weights = [layer.k_proj.weight, layer.v_proj.weight]
        row_sets = [slice(g * cfg.head_dim, (g + 1) * cfg.head_dim) for g in range(cfg.n_kv_heads)]
    reads = np.zeros((len(row_sets), cfg.n_heads), dtype=bool)
    for head in range(cfg.n_heads):
        grads = torch.autograd.grad(per_head[head].sum(), weights, retain_graph=True, allow_unused=True)
        for store, rows in enumerate(row_sets):
            reads[store, head] = any(g is not None and bool(g[rows].abs().max() > 0) for g in grads)
    return reads


def random_settings(seed: int, *, max_d_model: int = 256, max_heads: int = 16) -> Settings:
    """Valid settings drawn at random, small enough for a test (every group count of the heads is valid)."""
    rng = random.Random(seed)
    d_model = rng.choice([d for d in (16, 32, 64, 128, 256, 384, 512) if d <= max_d_model])
    heads = rng.choice([h for h in heads_choices(d_model) if h <= max_heads])
    head_dim = d_model // heads
    return Settings(
        d_model=d_model,
        heads=heads,
        groups=rng.choice(groups_choices(heads)),
        latent=rng.choice((4, 8, 16, 32, 64)),
        rope_dim=rng.choice(rope_dim_choices(head_dim)),
        seq_len=rng.choice((1, 4, 16, 64)),
        batch=rng.choice((1, 2, 4)),
        seed=rng.randrange(1000),
    )
