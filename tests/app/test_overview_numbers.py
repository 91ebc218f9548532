"""The overview's numbers as the browser receives them, checked against the closed-form accounting."""

from __future__ import annotations

import pytest

from attn_core import decode_flops_per_token, kv_cache_bytes
from explorer.i18n import format_bytes
from explorer.settings import Settings

from .helpers import LARGEST, SMALLEST, chart_specs, open_page

CASES = {
    "default": Settings(),
    "smallest": SMALLEST,
    "largest": LARGEST,
    "two variants in float16": Settings(
        variants=("gqa", "mla"),
        d_model=2048,
        heads=16,
        groups=4,
        latent=512,
        rope_dim=64,
        seq_len=4096,
        batch=8,
        dtype="float16",
    ),
}


def figure_with_title(specs: list[dict], start: str) -> dict:
    matches = [spec for spec in specs if spec["layout"]["title"]["text"].startswith(start)]
    assert len(matches) == 1, [spec["layout"]["title"]["text"] for spec in specs]
    return matches[0]


@pytest.mark.parametrize("settings", CASES.values(), ids=CASES.keys())
def test_cache_bars_equal_the_closed_form_cache_bytes_of_each_variant(settings):
    at = open_page("overview", settings.to_link())
    bars = figure_with_title(chart_specs(at), "KV cache of one layer")["data"][0]
    expected = {
        variant.upper(): kv_cache_bytes(cfg, settings.batch, settings.seq_len, settings.dtype)
        for variant, cfg in settings.configs().items()
    }
    assert dict(zip(bars["y"], bars["x"], strict=True)) == expected


@pytest.mark.parametrize("settings", CASES.values(), ids=CASES.keys())
def test_flops_bars_equal_the_decode_flops_formula(settings):
    at = open_page("overview", settings.to_link())
    bars = figure_with_title(chart_specs(at), "Work to decode one token")["data"][0]
    expected = {
        variant.upper(): decode_flops_per_token(cfg, settings.seq_len) for variant, cfg in settings.configs().items()
    }
    assert dict(zip(bars["y"], bars["x"], strict=True)) == expected


@pytest.mark.parametrize("settings", CASES.values(), ids=CASES.keys())
def test_the_table_marks_measured_equal_to_formula_with_a_check(settings):
    at = open_page("overview", settings.to_link())
    table = at.dataframe[0].value
    assert list(table["Agree"]) == ["✓"] * len(settings.variants)
    formula = [
        format_bytes(kv_cache_bytes(cfg, settings.batch, settings.seq_len, settings.dtype))
        for cfg in settings.configs().values()
    ]
    assert list(table["Cache, formula"]) == formula
    assert list(table["Cache, measured"]) == formula


def test_the_cache_ratio_labels_are_relative_to_mha():
    settings = Settings(d_model=1024, heads=16, groups=4, latent=256, rope_dim=32)
    at = open_page("overview", settings.to_link())
    bars = figure_with_title(chart_specs(at), "KV cache of one layer")["data"][0]
    ratios = {x: text.split("<br>")[1] for x, text in zip(bars["y"], bars["text"], strict=True)}
    per_token = {"MHA": 2 * 1024, "MQA": 2 * 64, "GQA": 2 * 4 * 64, "MLA": 256 + 32}  # numbers cached per token
    assert ratios == {x: f"{n / per_token['MHA']:.3g}× MHA" for x, n in per_token.items()}


# --- units: one family, a sensible prefix, never Plotly's SI letters on bytes ---------------------------------------
def unit_of(text: str) -> tuple[float, str]:
    number, unit = text.replace(",", "").split(" ")
    return float(number), unit


@pytest.mark.parametrize("settings", CASES.values(), ids=CASES.keys())
def test_axes_are_labelled_in_binary_bytes_and_flop_prefixes_that_hold_the_bars(settings):
    at = open_page("overview", settings.to_link())
    specs = chart_specs(at)
    for start, family in (
        ("KV cache of one layer", ("B", "KiB", "MiB", "GiB", "TiB")),
        ("Work to decode one token", ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP")),
    ):
        spec = figure_with_title(specs, start)
        axis = spec["layout"]["xaxis"]  # the bars are horizontal
        units = {unit_of(text)[1] for text in axis["ticktext"]}
        # ticks drawn from our labels, one unit
        assert len(units) == 1, axis["ticktext"]
        assert units <= set(family), axis["ticktext"]
        assert axis["range"][1] >= max(spec["data"][0]["x"]), "the axis holds the longest bar"
        tops = [unit_of(text)[0] for text in axis["ticktext"]]
        assert tops[-1] >= 1
        assert tops[-1] < 1024 or unit_of(axis["ticktext"][-1])[1] in ("TiB", "TFLOP")


@pytest.mark.parametrize("settings", CASES.values(), ids=CASES.keys())
def test_flop_labels_and_table_use_a_prefix_that_keeps_one_to_three_digits(settings):
    at = open_page("overview", settings.to_link())
    labels = list(at.dataframe[0].value["FLOPs per decoded token"])
    labels += figure_with_title(chart_specs(at), "Work to decode one token")["data"][0]["text"]
    for label in labels:
        number, unit = unit_of(label)
        assert unit.endswith("FLOP"), label
        assert 1 <= number < 1000 or unit == "FLOP", label


def flops_caption(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("MHA here:"))


def test_the_flops_caption_states_what_the_bars_show():
    """At d_c 128 MLA does less work than MHA; at d_c 4096 it does ~10x more: the caption must say which."""
    small = open_page("overview", Settings(latent=128).to_link())
    assert "Less work per token than MHA" in flops_caption(small)
    assert "MLA (" in flops_caption(small)
    large = open_page("overview", Settings(latent=4096).to_link())
    bars = figure_with_title(chart_specs(large), "Work to decode one token")["data"][0]
    work = dict(zip(bars["y"], bars["x"], strict=True))
    said = flops_caption(large)
    assert f"MLA costs more on both counts here: {work['MLA'] / work['MHA']:.3g}× MHA's work" in said
    assert "not paid for in arithmetic" not in said


@pytest.mark.parametrize(
    ("lang", "compresses_nothing", "as_much_as_mha"),
    [
        ("en", "$d_c$ = 32 is not smaller than the 32 per-head", "caches as much per token as MHA"),
        ("zh", "潜在维度 $d_c$ = 32，不小于它所代表的各头键与值的数值个数 32", "与 MHA 一样多"),
    ],
)
def test_the_cores_warnings_are_worded_in_the_readers_language(lang, compresses_nothing, as_much_as_mha):
    # 2 heads of 8: d_c = 32 stands for 2 x (8 + 8) = 32 numbers, and d_c + d_h^R = 36 >= MHA's 2 x 2 x 8 = 32.
    link = Settings(d_model=16, heads=2, groups=1, latent=32, rope_dim=4).to_link() | {"lang": lang}
    at = open_page("overview", link)
    notes = [w.value for w in at.warning if w.value.startswith("MLA")]
    assert len(notes) == 2, notes
    assert compresses_nothing in notes[0]
    assert as_much_as_mha in notes[1]
