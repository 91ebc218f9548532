"""Small layers of the designs after MLA, as the probes' tests (heatmaps, mapping) run them: a few heads, a window,
top-k and compression rate small enough that every case shows within twenty tokens."""

from __future__ import annotations

from attn_core import AttentionConfig, CompressedAttention, CompressedConfig, DSAConfig

GQA = AttentionConfig("gqa", d_model=32, n_heads=4, n_kv_heads=2)


def small_dsa(topk: int) -> DSAConfig:
    return DSAConfig(
        d_model=32,
        n_heads=4,
        q_lora_rank=16,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=8,
        v_head_dim=8,
        index_n_heads=4,
        index_head_dim=16,
        index_topk=topk,
    )


def v4_layer(kind: str, seed: int) -> CompressedAttention:
    """DeepSeek-V4's compressed layer (kind "hca" or "csa"): window 5, an entry every 3 tokens, CSA reading 2."""
    cfg = CompressedConfig(
        kind=kind,  # type: ignore[arg-type]
        d_model=32,
        n_heads=4,
        head_dim=16,
        q_lora_rank=16,
        qk_rope_head_dim=8,
        o_groups=2,
        o_lora_rank=8,
        sliding_window=5,
        compress_rate=3,
        index_n_heads=4,
        index_head_dim=8,
        index_topk=2,
    )
    layer = CompressedAttention(cfg)
    layer.init_from_seed(seed)
    return layer
