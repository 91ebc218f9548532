"""MLA's two stores are named as the course notes write them (c^KV, k^R; explorer.glossary) wherever the mapping
chart shows them, on the mapping page and on lesson step 9, in both languages; the link keeps their code names."""

from __future__ import annotations

import pytest

from explorer.glossary import SYMBOLS
from explorer.i18n import speaking
from explorer.lesson import steps
from explorer.mapping import frames as mapping_frames
from explorer.mapping import gif as mapping_gif
from explorer.mapping import link as mapping_link
from explorer.probes.mapping import read_morph
from explorer.settings import Settings
from tests.app.helpers import chart_specs, no_exception, open_page

from .test_figure import SETTINGS, kv_trace

CODE_NAMES = ("c_kv", "k_rope")
# c^{KV} and k^R as Plotly's text raises them: the glossary's LaTeX, written out by hand.
DRAWN = {"c_kv": "c<sup>KV</sup>", "k_rope": "k<sup>R</sup>"}
NOTES = {"c_kv": r"c^{KV}", "k_rope": r"k^R"}


def shown_strings(node: object, key: str = "") -> list[str]:
    """Every string of a chart's spec a reader can see: labels, hover, titles, notes. The query trace's meta (the
    probe's mapping for the tests, by the code's names) is never drawn."""
    if key == "meta":
        return []
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, value in node.items() for s in shown_strings(value, k)]
    if isinstance(node, list | tuple):
        return [s for value in node for s in shown_strings(value, key)]
    return []


def code_names_in(spec: dict) -> list[str]:
    return [s for s in shown_strings(spec) if any(name in s for name in CODE_NAMES)]


@pytest.fixture(scope="module")
def frames():
    s = SETTINGS
    return read_morph(s.d_model, s.heads, s.latent, s.rope_dim, seed=s.seed)


def test_the_stores_symbols_are_the_glossarys():
    glossary = {symbol for symbol, _meaning in SYMBOLS}
    assert mapping_frames.STORE_SYMBOLS == NOTES
    assert set(NOTES.values()) <= glossary
    assert {name: mapping_frames.store_symbol(name) for name in CODE_NAMES} == DRAWN
    assert [mapping_frames.store_symbol(name, html=False) for name in CODE_NAMES] == ["cᴷⱽ", "kᴿ"]


def test_lesson_step_9_writes_the_stores_as_the_chart_names_them():
    (rope,) = [step for step in steps.STEPS if step.key == "rope"]
    assert steps.STEPS.index(rope) == 8, "step 9"
    assert "$k^R$" in rope.text
    assert "$c^{KV}$" in rope.lead


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_mapping_chart_names_mlas_stores_by_their_symbols(frames, lang):
    from explorer.mapping import figures as mapping_figures

    with speaking(lang):
        spec = mapping_figures.mapping_spec(frames, len(frames) - 1, SETTINGS, "k_rope")
    assert code_names_in(spec) == []
    mla = spec["frames"][-1]
    assert kv_trace(mla["data"])["text"] == [DRAWN["c_kv"], DRAWN["k_rope"]]
    assert kv_trace(mla["data"])["textposition"] == ["inside", "outside"], "the rotary sliver's name above it"
    assert all(DRAWN["c_kv"] in h and DRAWN["k_rope"] in h for h in mla["data"][-1]["hovertext"])
    assert all(drawn in mla["layout"]["title"]["text"] for drawn in DRAWN.values())
    assert kv_trace(spec["data"])["marker"]["opacity"] == [0.25, 1.0], "map_store=k_rope still lights the rotary key"


def test_the_gif_draws_the_symbols_without_markup(frames, monkeypatch):
    drawn: list[str] = []
    monkeypatch.setattr(mapping_gif, "text", lambda draw, xy, words, *args: drawn.append(words))
    with speaking("en"):
        mapping_gif.morph_images(frames[-1:], SETTINGS)
    assert not [words for words in drawn if "<" in words or any(name in words for name in CODE_NAMES)]
    assert "cKV" in drawn, "the latent's name inside its bar"
    assert any("cKV" in words and "kR" in words for words in drawn), "the title"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_step_9s_chart_names_the_stores_as_its_text_does(lang):
    at = open_page("lesson", {"step": "9", "lang": lang})
    no_exception(at, nor_error=True)
    (spec,) = chart_specs(at)
    assert code_names_in(spec) == []
    assert kv_trace(spec["data"])["text"] == [DRAWN["c_kv"], DRAWN["k_rope"]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_old_link_to_the_rotary_key_opens_the_same_view_named_by_its_symbol(lang):
    at = open_page("mapping", Settings().to_link() | {"map_variant": "mla", "map_store": "k_rope", "lang": lang})
    no_exception(at, nor_error=True)
    assert at.query_params["map_store"] == "k_rope", "the link keeps the code's name"
    box = at.selectbox(key=mapping_link.MAP_STORE.key)
    assert box.value == "k_rope"
    with speaking(lang):
        assert box.options == [mapping_frames.store_label(n, html=False) for n in ("none", *CODE_NAMES)]
    assert all("_" not in option for option in box.options)
    (spec, *_others) = chart_specs(at)
    assert code_names_in(spec) == []
    assert kv_trace(spec["data"])["marker"]["opacity"] == [0.25, 1.0]
    assert any("kᴿ" in m.value for m in at.markdown), "who reads it, said with its symbol"
