"""The overview's cache bars on a projector (present=1, every font doubled, the chart 1.35x as tall): with the four
variants and every design after MLA beside them, each bar's two-line label ("9.50 KiB / 0.0742× MHA") has its own
row, clear of the next (issue 47's walk: with ten bars the labels touched their neighbours' at 1024x768)."""

from __future__ import annotations

from explorer.kinds.registry import chosen
from explorer.overview import cache_bar_figure
from explorer.present import for_projector
from explorer.probes.overview import compare_designs, compare_variants
from explorer.settings import DESIGNS, Settings

LINE = 1.3  # a line of text, in font sizes (Plotly's line height)


def test_each_two_line_label_has_a_row_of_its_own_on_a_projector():
    settings = Settings(designs=DESIGNS)
    variants = compare_variants(settings.configs(), batch=1, seq_len=64, dtype="bfloat16")
    designs = compare_designs(chosen(settings), settings.config("mha"), batch=1, seq_len=64, dtype="bfloat16")
    figure = for_projector(cache_bar_figure(variants, 64, 1, "bfloat16", designs))
    layout, font = figure["layout"], figure["data"][0]["textfont"]["size"]
    plot = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    row = plot / (len(variants) + len(designs))
    assert row >= 2 * LINE * font, (row, font)  # with rows of 36 px: 55.6 px for 62.4
