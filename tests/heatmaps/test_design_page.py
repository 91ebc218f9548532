"""Section 5 of the heatmaps page, the designs after MLA, through AppTest: the weights sent are the design layer's own
(a band, kept first tokens, a learned sink, a top-k, compressed entries), the sidebar's settings and the view's
choices are in the link, and the page stays within its budgets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.helpers import chart_bytes, chart_specs, no_exception, open_script, states

PAGE = Path(__file__).resolve().parents[2] / "pages" / "heatmaps.py"
ALL = "sliding,dsa,compressed"


def open_page(**params) -> AppTest:
    at = open_script(PAGE, params)
    no_exception(at)
    return at


def design_figure(at: AppTest) -> dict:
    return chart_specs(at)[-1]


def z_of(trace: dict) -> np.ndarray:
    return np.asarray(trace["z"], dtype=np.float64)


def band(length: int, window: int, sinks: int) -> np.ndarray:
    i, j = np.arange(length)[:, None], np.arange(length)[None]
    return (j <= i) & ((i - j < window) | (j < sinks))


def test_without_designs_chosen_the_section_says_where_to_choose_them():
    at = open_page(seq_len="32")
    assert len(chart_specs(at)) == 4
    assert any("Designs after MLA" in info.value for info in at.info)


def test_a_sliding_layers_band_and_kept_first_tokens_are_its_weights():
    at = open_page(design=ALL, hm_design="sliding", window="8", sinks="2", seq_len="32")
    z = z_of(design_figure(at)["data"][0])
    assert z.shape == (32, 32)
    assert np.array_equal(~np.isnan(z), band(32, 8, 2))
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-5)


def test_a_learned_sink_is_a_column_of_its_own_and_rows_sum_to_one_with_it():
    at = open_page(design=ALL, hm_design="sliding", hm_sink="learned", window="8", seq_len="32")
    trace = design_figure(at)["data"][0]
    z = z_of(trace)
    assert z.shape == (32, 33)
    assert trace["x"][-1] == "sink"
    assert np.array_equal(~np.isnan(z[:, :32]), band(32, 8, 0))
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-5)
    assert (z[:, 32] > 0).all()
    assert at.query_params["hm_sink"] == "learned"


def test_dsa_shows_the_indexer_scores_and_only_each_querys_top_k():
    at = open_page(design=ALL, hm_design="dsa", topk="4", seq_len="32")
    scores, weights = (z_of(trace) for trace in design_figure(at)["data"])
    assert np.array_equal(~np.isnan(scores), band(32, 32, 0))
    read = ~np.isnan(weights)
    assert read.sum(axis=1).tolist() == [min(i + 1, 4) for i in range(32)]
    for query in range(4, 32):  # the keys read are the query's 4 best scores
        assert set(np.flatnonzero(read[query])) == set(np.argsort(-np.nan_to_num(scores[query], nan=-np.inf))[:4])


def test_v4s_entries_are_labelled_by_the_tokens_they_pool_and_appear_every_m_tokens():
    at = open_page(design=ALL, hm_design="compressed", window="8", rate="4", seq_len="32")
    trace = design_figure(at)["data"][0]
    z = z_of(trace)
    assert trace["x"][32:] == [
        "⟨0–3⟩",
        "⟨4–7⟩",
        "⟨8–11⟩",
        "⟨12–15⟩",
        "⟨16–19⟩",
        "⟨20–23⟩",
        "⟨24–27⟩",
        "⟨28–31⟩",
        "sink",
    ]
    assert np.array_equal(~np.isnan(z[:, :32]), band(32, 8, 0))
    i, e = np.arange(32)[:, None], np.arange(8)[None]
    assert np.array_equal(~np.isnan(z[:, 32:40]), e < (i + 1) // 4)
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-5)  # the sink's column included
    caption = next(c.value for c in at.caption if "compressed entries" in c.value)
    assert states(caption, 4, 8), "a new entry every 4 tokens, 8 of them"


def test_a_layer_too_large_to_draw_says_so_and_sends_no_chart_for_it():
    at = open_page(design=ALL, hm_design="compressed", d_model="8192", heads="128", groups="128", latent="4096")
    assert any("Not computed" in info.value for info in at.info)


@pytest.mark.parametrize("design", ["sliding", "dsa", "compressed"])
def test_each_design_stays_within_the_payload_budget_at_its_longest(design):
    at = open_page(design=ALL, hm_design=design, seq_len="8192", window="64", topk="16", rate="2", d_model="1024")
    assert chart_bytes(at) <= 1_000_000
    assert z_of(design_figure(at)["data"][0]).shape[0] == 128
