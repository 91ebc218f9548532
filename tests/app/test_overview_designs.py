"""The overview's designs after MLA: cache held at the settings' tokens, bytes read by the next decoding step and its
FLOPs, measured from the real layers (explorer.probes.overview.compare_designs) against formulas written here from
the designs' descriptions."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from attn_core import kv_cache_bytes
from explorer.glossary import design_name
from explorer.kinds.registry import chosen, design
from explorer.probes.overview import compare_designs
from explorer.settings import (
    DESIGNS,
    Settings,
)
from tests.app.helpers import chart_specs, no_exception, offered_settings, open_page

SMALL = Settings(
    d_model=64, heads=4, groups=2, latent=16, rope_dim=8, designs=DESIGNS, window=8, sinks=2, topk=8, rate=4, bits=4
)


def rows(settings: Settings, seq_len: int, batch: int = 1, dtype: str = "float32"):
    found = compare_designs(chosen(settings), settings.config("mha"), batch=batch, seq_len=seq_len, dtype=dtype)
    return {row.design: row for row in found}


def flops_by_formula(s: Settings, name: str, cached: int) -> int:
    """FLOPs (2 a multiply-add) of the matrix products that decode one token after `cached` tokens."""
    d, h, g, dh, dc, dr = s.d_model, s.heads, s.groups, s.head_dim, s.latent, s.rope_dim
    keys = cached + 1  # the cached tokens and the new one
    if name in ("sliding", "quantised"):
        read = keys
        if name == "sliding":  # the kept first tokens and the window
            sinks = min(keys, s.sinks)
            read = sinks + min(keys - sinks, s.window)
        projections = 2 * d * h * dh + 2 * 2 * d * g * dh + 2 * h * dh * d
        return projections + 2 * 2 * h * dh * read  # scores and weighted sum
    if name == "dsa":  # MLA (query through d_c, absorbed decode) on the top k, and the lightning indexer
        q_lora, nope, dv, index_heads, index_dim = dc, dh, dh, h, dh
        mla = 2 * d * q_lora + 2 * q_lora * h * (nope + dr) + 2 * d * (dc + dr) + 2 * h * dv * d
        mla += 2 * h * nope * dc + 2 * h * dc * dv  # absorbing W^UK into the query, W^UV into the output
        read = min(keys, s.topk)
        mla += 2 * h * (dc + dr) * read + 2 * h * dc * read
        indexer = 2 * d * index_dim  # its key, cached for every token
        # scoring every key, weighted per indexer head: at every length, as DeepSeek's reference and HF's module run it
        indexer += 2 * q_lora * index_heads * index_dim + 2 * d * index_heads
        indexer += 2 * index_heads * index_dim * keys + 2 * index_heads * keys
        return mla + indexer
    if name == "compressed":  # V4's HCA: one K=V head; the window and every entry; the sink as one more key
        q_lora, o_lora = dc, dc
        projections = 2 * d * q_lora + 2 * q_lora * h * dh + 2 * d * dh + 2 * 2 * d * dh  # + the compressor's kv, gate
        projections += 2 * h * dh * o_lora + 2 * g * o_lora * d  # grouped low-rank output
        read = min(keys, s.window) + keys // s.rate + 1  # a group the new token completes is pooled first
        return projections + 2 * 2 * h * (dh + 1) * read  # D + 1: the sink's channel
    if name == "linear":  # Gated DeltaNet: projections, and per value head a d_k x D state read, updated and read
        dk = s.state_dim
        projections = 2 * d * (2 * g * dk + 2 * h * dh) + 2 * d * 2 * h + 2 * h * dh * d
        return projections + 3 * 2 * h * dk * dh
    if name == "shared_topk":  # DSA's MLA on the k the full layer picked; the full layer's indexer is its own work
        q_lora, nope, dv = dc, dh, dh
        mla = 2 * d * q_lora + 2 * q_lora * h * (nope + dr) + 2 * d * (dc + dr) + 2 * h * dv * d
        mla += 2 * h * nope * dc + 2 * h * dc * dv
        read = min(keys, s.topk)
        return mla + 2 * h * (dc + dr) * read + 2 * h * dc * read
    if name == "mamba2":  # in_proj (z, x|B|C, dt), the state [P, N] of each head times C, out_proj
        p, n = dh, s.state_dim
        return 2 * d * (2 * h * p + 2 * g * n + h) + 2 * h * p * n + 2 * h * p * d
    if name == "lightning":  # qkv and the gate, k^T v into each head's D x D state, q times it, out_proj
        return 2 * d * 3 * h * dh + 2 * d * h * dh + 2 * 2 * h * dh * dh + 2 * h * dh * d
    if name == "chunked":  # Llama 4: GQA reading its own chunk up to itself, (T − 1) mod C + 1 keys
        projections = 2 * d * h * dh + 2 * 2 * d * g * dh + 2 * h * dh * d
        return projections + 2 * 2 * h * dh * ((keys - 1) % s.chunk + 1)
    if name == "shared":  # Gemma 3n's consumer: its queries and output only; the keys and values are its producer's
        return 2 * d * h * dh + 2 * h * dh * d + 2 * 2 * h * dh * keys
    raise AssertionError(name)


@pytest.mark.parametrize("cached", [1, 6, 7, 8, 15, 16, 40])
@pytest.mark.parametrize("name", DESIGNS)
def test_flops_per_decoded_token_equal_the_formula(name, cached):
    assert rows(SMALL, cached)[name].decode_flops_per_token == flops_by_formula(SMALL, name, cached)


@pytest.mark.parametrize("name", ["sliding", "quantised"])
def test_a_grouped_design_costs_what_gqa_costs_for_the_keys_it_reads(name):
    from attn_core import decode_flops_per_token

    wide = replace(SMALL, window=4096)  # the window reaches every token: sliding reads what GQA reads
    assert rows(wide, 30)[name].decode_flops_per_token == decode_flops_per_token(wide.config("gqa"), 30)


@hypothesis_settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offered_settings(d_models=(16, 64, 256, 1024, 4096)),
    st.sampled_from((1, 7, 64, 1000, 8192)),
    st.sampled_from((1, 3)),
    st.sampled_from(DESIGNS),
)
def test_at_any_offered_settings_measured_equals_the_closed_forms(settings, seq_len, batch, name):
    row = rows(replace(settings, designs=(name,)), seq_len, batch, "bfloat16")[name]
    assert row.cache_bytes_measured == row.cache_bytes_formula
    assert row.read_bytes_measured == row.read_bytes_formula
    assert row.decode_flops_per_token == flops_by_formula(settings, name, seq_len)
    mha = kv_cache_bytes(settings.config("mha"), batch, seq_len, "bfloat16")
    assert row.cache_ratio_to_mha == row.cache_bytes_measured / mha


def test_the_overview_shows_the_designs_beside_the_four():
    at = open_page("overview", SMALL.to_link())
    no_exception(at, nor_error=True)
    names = [*("MHA", "MQA", "GQA", "MLA"), *(design_name(d) for d in DESIGNS)]
    bars = [spec["data"][0] for spec in chart_specs(at)]
    assert [bar["y"] for bar in bars] == [names, names]
    measured = rows(SMALL, SMALL.seq_len, SMALL.batch, SMALL.dtype)
    assert bars[0]["x"][4:] == [measured[d].cache_bytes_measured for d in DESIGNS]
    assert bars[1]["x"][4:] == [measured[d].decode_flops_per_token for d in DESIGNS]
    table = next(df.value for df in at.dataframe if "Design" in df.value.columns)
    assert list(table["Agree"]) == ["✓"] * len(DESIGNS)


def test_without_designs_the_overview_is_as_before():
    at = open_page("overview", replace(SMALL, designs=()).to_link())
    no_exception(at, nor_error=True)
    assert [spec["data"][0]["y"] for spec in chart_specs(at)] == [["MHA", "MQA", "GQA", "MLA"]] * 2
    assert not any("Design" in df.value.columns for df in at.dataframe)


def test_the_design_is_built_from_the_sidebars_layer_shape():
    built = design(SMALL, "compressed").config
    assert (built.d_model, built.n_heads, built.head_dim, built.o_groups) == (64, 4, 16, 2)
