"""The axes page's numbers against formulas written here from the configs' published numbers (not the core's):
whole models' caches along the grid, where a window stops growth, where two curves cross, the four axes' cuts, and
that no published model is dropped without a word."""

from __future__ import annotations

import json

import pytest

from attn_core import PUBLISHED
from attn_core.hf import READERS, WRAPPERS
from explorer.probes.axes import (
    MAX_CONFIG_CHARS,
    TOKEN_GRID,
    axis_cuts,
    crossings,
    custom_curves,
    model_curves,
    plateaus,
    published_curves,
    read_config,
)

BF16 = 2


def kv(layers: int, kv_heads: int, head_dim: int, held_tokens: int) -> int:
    """Keys and values of `held_tokens` tokens in `layers` layers, bfloat16, one sequence."""
    return layers * 2 * kv_heads * head_dim * held_tokens * BF16


# Each model's held bytes at T tokens, from its config's numbers: a sliding layer keeps the window - 1 latest tokens
# (the next query's window besides itself), a full layer every token, MLA d_c + d_h^R numbers a token.
HELD = {
    "Llama 3 8B": lambda t: kv(32, 8, 128, t),
    "Mistral 7B": lambda t: kv(32, 8, 128, min(t, 4095)),
    "Gemma 3 27B": lambda t: kv(52, 16, 128, min(t, 1023)) + kv(10, 16, 128, t),
    "gpt-oss-120b": lambda t: kv(18, 8, 64, min(t, 127)) + kv(18, 8, 64, t),
    "DeepSeek-V3": lambda t: 61 * (512 + 64) * t * BF16,
    "SmolLM2-135M": lambda t: kv(30, 3, 64, t),
    # DSA keeps MLA's latent and rotary key plus one indexer key of d_I = 128 per token
    "DeepSeek-V3.2": lambda t: 61 * (512 + 64 + 128) * t * BF16,
    # Gated DeltaNet: 32 value heads' 128 x 128 states in float32, and the convolution's last K - 1 = 3 inputs of
    # its q, k, v channels (2 * 16 * 128 + 32 * 128); every 4th layer full attention with 2 KV heads of 256
    "Qwen3-Next-80B-A3B": lambda t: (
        36 * (32 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 32 * 128) * BF16) + kv(12, 2, 256, t)
    ),
    # KDA: 32 heads' 128 x 128 states in float32 and 3 inputs of q, k, v (3 * 32 * 128); MLA on 7 of 27 layers
    "Kimi Linear 48B-A3B": lambda t: 20 * (32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * BF16) + 7 * (512 + 64) * t * BF16,
    # 20 of 35 layers keep caches (16 sliding, 4 full); the last 15 read layer 18's or 19's and hold nothing
    "Gemma 3n E4B": lambda t: kv(16, 2, 256, min(t, 511)) + kv(4, 2, 256, t),
    # global layers cache their value alone (K = V): half of kv() at 4 KV heads of 512
    "Gemma 4 31B": lambda t: kv(50, 16, 256, min(t, 1023)) + kv(10, 4, 512, t) // 2,
}
# Read by the decoding step of token T: the window (itself and the W - 1 before) on a sliding layer, all on a full one
READ = {
    # DSA: the indexer scores every cached key at any length (DeepSeek's reference runs it even at 2048 or fewer),
    # and attention reads the min(T, 2048) latents it picks
    "DeepSeek-V3.2": lambda t: 61 * (128 * t + (512 + 64) * min(t, 2048)) * BF16,
    "gpt-oss-120b": lambda t: kv(18, 8, 64, min(t, 128)) + kv(18, 8, 64, t),
    "Mistral 7B": lambda t: kv(32, 8, 128, min(t, 4096)),
    # a shared layer reads its source's window or every token again: 12 read layer 18's, 3 layer 19's
    "Gemma 3n E4B": lambda t: kv(16 + 12, 2, 256, min(t, 512)) + kv(4 + 3, 2, 256, t),
}


@pytest.fixture(scope="module")
def drawn():
    models, missing = published_curves()
    return {m.name: m for m in models}, missing


@pytest.mark.parametrize("name", HELD)
def test_each_models_curve_is_its_formula_at_every_length(drawn, name):
    model = drawn[0][name]
    assert model.tokens == TOKEN_GRID
    assert list(model.held) == [HELD[name](t) for t in TOKEN_GRID]


@pytest.mark.parametrize("name", READ)
def test_the_read_curve_is_what_each_layer_kind_reads(drawn, name):
    assert list(drawn[0][name].read) == [READ[name](t) for t in TOKEN_GRID]


def test_the_grid_runs_from_1k_to_1m_tokens_in_order():
    assert TOKEN_GRID[0] == 1024
    assert TOKEN_GRID[-1] == 1 << 20
    assert list(TOKEN_GRID) == sorted(set(TOKEN_GRID))


def test_no_published_model_is_dropped_without_a_word(drawn):
    models, missing = drawn
    assert set(models) | {m.name for m in missing} == set(PUBLISHED)
    for model in missing:
        assert model.model_type not in READERS
        assert model.model_type not in WRAPPERS
        assert model.model_type in model.message  # the core's own sentence, naming it


def test_batch_and_dtype_scale_every_curve():
    base = model_curves(PUBLISHED["gpt-oss-120b"], name="a")
    scaled = model_curves(PUBLISHED["gpt-oss-120b"], name="a", batch=3, dtype="float32")
    assert [3 * 2 * held for held in base.held] == list(scaled.held)


def test_a_window_on_every_layer_stops_growth_at_the_window(drawn):
    (plateau,) = plateaus(drawn[0]["Mistral 7B"])
    # the grid's first length at or past the window holds W - 1 tokens, and every later one the same
    assert (plateau.kind, plateau.tokens, plateau.nbytes) == (None, 4096, kv(32, 8, 128, 4095))


def test_a_hybrids_sliding_layers_stop_growing_and_its_full_ones_do_not(drawn):
    (plateau,) = plateaus(drawn[0]["Gemma 3 27B"])
    assert (plateau.kind, plateau.nbytes) == ("sliding", kv(52, 16, 128, 1023))
    assert plateaus(drawn[0]["Llama 3 8B"]) == []


def test_curves_cross_between_the_grid_lengths_where_their_formulas_meet(drawn):
    models = [drawn[0]["Llama 3 8B"], drawn[0]["Gemma 3 27B"]]
    (crossing,) = crossings(models, "held")
    # Llama: 131072 T; Gemma: 52 layers' windows + 81920 T. Equal at:
    exact = kv(52, 16, 128, 1023) / (kv(32, 8, 128, 1) - kv(10, 16, 128, 1))
    before = max(t for t in TOKEN_GRID if t <= exact)
    after = min(t for t in TOKEN_GRID if t > exact)
    assert before < crossing.tokens < after
    assert abs(crossing.tokens - exact) / exact < 0.02  # interpolated on the log-log curves
    assert (crossing.lower_first, crossing.other) == ("Llama 3 8B", "Gemma 3 27B")


def test_curves_that_only_meet_at_the_start_do_not_cross(drawn):
    # Mistral and Llama 3 8B have the same layers: equal up to Mistral's window, then apart, never crossing
    assert crossings([drawn[0]["Mistral 7B"], drawn[0]["Llama 3 8B"]], "held") == []


@pytest.mark.parametrize("tokens", [1024, 131072, 1 << 20])
@pytest.mark.parametrize("name", HELD)
def test_the_four_axes_multiply_to_the_saving_against_mha_in_16_bits(drawn, name, tokens):
    model = drawn[0][name]
    text = PUBLISHED[name].get("text_config", PUBLISHED[name])
    heads, layers = text["num_attention_heads"], text["num_hidden_layers"]
    key = (
        text.get("qk_nope_head_dim", 0) + text.get("qk_rope_head_dim", 0)
        or text.get("head_dim")
        or (text["hidden_size"] // heads)
    )
    value = text.get("v_head_dim") or text.get("head_dim") or text["hidden_size"] // heads
    mha = layers * heads * (key + value) * tokens * 2  # every layer, every token, 16 bits
    cuts = axis_cuts(model, tokens)
    assert cuts.total == pytest.approx(mha / HELD[name](tokens), rel=1e-12)
    assert cuts.layers * cuts.tokens * cuts.width * cuts.bytes == pytest.approx(cuts.total, rel=1e-12)


def test_each_design_cuts_its_own_axis(drawn):
    at = 131072
    gemma, gpt_oss = axis_cuts(drawn[0]["Gemma 3 27B"], at), axis_cuts(drawn[0]["gpt-oss-120b"], at)
    # tokens: a window cuts tokens, mixed with full layers or not: every layer keeping T ÷ what they keep
    assert (gemma.layers, gpt_oss.layers) == (1, 1)
    assert gemma.tokens == pytest.approx(62 * at / (10 * at + 52 * 1023))
    assert gpt_oss.tokens == pytest.approx(36 * at / (18 * at + 18 * 127))
    # tokens: Mistral's window keeps 4095 of T
    assert axis_cuts(drawn[0]["Mistral 7B"], at).tokens == pytest.approx(at / 4095)
    # width: MLA's 576 numbers against 128 heads' keys (192) and values (128); GQA's 8 KV heads of 32 query heads
    assert axis_cuts(drawn[0]["DeepSeek-V3"], at).width == pytest.approx(128 * 320 / 576)
    assert axis_cuts(drawn[0]["Llama 3 8B"], at).width == pytest.approx(4)
    assert axis_cuts(drawn[0]["Llama 3 8B"], at).bytes == 1


def test_v4s_compressed_layers_cut_tokens_by_their_rate_and_width_by_one_shared_head(drawn):
    cuts = axis_cuts(drawn[0]["DeepSeek-V4-Flash"], 1 << 20)
    assert cuts.cache_kinds == ("sliding", "csa", "hca")
    # the mean entry of its 43 layers: CSA's 512-wide shared K=V head plus a 128-wide indexer key (21 layers), HCA's
    # and the window's 512 (22), against 64 heads' keys and values of 512
    assert cuts.width == pytest.approx(64 * (512 + 512) * 43 / (21 * (512 + 128) + 22 * 512))
    # CSA keeps one entry per 4 tokens, HCA one per 128 (less the windows' and waiting tokens' share, under 1 %)
    every = 21 * (512 + 128) + 22 * 512
    assert cuts.tokens == pytest.approx(every / (21 * (512 + 128) / 4 + 20 * 512 / 128), rel=0.01)
    assert cuts.tokens < every / (21 * (512 + 128) / 4 + 20 * 512 / 128)


def test_a_float32_cache_doubles_the_bytes_axis_the_wrong_way():
    model = model_curves(PUBLISHED["Llama 3 8B"], name="x", dtype="float32")
    assert axis_cuts(model, 1024).bytes == 0.5


# --- a pasted config -------------------------------------------------------------------------------------------------
def test_a_pasted_published_config_is_drawn_as_the_published_one(drawn):
    mine = custom_curves(json.dumps(PUBLISHED["gpt-oss-120b"], indent=2)).curves
    assert mine is not None
    assert mine.held == drawn[0]["gpt-oss-120b"].held


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ('{"model_type": "llama", ', "not_json"),
        ("[1, 2, 3]", "not_object"),
        ('{"hidden_size": 4096}', "no_model_type"),
        ("x" * (MAX_CONFIG_CHARS + 1), "too_long"),
        ("[" * 100_000, "not_json"),
    ],
)
def test_what_is_wrong_with_a_text_is_named(text, kind):
    assert read_config(text).problem.kind == kind


def test_a_model_type_the_core_does_not_read_is_named_with_the_cores_message():
    problem = custom_curves('{"model_type": "gpt2", "n_layer": 12}').problem
    assert problem.kind == "unsupported"
    assert problem.values == {"model_type": "gpt2"}
    assert "not supported" in problem.message
    assert "llama" in problem.message


def test_a_missing_field_is_the_cores_refusal_naming_it():
    config = {k: v for k, v in PUBLISHED["Llama 3 8B"].items() if k != "num_attention_heads"}
    problem = custom_curves(json.dumps(config)).problem
    assert problem.kind == "field"
    assert (problem.values["field"], problem.values["need"]) == ("num_attention_heads", "given")
    assert "num_attention_heads" in problem.message


def test_a_refusal_the_core_does_not_type_keeps_its_sentence():
    config = PUBLISHED["Mistral 7B"] | {"sliding_window": 65536}  # longer than the context: said in a sentence
    problem = custom_curves(json.dumps(config)).problem
    assert problem.kind == "invalid"
    assert "larger than the context" in problem.message


def test_a_published_config_unchanged_is_drawn_by_its_name_a_changed_one_by_its_model_type():
    assert custom_curves(json.dumps(PUBLISHED["DeepSeek-V4-Flash"]), tokens=(1024,)).curves.name == "DeepSeek-V4-Flash"
    changed = PUBLISHED["DeepSeek-V4-Flash"] | {"sliding_window": 64}
    assert custom_curves(json.dumps(changed), tokens=(1024,)).curves.name == "deepseek_v4"


def test_the_json_readers_position_is_kept():
    problem = read_config('{\n  "model_type": "llama",\n  oops\n}').problem
    assert problem.values == {"line": 3, "column": 3}
    assert "line 3 column 3" in problem.message


def test_dsa_keeps_v3s_width_but_a_step_reads_a_bounded_part_of_its_tokens(drawn):
    at = 131072
    held, read = axis_cuts(drawn[0]["DeepSeek-V3.2"], at), axis_cuts(drawn[0]["DeepSeek-V3.2"], at, "read")
    assert held.tokens == 1  # the cache keeps every token
    # a step reads the indexer's key of every token and the top 2048 tokens' latents: 704 numbers a token kept
    assert read.tokens == pytest.approx(at * 704 / (128 * at + 576 * 2048))
    assert read.width == held.width == pytest.approx(128 * 320 / 704)


def test_a_hybrids_feed_forward_layers_are_not_counted_on_the_layers_axis():
    """Nemotron-H lists its MoE layers (E) as layers of their own: only the Mamba (M) and attention (*) layers mix
    tokens, as every layer of the other models does, so only they count on the layers axis."""
    config = PUBLISHED["Nemotron 3 Nano 30B-A3B"]
    pattern = config["hybrid_override_pattern"]
    curves = model_curves(config, name="Nemotron 3 Nano")
    assert curves.layers == pattern.count("M") + pattern.count("*") < len(pattern)
    cuts = axis_cuts(curves, 131072)
    held = {kind.kind: kind.held[curves.at(131072)] for kind in curves.kinds}
    attention = held["full"] / pattern.count("*")
    assert cuts.layers == pytest.approx(curves.layers * attention / sum(held.values()))
