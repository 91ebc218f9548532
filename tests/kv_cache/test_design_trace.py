"""The designs after MLA decoded step by step: what their caches hold and what each step reads, measured from the real
layer's cache, equal the closed forms at every step; outputs equal a full pass without a cache."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from explorer.glossary import design_name
from explorer.kinds.registry import design
from explorer.kv_cache.figures import design_size_figure
from explorer.probes import FLOAT32_TOLERANCE
from explorer.probes.kv_cache import DesignTrace, TraceTooHeavy, design_trace
from explorer.settings import DESIGNS, Settings

SMALL = Settings(d_model=64, heads=4, groups=2, latent=16, rope_dim=8, window=8, sinks=2, topk=8, rate=4, bits=4)
PROMPT, STEPS, BATCH = 5, 24, 2


@cache
def traced(name: str, dtype: str = "bfloat16", settings: Settings = SMALL) -> DesignTrace:
    return design_trace(
        design(settings, name), prompt_len=PROMPT, steps=STEPS, batch=BATCH, seed=3, storage_dtype=dtype
    )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", DESIGNS)
def test_held_and_read_bytes_equal_the_closed_forms_at_every_step(name, dtype):
    trace = traced(name, dtype)
    assert trace.nbytes == trace.formula_nbytes
    assert trace.read_nbytes == trace.formula_read_nbytes
    assert trace.tokens_seen == list(range(PROMPT, PROMPT + STEPS + 1))


@pytest.mark.parametrize("name", DESIGNS)
def test_the_meta_twin_holds_what_the_real_float32_layer_holds(name):
    """The bytes shown come from a twin on the meta device: in float32 it equals the real layer's cache, step by step."""
    trace = traced(name, "float32")
    assert trace.nbytes == trace.float32_nbytes


@pytest.mark.parametrize("name", ["sliding", "compressed", "linear"])
def test_a_cached_decode_equals_a_full_pass_to_float32_round_off(name):
    assert max(traced(name, "float32").max_abs_diff) < FLOAT32_TOLERANCE


def test_dsa_equals_a_full_pass_when_its_top_k_reads_every_token():
    every = replace(SMALL, topk=64)
    assert max(traced("dsa", "float32", every).max_abs_diff) < FLOAT32_TOLERANCE


def test_a_quantised_cache_rounds_more_at_fewer_bits():
    eight, two = (
        traced("quantised", "float32", replace(SMALL, bits=8)),
        traced("quantised", "float32", replace(SMALL, bits=2)),
    )
    assert FLOAT32_TOLERANCE < max(eight.max_abs_diff) < max(two.max_abs_diff)


def test_the_closed_forms_by_hand():
    """SMALL: G=2 KV heads of D=16, W=8, n_s=2, k=8, m=4, d_c=16, d_h^R=8, d_I=16, 4-bit groups of 16; bfloat16."""
    e, b = 2, 1

    def at(name, tokens, new=1):
        return design(SMALL, name).formula_bytes(tokens, b, "bfloat16", new_tokens=new)

    per_token = 2 * 2 * 16 * e  # K and V of 2 heads of 16
    assert at("sliding", 20) == (per_token * (2 + 7), per_token * (2 + 8))
    assert at("sliding", 3) == (per_token * 3, per_token * 3)
    assert at("dsa", 20) == ((16 + 8 + 16) * 20 * e, (20 * 16 + 8 * (16 + 8)) * e)
    # at no more than k tokens the indexer still scores every key (DeepSeek's reference), and every latent is read
    assert at("dsa", 6) == ((16 + 8 + 16) * 6 * e, 6 * (16 + 16 + 8) * e)
    # HCA: 7 window keys, 5 entries, 2 waiting tokens held twice (projection and gate); reads 8 keys and 5 entries
    assert at("compressed", 22) == ((7 + 5 + 2 * 2) * 16 * e, (8 + 5) * 16 * e)
    # Gated DeltaNet: 4 value heads' 64 x 16 float32 states, and 3 conv inputs of 2*2*64 + 4*16 channels
    state = 4 * 64 * 16 * 4 + (2 * 2 * 64 + 4 * 16) * 3 * e
    assert at("linear", 1) == (state, state)
    assert at("linear", 1000) == (state, state)
    # KIVI at 20 tokens: keys per channel, 16 of them quantised (4-bit codes + a scale and zero per 16), 4 exact;
    # values per token, all 20 quantised
    keys = 16 * 16 // 2 + 2 * 16 * e + 4 * 16 * e
    values = 20 * 16 // 2 + 2 * 20 * e
    held = 2 * (keys + values)
    assert at("quantised", 20)[0] == held


def test_the_shapes_the_page_shows():
    """A window flattens, a linear state is flat, compressed entries step up every m tokens, a quantised cache holds
    a fraction of the same layer's plain cache."""
    sliding = traced("sliding")
    assert sliding.nbytes[-1] == sliding.nbytes[-10] < traced("dsa").nbytes[-1]
    assert len(set(traced("linear").nbytes)) == 1
    compressed = traced("compressed")  # past the window, what a step reads grows by one entry every m = 4 tokens
    past_window = [i for i, t in enumerate(compressed.tokens_seen) if t > SMALL.window]
    grew = [
        compressed.tokens_seen[i] for i in past_window[1:] if compressed.read_nbytes[i] > compressed.read_nbytes[i - 1]
    ]
    assert grew
    assert all(t % SMALL.rate == 0 for t in grew)
    quantised = traced("quantised")
    gqa_bytes = [2 * 2 * 16 * 2 * BATCH * t for t in quantised.tokens_seen]
    assert all(q < g for q, g in zip(quantised.nbytes[-8:], gqa_bytes[-8:], strict=True))


def test_a_trace_out_of_bounds_says_so():
    with pytest.raises(TraceTooHeavy, match="steps"):
        design_trace(design(SMALL, "linear"), prompt_len=5, steps=1000, batch=1, seed=0, storage_dtype="bfloat16")


def test_the_designs_chart_has_one_legend_entry_a_design_toggling_its_held_and_read_lines():
    figure = design_size_figure({name: traced(name) for name in DESIGNS}, {}, step=3)
    entries = [line["name"] for line in figure["data"] if line.get("showlegend", True)]
    assert entries == [design_name(name) for name in DESIGNS]
    for name in DESIGNS:
        lines = [line for line in figure["data"] if line["legendgroup"] == name]
        assert len(lines) == 4  # held and read, each over its closed form
