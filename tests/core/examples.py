"""Small example layers of every variant, and hypothesis strategies over valid configurations."""

from __future__ import annotations

import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from attn_core import AttentionConfig

# Modest example counts: the core suite should run in well under a minute on two cores. No example database is
# written into the repository.
PROPERTY_SETTINGS = settings(
    max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)

EXAMPLES = {
    "mha": AttentionConfig("mha", d_model=32, n_heads=4),
    "mqa": AttentionConfig("mqa", d_model=32, n_heads=4),
    "gqa": AttentionConfig("gqa", d_model=48, n_heads=6, n_kv_heads=2, bias=True, rope_theta=500000.0),
    "mla": AttentionConfig(
        "mla", d_model=32, n_heads=4, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6
    ),
    "mla_q_lora": AttentionConfig(
        "mla",
        d_model=32,
        n_heads=4,
        kv_lora_rank=12,
        q_lora_rank=10,
        qk_nope_head_dim=8,
        qk_rope_head_dim=4,
        v_head_dim=6,
        rope_interleave=True,
        bias=True,
    ),
}
GROUPED = ["mha", "mqa", "gqa"]
LATENT = ["mla", "mla_q_lora"]
ALL = GROUPED + LATENT


def randn(*shape, seed: int = 0, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@st.composite
def grouped_configs(draw) -> AttentionConfig:
    n_kv_heads = draw(st.integers(1, 4))
    n_heads = n_kv_heads * draw(st.integers(1, 3))
    variant = "mha" if n_kv_heads == n_heads and draw(st.booleans()) else "gqa"
    if n_kv_heads == 1 and draw(st.booleans()):
        variant = "mqa"
    return AttentionConfig(
        variant,
        d_model=draw(st.integers(4, 40)),
        n_heads=n_heads,
        n_kv_heads=None if variant in ("mha", "mqa") else n_kv_heads,
        head_dim=2 * draw(st.integers(1, 8)),
        rope=draw(st.booleans()),
        rope_interleave=draw(st.booleans()),
        rope_theta=draw(st.sampled_from([10000.0, 500000.0])),
        bias=draw(st.booleans()),
        o_bias=draw(st.sampled_from([None, False, True])),
    )


@st.composite
def latent_configs(draw) -> AttentionConfig:
    return AttentionConfig(
        "mla",
        d_model=draw(st.integers(4, 40)),
        n_heads=draw(st.integers(1, 4)),
        head_dim=2 * draw(st.integers(1, 8)),
        kv_lora_rank=draw(st.integers(1, 24)),
        q_lora_rank=draw(st.one_of(st.none(), st.integers(1, 16))),
        qk_nope_head_dim=draw(st.integers(1, 12)),
        qk_rope_head_dim=2 * draw(st.integers(1, 4)),
        v_head_dim=draw(st.integers(1, 12)),
        rope=draw(st.booleans()),
        rope_interleave=draw(st.booleans()),
        bias=draw(st.booleans()),
        o_bias=draw(st.sampled_from([None, False, True])),
    )


def any_configs():
    return st.one_of(grouped_configs(), latent_configs())


@st.composite
def chunkings(draw, max_total: int = 12) -> list[int]:
    """A sequence length split into chunks: [3, 1, 1, 4] is a prompt of 3, two single tokens, then 4 at once."""
    return draw(st.lists(st.integers(1, 5), min_size=1, max_size=6).filter(lambda c: sum(c) <= max_total))
