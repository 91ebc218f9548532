"""The step-by-step decode probe: bytes equal the closed form at every step, outputs equal a full recompute."""

from __future__ import annotations

import pytest
import torch

from attn_core import AttentionConfig, build_attention, kv_cache_bytes, repeated_kv_cache_bytes
from explorer.probes.kv_cache import (
    MAX_TRACE_PARAMETERS,
    MAX_TRACE_WORK,
    DecodeTrace,
    check_trace_bounds,
    decode_trace,
)

CONFIGS = {
    "mha": AttentionConfig("mha", d_model=64, n_heads=4),
    "mqa": AttentionConfig("mqa", d_model=64, n_heads=4),
    "gqa": AttentionConfig("gqa", d_model=64, n_heads=4, n_kv_heads=2),
    "mla": AttentionConfig("mla", d_model=64, n_heads=4, kv_lora_rank=24, qk_rope_head_dim=8),
}
PROMPT, STEPS, BATCH = 5, 20, 2


def trace(variant: str, dtype: str = "bfloat16", repeated: bool = False) -> DecodeTrace:
    return decode_trace(
        CONFIGS[variant],
        prompt_len=PROMPT,
        steps=STEPS,
        batch=BATCH,
        seed=3,
        storage_dtype=dtype,
        repeated_heads=repeated,
    )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("variant", CONFIGS)
def test_bytes_held_equal_the_closed_form_at_every_step(variant, dtype):
    result = trace(variant, dtype)
    assert result.tokens_held == list(range(PROMPT, PROMPT + STEPS + 1))
    expected = [kv_cache_bytes(CONFIGS[variant], BATCH, held, dtype) for held in result.tokens_held]
    assert result.nbytes == expected
    assert result.formula_nbytes == expected


@pytest.mark.parametrize("variant", CONFIGS)
def test_cached_decode_matches_a_full_recompute_below_1e_5(variant):
    result = trace(variant)
    assert len(result.max_abs_diff) == STEPS + 1
    assert max(result.max_abs_diff) < 1e-5
    assert result.out_scale > 0.1  # the differences are judged against outputs of a real size


def test_shapes_are_what_each_variant_stores():
    held = PROMPT + STEPS
    assert trace("mha").shapes[-1] == {"k": (BATCH, 4, held, 16), "v": (BATCH, 4, held, 16)}
    assert trace("mqa").shapes[-1] == {"k": (BATCH, 1, held, 16), "v": (BATCH, 1, held, 16)}
    assert trace("gqa").shapes[3] == {"k": (BATCH, 2, PROMPT + 3, 16), "v": (BATCH, 2, PROMPT + 3, 16)}
    assert trace("mla").shapes[0] == {"c_kv": (BATCH, 1, PROMPT, 24), "k_rope": (BATCH, 1, PROMPT, 8)}


def test_preallocated_capacity_doubles_from_16_tokens_and_covers_what_is_held():
    result = trace("gqa", "float32")
    per_token = kv_cache_bytes(CONFIGS["gqa"], BATCH, 1, "float32")
    for held, capacity in zip(result.tokens_held, result.capacity_nbytes, strict=True):
        tokens = 16
        while tokens < held:
            tokens *= 2
        assert capacity == tokens * per_token


@pytest.mark.parametrize("variant", ["mqa", "gqa"])
def test_the_repeated_heads_pitfall_costs_mha_bytes_and_changes_no_output(variant):
    result = trace(variant, repeated=True)
    cfg = CONFIGS[variant]
    mha_bytes = [kv_cache_bytes(CONFIGS["mha"], BATCH, held, "bfloat16") for held in result.tokens_held]
    assert result.nbytes == mha_bytes
    assert result.nbytes == [repeated_kv_cache_bytes(cfg, BATCH, held, "bfloat16") for held in result.tokens_held]
    assert result.shapes[-1]["k"] == (BATCH, cfg.n_heads, PROMPT + STEPS, cfg.head_dim)
    assert max(result.max_abs_diff) < 1e-5


def test_the_pitfall_does_not_apply_to_mla():
    with pytest.raises(ValueError, match="MLA"):
        trace("mla", repeated=True)


def test_the_storage_copy_changes_bytes_only_not_outputs():
    as_float32, as_bfloat16 = trace("gqa", "float32"), trace("gqa", "bfloat16")
    assert as_float32.max_abs_diff == as_bfloat16.max_abs_diff
    assert [2 * b for b in as_bfloat16.nbytes] == as_float32.nbytes


@torch.inference_mode()
def test_the_full_pass_row_is_what_recomputing_the_prefix_gives():
    """Why one full pass is a fair reference for every step: causal attention makes row t depend on tokens <= t only."""
    cfg = CONFIGS["gqa"]
    layer = build_attention(cfg, seed=1)
    x = torch.randn(1, 9, cfg.d_model, generator=torch.Generator().manual_seed(1))
    full, _ = layer(x)
    for t in range(9):
        prefix, _ = layer(x[:, : t + 1])
        torch.testing.assert_close(prefix[:, -1], full[:, t], atol=1e-6, rtol=0)


def test_heavy_traces_are_refused_with_a_sentence():
    big = AttentionConfig("mha", d_model=2048, n_heads=16)
    with pytest.raises(ValueError, match=f"{MAX_TRACE_PARAMETERS:,}"):
        check_trace_bounds(big, prompt_len=4, steps=4, batch=1)
    medium = AttentionConfig("mha", d_model=1024, n_heads=16)  # 4.2 M weights: allowed, but not for 128 tokens x 4
    check_trace_bounds(medium, prompt_len=8, steps=8, batch=1)
    with pytest.raises(ValueError, match=f"{MAX_TRACE_WORK / 1e6:,.0f} M"):
        check_trace_bounds(medium, prompt_len=64, steps=64, batch=4)
    with pytest.raises(ValueError, match="prompt"):
        check_trace_bounds(CONFIGS["mha"], prompt_len=0, steps=4, batch=1)
