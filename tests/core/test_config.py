"""AttentionConfig: defaults of the published designs, and refusals a user can act on."""

from __future__ import annotations

import dataclasses
import re

import pytest

from attn_core import AttentionConfig, CachesAsMuchAsMHA, LatentCompressesNothing


def test_head_dim_defaults_to_d_model_over_n_heads():
    assert AttentionConfig("gqa", d_model=512, n_heads=8, n_kv_heads=2).head_dim == 64


def test_mha_has_one_kv_head_per_query_head():
    assert AttentionConfig("mha", d_model=64, n_heads=8).n_kv_heads == 8


def test_mqa_has_a_single_kv_head():
    assert AttentionConfig("mqa", d_model=64, n_heads=8).n_kv_heads == 1


def test_explicit_head_dim_frees_d_model_from_dividing_by_heads():
    cfg = AttentionConfig("gqa", d_model=3584, n_heads=16, n_kv_heads=8, head_dim=256)  # Gemma 2 9B's shape
    assert (cfg.head_dim, cfg.n_heads * cfg.head_dim) == (256, 4096)


def test_mla_defaults_follow_deepseek_v2_proportions():
    cfg = AttentionConfig("mla", d_model=1024, n_heads=8)  # d_h = 128
    assert (cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim, cfg.v_head_dim) == (512, 64, 128, 128)


def test_o_bias_follows_bias_unless_set():
    assert AttentionConfig("mha", d_model=8, n_heads=2, bias=True).o_bias is True
    assert AttentionConfig("mha", d_model=8, n_heads=2, bias=True, o_bias=False).o_bias is False


def test_config_is_immutable():
    cfg = AttentionConfig("mha", d_model=8, n_heads=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.n_heads = 4


# --- refusals: each names the offending numbers --------------------------------------------------------------------


def test_heads_not_divisible_by_kv_heads_is_refused_naming_both():
    with pytest.raises(ValueError, match=re.escape("n_heads=12 is not divisible by n_kv_heads=5")):
        AttentionConfig("gqa", d_model=96, n_heads=12, n_kv_heads=5)


def test_more_kv_heads_than_query_heads_is_refused():
    with pytest.raises(ValueError, match=re.escape("n_kv_heads=8 exceeds n_heads=4")):
        AttentionConfig("gqa", d_model=32, n_heads=4, n_kv_heads=8)


def test_gqa_without_a_group_count_is_refused():
    with pytest.raises(ValueError, match="gqa needs n_kv_heads"):
        AttentionConfig("gqa", d_model=32, n_heads=4)


@pytest.mark.parametrize(("variant", "n_kv_heads"), [("mha", 2), ("mqa", 2)])
def test_mha_or_mqa_with_another_kv_head_count_points_to_gqa(variant, n_kv_heads):
    with pytest.raises(ValueError, match="use variant='gqa'"):
        AttentionConfig(variant, d_model=32, n_heads=4, n_kv_heads=n_kv_heads)


def test_d_model_not_divisible_by_heads_is_refused_suggesting_head_dim():
    with pytest.raises(ValueError, match=r"d_model=100 is not divisible by n_heads=8.*head_dim"):
        AttentionConfig("mha", d_model=100, n_heads=8)


def test_odd_head_dim_with_rope_is_refused():
    with pytest.raises(ValueError, match=r"head_dim=7 is odd"):
        AttentionConfig("mha", d_model=28, n_heads=4)


def test_odd_head_dim_without_rope_is_allowed():
    assert AttentionConfig("mha", d_model=28, n_heads=4, rope=False).head_dim == 7


def test_odd_rope_dims_of_mla_are_refused():
    with pytest.raises(ValueError, match=r"qk_rope_head_dim=5 is odd"):
        AttentionConfig("mla", d_model=64, n_heads=4, qk_rope_head_dim=5)


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "8"])
@pytest.mark.parametrize("field", ["d_model", "n_heads", "head_dim", "n_kv_heads"])
def test_non_positive_or_non_integer_grouped_sizes_are_refused_by_name(field, value):
    sizes = {"d_model": 32, "n_heads": 4, "n_kv_heads": 2, "head_dim": 8} | {field: value}
    with pytest.raises(ValueError, match=rf"{field} must be a positive whole number, got {re.escape(repr(value))}"):
        AttentionConfig("gqa", **sizes)


@pytest.mark.parametrize("value", [0, -1])
@pytest.mark.parametrize("field", ["kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"])
def test_non_positive_mla_sizes_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=rf"{field} must be a positive whole number, got {value}"):
        AttentionConfig("mla", d_model=64, n_heads=4, **{field: value})


def test_unknown_variant_is_refused_listing_the_choices():
    with pytest.raises(ValueError, match=r"variant='mhq' is unknown: choose one of mha, mqa, gqa, mla"):
        AttentionConfig("mhq", d_model=32, n_heads=4)


@pytest.mark.parametrize("field", ["kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"])
def test_mla_fields_are_refused_for_grouped_variants(field):
    with pytest.raises(ValueError, match=rf"{field} belongs to MLA"):
        AttentionConfig("gqa", d_model=32, n_heads=4, n_kv_heads=2, **{field: 8})


def test_mla_refuses_kv_groups():
    with pytest.raises(ValueError, match="mla has no KV groups"):
        AttentionConfig("mla", d_model=64, n_heads=4, n_kv_heads=2)


# --- warnings(): valid but questionable ----------------------------------------------------------------------------


def test_warnings_flag_a_latent_as_wide_as_what_it_compresses():
    # 2 heads x (nope 4 + v 4) = 16 per-head key and value numbers per token; a latent of 16 compresses nothing.
    cfg = AttentionConfig(
        "mla", d_model=16, n_heads=2, kv_lora_rank=16, qk_nope_head_dim=4, qk_rope_head_dim=2, v_head_dim=4
    )
    assert cfg.warnings() == [LatentCompressesNothing(kv_lora_rank=16, uncompressed=16)]


def test_warnings_flag_a_latent_wider_than_what_it_compresses():
    cfg = AttentionConfig(
        "mla", d_model=16, n_heads=2, kv_lora_rank=40, qk_nope_head_dim=4, qk_rope_head_dim=2, v_head_dim=4
    )
    assert LatentCompressesNothing(kv_lora_rank=40, uncompressed=16) in cfg.warnings()


def test_warnings_are_silent_for_a_latent_that_compresses():
    cfg = AttentionConfig(
        "mla", d_model=16, n_heads=2, kv_lora_rank=15, qk_nope_head_dim=4, qk_rope_head_dim=2, v_head_dim=4
    )
    assert not any(isinstance(note, LatentCompressesNothing) for note in cfg.warnings())


def test_warnings_are_silent_for_deepseek_proportions():
    assert AttentionConfig("mla", d_model=4096, n_heads=32).warnings() == []


def test_warnings_say_when_mla_caches_as_much_as_mha():
    # d_c + d_h^R = 14 + 2 = 16 = 2 x 2 heads x 4: no smaller than MHA's 2 h d_h.
    cfg = AttentionConfig("mla", d_model=8, n_heads=2, kv_lora_rank=14, qk_rope_head_dim=2)
    assert cfg.warnings() == [CachesAsMuchAsMHA(cached_per_token=16, mha_cached_per_token=16)]


def test_latent_widths_are_the_resolved_mla_fields():
    cfg = AttentionConfig("mla", d_model=1024, n_heads=8, kv_lora_rank=256)
    assert cfg.latent_widths == (cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim)
    assert cfg.latent_widths == (256, 128, 64, 128)


def test_a_grouped_config_has_no_latent_widths():
    with pytest.raises(ValueError, match="no latent"):
        _ = AttentionConfig("gqa", d_model=64, n_heads=8, n_kv_heads=2).latent_widths


def test_replace_keeps_a_resolved_config_as_it_is():
    for cfg in (
        AttentionConfig("gqa", d_model=64, n_heads=8, n_kv_heads=2),
        AttentionConfig("mla", d_model=64, n_heads=4),
    ):
        assert dataclasses.replace(cfg) == cfg
