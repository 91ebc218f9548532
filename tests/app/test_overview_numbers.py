"""The overview's numbers as the browser receives them, checked against the closed-form accounting."""

from __future__ import annotations

import pytest

from attn_core import decode_flops_per_token, kv_cache_bytes
from explorer.charts import format_bytes
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
    assert dict(zip(bars["x"], bars["y"])) == expected


@pytest.mark.parametrize("settings", CASES.values(), ids=CASES.keys())
def test_flops_bars_equal_the_decode_flops_formula(settings):
    at = open_page("overview", settings.to_link())
    bars = figure_with_title(chart_specs(at), "Work to decode one token")["data"][0]
    expected = {
        variant.upper(): decode_flops_per_token(cfg, settings.seq_len) for variant, cfg in settings.configs().items()
    }
    assert dict(zip(bars["x"], bars["y"])) == expected


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
    ratios = {x: text.split("<br>")[1] for x, text in zip(bars["x"], bars["text"])}
    per_token = {"MHA": 2 * 1024, "MQA": 2 * 64, "GQA": 2 * 4 * 64, "MLA": 256 + 32}  # numbers cached per token
    assert ratios == {x: f"{n / per_token['MHA']:.3g}× MHA" for x, n in per_token.items()}
