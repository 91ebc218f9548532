"""The second chapter's two steps on the layers axis, after linear attention: MiniMax-M2's full attention against
MiniMax-M1's lightning 7:1 hybrid, and Gemma 3n E4B's shared layers. Each quotes what its chart shows, checked against
the closed forms written out here from the published configs."""

from __future__ import annotations

import pytest

from attn_core import PUBLISHED, STATED_REASONS
from explorer.i18n import format_bytes, percent
from explorer.lesson import layers_axis
from tests.lesson.test_after_mla import BF16, T, at_t, in_language, number_of, opened

MIB = 2**20


def test_the_layers_axis_steps_come_after_the_hybrids_and_before_the_bits():
    assert number_of("linear") + 1 == number_of("full_again")
    assert number_of("full_again") + 1 == number_of("shared_kv") == number_of("bits") - 1


def minimax_bytes(tokens: int) -> tuple[int, int, int]:
    """M2's and M1's caches at `tokens` in 16 bits, and M1's lightning states: 8 KV heads of 128 in each softmax
    layer, a 64-head [128 x 128] state in each lightning layer (bf16, as the model keeps it)."""
    m1, m2 = PUBLISHED["MiniMax-M1"], PUBLISHED["MiniMax-M2"]
    full_m1 = m1["attn_type_list"].count(1)
    kv = 2 * 8 * 128 * tokens * BF16
    states = (m1["num_hidden_layers"] - full_m1) * m1["num_attention_heads"] * 128 * 128 * BF16
    return m2["num_hidden_layers"] * kv, full_m1 * kv + states, states


def solid(spec: dict, name: str) -> dict:
    """A model's line within its published context (past it, a dotted one: M2 was published for 196,608 tokens)."""
    (found,) = [t for t in spec["data"] if t.get("name") == name and t["line"]["dash"] == "solid"]
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_full_again_step_quotes_both_caches_and_the_authors_reasons(lang):
    spec, text = opened("full_again", lang)
    m2, m1, states = minimax_bytes(T)
    assert at_t(solid(spec, "MiniMax-M2")) == m2
    assert at_t(solid(spec, "MiniMax-M1")) == m1
    for figure in (m2, m1, states):
        assert in_language(lang, format_bytes, figure) in text
    assert in_language(lang, layers_axis.sig, m2 / m1) in text, "the ratio, as the chart's two markers give it"
    reason = STATED_REASONS["MiniMax-M2"]
    assert reason.source in text


def test_the_full_again_steps_lightning_states_hold_the_same_bytes_at_any_length():
    curves = {kind.kind: kind for kind in layers_axis._published("MiniMax-M1").kinds}
    assert len(set(curves["linear"].held)) == 1
    assert curves["linear"].held[0] == minimax_bytes(T)[2]


def gemma3n_bytes(tokens: int) -> tuple[int, int]:
    """Gemma 3n E4B's cache at `tokens` in 16 bits as published (its first 20 layers hold: 16 window layers keeping
    min(T, 511) tokens, 4 full ones), and were every layer to keep its own (28 and 7): 2 KV heads of 256."""
    entry = 2 * 2 * 256 * BF16
    window = min(tokens, 512 - 1)
    return (16 * window + 4 * tokens) * entry, (28 * window + 7 * tokens) * entry


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_shared_step_measures_gemma_3ns_cache_with_and_without_sharing(lang):
    spec, text = opened("shared_kv", lang)
    tokens = 32768
    shared, unshared = gemma3n_bytes(tokens)
    assert (round(shared / MIB), round(unshared / MIB)) == (272, 476), "the issue's figures"
    bars = [t for t in spec["data"] if t["type"] == "bar"]
    assert [sum(t["y"][i] for t in bars) for i in (0, 1)] == [shared, unshared]
    for figure in (shared, unshared):
        assert in_language(lang, format_bytes, figure) in text
    assert in_language(lang, percent, 1 - shared / unshared) in text
    if lang == "en":  # the layers the core says the shared ones read
        assert "layer 18 for the window layers, 19 for the full ones" in text


def test_the_shared_steps_sources_are_the_last_layer_of_each_kind_before_the_shared_ones():
    text = PUBLISHED["Gemma 3n E4B"]["text_config"]
    first_shared = text["num_hidden_layers"] - text["num_kv_shared_layers"]
    kinds = text["layer_types"][:first_shared]
    last = {kind: i for i, kind in enumerate(kinds)}
    assert layers_axis.kv_sources() == {"sliding": last["sliding_attention"], "full": last["full_attention"]}
