"""The head -> KV mapping page through AppTest: opened by a link, as a user would, through app.py's navigation."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from attn_core import decode_flops_per_token
from explorer.mapping import link as mapping_link
from explorer.probes.mapping import morph_configs
from explorer.settings import Settings
from tests.app.helpers import chart_payload, charts, decode, no_exception

from .references import random_settings, reads_by_gradient

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 240  # seconds; a run takes about a second, but the machine's two cores are shared

HEADS_CASES = {
    1: Settings(d_model=64, heads=1, groups=1, latent=16, rope_dim=8),
    8: Settings(),
    128: Settings(d_model=8192, heads=128, groups=8, latent=128, rope_dim=32, seq_len=8192, batch=4),
}


def open_mapping(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.switch_page("pages/mapping.py")
    return at.run()


def mapping_spec(at: AppTest, index: int = 0) -> dict:
    """The page's figures: 0 the mapping, 1 the fused q/k/v layouts (grouped variants)."""
    return decode(chart_payload(charts(at)[index])["figure"])


@pytest.mark.parametrize("variant", ["mha", "mqa", "gqa", "mla"])
@pytest.mark.parametrize("heads", HEADS_CASES)
def test_the_page_renders_every_variant_with_an_animated_figure(heads, variant):
    settings = HEADS_CASES[heads]
    at = open_mapping(settings.to_link() | {"map_variant": variant})
    no_exception(at, nor_error=True)
    assert at.title[0].value == "Head → KV mapping"
    spec = mapping_spec(at)
    steps = [key for key, _ in morph_configs(settings.d_model, heads, settings.latent, settings.rope_dim)]
    assert [frame["name"] for frame in spec["frames"]] == steps
    slider = spec["layout"]["sliders"][0]
    assert [step["args"][0] for step in slider["steps"]] == [[key] for key in steps]
    shown = {"gqa": "mha" if settings.groups == heads else "mqa" if settings.groups == 1 else f"gqa:{settings.groups}"}
    assert steps[slider["active"]] == shown.get(variant, variant)
    assert spec["data"][-1]["meta"]["key"] == steps[slider["active"]], "the figure opens on the chosen step"
    assert [b["label"] for b in spec["layout"]["updatemenus"][0]["buttons"]] == ["▶ Play", "❚❚ Pause"]
    assert len(spec["data"][-1]["x"]) == min(heads, 32)
    assert at.table, "the shapes along the path are shown"


@pytest.mark.parametrize("case", range(3))
def test_the_mapping_in_the_figure_is_the_one_autograd_reads_off_the_module(case):
    settings = random_settings(200 + case)
    at = open_mapping(settings.to_link() | {"map_variant": "gqa"})
    no_exception(at, nor_error=True)
    configs = dict(morph_configs(settings.d_model, settings.heads, settings.latent, settings.rope_dim))
    for frame in mapping_spec(at)["frames"]:
        meta = frame["data"][-1]["meta"]
        reference = reads_by_gradient(configs[frame["name"]], settings.seed)
        expected = [[s for s in range(reference.shape[0]) if reference[s, h]] for h in range(settings.heads)]
        assert meta["reads"] == expected, (settings, frame["name"])


def test_choosing_a_kv_head_highlights_its_readers_and_links_the_heatmaps_to_its_group():
    at = open_mapping(Settings().to_link() | {"map_variant": "gqa"})
    at.selectbox(key=mapping_link.MAP_STORE.key).select("kv1").run()
    no_exception(at, nor_error=True)
    query = mapping_spec(at)["data"][-1]
    assert [o == 1.0 for o in query["marker"]["opacity"]] == [h >= 4 for h in range(8)]  # 8 heads, 2 groups
    assert any("read by query heads **4–7**" in m.value for m in at.markdown)
    (link,) = at.get("page_link")
    assert link.proto.page == "heatmaps"
    params = parse_qs(link.proto.query_string)
    assert params["hm_variant"] == ["gqa"]
    assert params["hm_group"] == ["1"]
    assert params["heads"] == ["8"], "the heatmaps open on the same settings"
    assert params["groups"] == ["2"], "the heatmaps open on the same settings"
    assert at.query_params["map_store"] == "kv1", "the address bar is a link to this view"


def test_mla_links_the_heatmaps_to_every_head():
    at = open_mapping(Settings().to_link() | {"map_variant": "mla", "map_store": "c_kv"})
    no_exception(at, nor_error=True)
    (link,) = at.get("page_link")
    params = parse_qs(link.proto.query_string)
    assert params["hm_variant"] == ["mla"]
    assert params["hm_group"] == ["all"]
    assert at.selectbox(key=mapping_link.MAP_STORE.key).value == "c_kv"


def test_a_link_reopens_the_same_view():
    at = open_mapping(Settings().to_link() | {"map_variant": "mqa", "map_store": "kv0"})
    no_exception(at, nor_error=True)
    assert at.radio(key=mapping_link.MAP_VARIANT.key).value == "mqa"
    assert at.selectbox(key=mapping_link.MAP_STORE.key).value == "kv0"
    assert not at.warning


@pytest.mark.parametrize(("name", "value"), [("map_variant", "zzz"), ("map_store", "kv99"), ("map_store", "<script>")])
def test_a_bad_link_value_gives_a_warning_and_a_valid_view(name, value):
    at = open_mapping(Settings().to_link() | {name: value})
    no_exception(at, nor_error=True)
    assert any(name in w.value for w in at.warning)
    assert "<script>" not in " ".join(w.value for w in at.warning)
    assert charts(at)


def test_the_mla_section_shows_both_ways_with_their_difference_and_cost():
    settings = Settings()
    at = open_mapping(settings.to_link() | {"map_variant": "mla"})
    no_exception(at, nor_error=True)
    (metric,) = at.metric
    assert float(metric.value) <= 1e-5
    costs = at.table[-1].value
    cfg = settings.config("mla")
    naive = decode_flops_per_token(cfg, settings.seq_len, absorbed=False) / 1e6
    absorbed = decode_flops_per_token(cfg, settings.seq_len, absorbed=True) / 1e6
    column = f"FLOPs per token, your layer at {settings.seq_len:,} cached"
    assert list(costs[column]) == [f"{naive:,.2f} MFLOP", f"{absorbed:,.2f} MFLOP"]
    assert all(text.endswith(" ms") for text in costs.iloc[:, -1])


def test_the_gqa_shapes_table_reads_the_cache_as_stored():
    settings = Settings(batch=2, seq_len=16)
    at = open_mapping(settings.to_link() | {"map_variant": "gqa"})
    table = at.table[0].value.set_index("Step")
    assert table.loc["cache k, v", "Prefill"] == "[2, 2, 16, 64]"
    assert table.loc["cache k, v", "Decode 1 token"] == "[2, 2, 17, 64]"
    assert table.loc["k, v as each query head sees them", "Decode 1 token"] == "[2, 8, 17, 64]"


def test_at_the_largest_settings_the_chart_stays_under_a_megabyte():
    largest = Settings(
        d_model=8192, heads=128, groups=8, latent=4096, rope_dim=64, seq_len=8192, batch=128, dtype="float32"
    )
    at = open_mapping(largest.to_link() | {"map_variant": "mla", "map_store": "c_kv"})
    no_exception(at, nor_error=True)
    (chart,) = charts(at)
    assert len(chart.proto.bytes) < 1_000_000


# --- one fused weight for q, k and v --------------------------------------------------------------------------------
def grouped_layout_reference(heads: int, groups: int) -> list[str]:
    """Falcon's query_key_value order, written out from its definition: per group, its query heads, its key, its value."""
    size = heads // groups
    return [label for g in range(groups) for label in [*(f"q{g * size + i}" for i in range(size)), f"k{g}", f"v{g}"]]


@pytest.mark.parametrize("variant", ["mha", "mqa", "gqa"])
def test_the_fused_weight_section_shows_both_layouts_and_their_shapes(variant):
    settings = Settings()  # 8 heads, 2 groups, head_dim 64
    at = open_mapping(settings.to_link() | {"map_variant": variant})
    no_exception(at, nor_error=True)
    kv_heads = {"mha": 8, "mqa": 1, "gqa": 2}[variant]
    stacked, grouped = mapping_spec(at, 1)["data"]
    assert grouped["text"] == grouped_layout_reference(8, kv_heads)
    assert stacked["text"] == [f"q{h}" for h in range(8)] + [f"k{g}" for g in range(kv_heads)] + [
        f"v{g}" for g in range(kv_heads)
    ]
    rows = (8 + 2 * kv_heads) * 64
    assert grouped["base"][-1] + grouped["x"][-1] == rows
    table = at.table[-1].value
    assert table["Shape"].tolist()[:2] == [f"[{rows}, 512]", f"[1, 64, {rows}]"]
    assert table["Shape"].tolist()[3] == f"[1, 64, {kv_heads * 64}]"
    caption = " ".join(c.value for c in at.caption)
    assert "every block of the fused product equals the separate projection's head" in caption
    go.Figure(chart_payload(charts(at)[1])["figure"])  # built as a dict: Plotly validates it here


def test_mla_has_no_fused_weight_section():
    at = open_mapping(Settings().to_link() | {"map_variant": "mla"})
    no_exception(at, nor_error=True)
    assert "One weight for q, k and v" not in [h.value for h in at.subheader]


def test_every_part_of_a_play_frame_lands_together_and_the_page_names_what_it_shows():
    """No tweening (Plotly applies titles and colours only when a transition ends: half a step behind the bars);
    after Play the page says which variant its Show choice and shapes are for."""
    at = open_mapping(Settings(variants=("mha", "gqa", "mla")).to_link() | {"map_variant": "gqa"})
    no_exception(at, nor_error=True)
    spec = mapping_spec(at)
    play = spec["layout"]["updatemenus"][0]["buttons"][0]["args"][1]
    assert play["transition"]["duration"] == 0
    assert all(step["args"][1]["transition"]["duration"] == 0 for step in spec["layout"]["sliders"][0]["steps"])
    assert all(frame["layout"]["title"]["text"] for frame in spec["frames"]), "each frame carries its own title"
    assert any(h.value == "Shapes along the path: GQA" for h in at.subheader)
    assert any("stays on **GQA**" in c.value for c in at.caption)


@pytest.mark.parametrize("variant", ["gqa", "mla"])
def test_the_figures_speak_the_language_of_the_run_that_shows_them(variant):
    """The figures are cached: one made for a Chinese run is not handed to an English one, nor the other way."""
    link = Settings().to_link() | {"map_variant": variant}
    for lang in ("zh", "en", "zh"):
        at = open_mapping(link | {"lang": lang})
        no_exception(at, nor_error=True)
        for index in range(len(charts(at))):
            spec = mapping_spec(at, index)
            words = json.dumps(
                [
                    spec["layout"].get("xaxis", {}).get("title"),
                    spec["layout"].get("title"),
                    [trace.get("hovertemplate") for trace in spec["data"]],
                ],
                ensure_ascii=False,
            )
            has_chinese = any("\u4e00" <= ch <= "\u9fff" for ch in words)
            assert has_chinese == (lang == "zh"), (lang, index, words[:200])
