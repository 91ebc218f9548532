"""The axes page's storage choice through AppTest: "as served" draws every model's cache in its serving format and
names each format's source under the chart; an old link (no ax_storage) opens as HF's modules hold the caches; the
published claims table shows what the core measures, in both languages."""

from __future__ import annotations

import pytest

from explorer.probes.axes import published_curves
from explorer.probes.claims import published_claims
from tests.app.helpers import chart_specs, open_page
from tests.axes.test_page import curves_sent


def markdown(at) -> str:
    return " ".join(m.value for m in at.markdown)


def test_as_served_draws_the_served_curves_and_names_each_formats_source():
    at = open_page("axes", {"ax_storage": "served"})
    assert not at.exception, [e.value for e in at.exception]
    models, _ = published_curves(storage="served")
    assert curves_sent(chart_specs(at)[0]) == {m.name: list(zip(m.tokens, m.held, strict=True)) for m in models}
    shown = markdown(at)
    assert "`512 × FP8 E4M3 + 4 × fp32 + 64 × bf16` = 656 B" in shown
    assert "`448 × FP8 E4M3 + 64 × bf16 + 7 × UE8M0` = 584 B" in shown
    assert "deepseek-ai/FlashMLA" in shown
    assert "fp4_act_quant" in shown


def test_an_old_link_opens_as_hfs_modules_hold_the_caches():
    at = open_page("axes", {})
    assert at.segmented_control(key="view_ax_storage").value == "reference"
    models, _ = published_curves()
    assert curves_sent(chart_specs(at)[0]) == {m.name: list(zip(m.tokens, m.held, strict=True)) for m in models}


def test_as_served_v32_is_61_x_788_bytes_a_token_on_the_chart():
    at = open_page("axes", {"ax_storage": "served"})
    v32 = dict(curves_sent(chart_specs(at)[0])["DeepSeek-V3.2"])
    assert v32[131072] == 61 * (656 + 132) * 131072


def test_a_bad_storage_in_the_link_is_reported_and_replaced():
    at = open_page("axes", {"ax_storage": "fp3"})
    assert not at.exception
    assert "ax_storage" in " ".join(w.value for w in at.warning)
    assert at.segmented_control(key="view_ax_storage").value == "reference"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_claims_table_shows_the_measured_figures(lang):
    at = open_page("axes", {"lang": lang})
    assert not at.exception, [e.value for e in at.exception]
    shown = markdown(at)
    for claim in published_claims():
        assert claim.source in shown
    assert "93.3%" in shown  # DeepSeek-V2, published and measured (93.34 % rounds to it)
    assert "7.3%" in shown  # V4-Flash against V3.2, as served
    assert "5.2×" in shown  # Gemma 3 27B's 52 local layers over 10 global


def test_presenter_mode_as_served_raises_nothing():
    at = open_page("axes", {"ax_storage": "served", "present": "1", "lang": "zh"})
    assert not at.exception, [e.value for e in at.exception]
