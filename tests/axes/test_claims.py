"""The published claims the axes and KV cache pages table, each measured by the core and checked here against a
closed form written from the papers' and configs' own numbers."""

import pytest

from explorer.probes.claims import (
    MILLION,
    deepseek_v2_claims,
    deepseek_v4_claims,
    gemma3_claim,
    kimi_claim,
    published_claims,
)

BF16 = 2


def test_mla_caches_what_gqa_with_2_25_groups_would():
    """DeepSeek-V2 Table 1: (d_c + d_h^R) = 512 + 64 numbers against 2 · d_h = 256 a group."""
    groups, _ = deepseek_v2_claims()
    assert groups.measured == pytest.approx((512 + 64) / (2 * 128))
    assert groups.reproduces


def test_deepseek_v2s_6_bit_cache_is_93_3_percent_smaller_than_deepseek_67bs():
    """V2: 60 layers x 576 numbers at 6 bits; 67B: 95 layers x 2 x 8 heads x 128 in bf16."""
    _, saving = deepseek_v2_claims()
    assert saving.measured == pytest.approx(100 * (1 - 60 * 576 * 6 / 8 / (95 * 2 * 8 * 128 * BF16)))
    assert saving.reproduces
    assert round(saving.measured, 1) == 93.3


def test_kimi_linear_saves_about_75_percent_against_mla_on_every_layer():
    """7 MLA layers of 27 keep 576 numbers a token; the 20 KDA layers a fixed state (32 heads of 128 x 128) and a
    conv tail (3 inputs of 3 x 32 x 128 channels), all bf16 as served."""
    state = 20 * (32 * 128 * 128 + 3 * 3 * 32 * 128) * BF16
    kimi, all_mla = 7 * 576 * BF16 * MILLION + state, 27 * 576 * BF16 * MILLION
    claim = kimi_claim()
    assert claim.measured == pytest.approx(100 * (1 - kimi / all_mla))
    assert claim.reproduces


def v4_flash_served(tokens: int) -> int:
    window = 43 * 127 * 584
    return window + 20 * (tokens // 128) * 584 + 21 * ((tokens // 4) * (584 + 68) + 2 * 4 * (512 + 128) * 4)


def test_v4_flash_is_about_7_and_2_percent_of_v32_and_a_gqa8_cache():
    v32, gqa8 = 61 * (656 + 132) * MILLION, 43 * 2 * 8 * 128 * BF16 * MILLION
    against_v32, against_gqa8 = deepseek_v4_claims()
    assert against_v32.measured == pytest.approx(100 * v4_flash_served(MILLION) / v32)
    assert against_gqa8.measured == pytest.approx(100 * v4_flash_served(MILLION) / gqa8)
    assert 6.5 <= against_v32.measured <= 8
    assert 1.7 <= against_gqa8.measured <= 2.3
    assert against_v32.reproduces
    assert against_gqa8.reproduces


def test_gemma_3_27b_has_five_local_layers_per_global_one():
    """62 layers, every 6th global: 10 global, 52 local (5.2 : 1, the pattern's 5 : 1 and two local layers over)."""
    claim = gemma3_claim()
    assert claim.measured == pytest.approx(52 / 10)
    assert claim.reproduces


def test_a_claim_that_disagrees_does_not_reproduce():
    from dataclasses import replace

    claim = replace(gemma3_claim(), measured=6.0)
    assert not claim.reproduces


def test_every_claim_has_a_source_and_a_unit():
    for claim in published_claims():
        assert claim.source
        assert claim.unit in ("percent", "times")
