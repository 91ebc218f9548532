"""The attention heatmaps page through AppTest: what reaches the browser is the real layer's weights, at the default,
smallest and largest settings, within the payload budget, and a link reproduces the view."""

import base64
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attn_core import build_attention
from explorer.heatmaps import link
from explorer.probes.heatmaps import HeadSteps, InputSpec, make_inputs
from explorer.settings import Settings
from tests.app.helpers import chart_bytes, chart_payload, charts, no_exception, states, verbatim

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "heatmaps.py")
PAYLOAD_BUDGET = 1_000_000  # bytes of chart data per page (ARCHITECTURE.md, Budgets)
SMALLEST = {"d_model": "16", "heads": "1", "groups": "1", "latent": "4", "rope_dim": "2", "seq_len": "1", "batch": "1"}
LARGEST = {
    "variant": "mha,mqa,gqa,mla",
    "d_model": "8192",
    "heads": "128",
    "groups": "128",
    "latent": "4096",
    "rope_dim": "64",
    "seq_len": "8192",
    "batch": "128",
    "dtype": "float32",
}


def open_page(**params) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=600)
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    no_exception(at)
    return at


def figures(at: AppTest) -> list[dict]:
    """The page's figures as sent (arrays still encoded)."""
    return [chart_payload(chart)["figure"] for chart in charts(at)]


def decode(array) -> np.ndarray:
    """A Plotly typed array ({"dtype", "bdata", "shape"}) back to numpy; plain lists pass through."""
    if isinstance(array, dict):
        values = np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
        shape = [int(n) for n in str(array.get("shape", len(values))).split(",")]
        return values.reshape(shape)
    return np.asarray(array, dtype=np.float64)


def heatmaps(spec: dict) -> list[np.ndarray]:
    return [decode(trace["z"]) for trace in spec["data"] if trace["type"] == "heatmap"]


def layer_weights(
    settings: Settings,
    variant: str,
    *,
    n_tokens: int,
    scale: float = 2.0,
    causal: bool = True,
    rope: bool = True,
    tokens=None,
) -> np.ndarray:
    """return_weights of the layer built from the same seed, computed here without the page or its probe."""
    from dataclasses import replace

    cfg = replace(settings.config(variant), rope=rope)
    layer = build_attention(cfg, seed=settings.seed)
    spec = InputSpec(
        d_model=settings.d_model, seed=settings.seed, scale=scale, tokens=tokens, n_tokens=0 if tokens else n_tokens
    )
    with torch.no_grad():
        _, weights = layer(make_inputs(spec), return_weights=True, causal=causal)
    return weights[0].numpy()


def texts(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


# --- default settings -----------------------------------------------------------------------------------------------
def test_default_view_sends_the_real_layers_weights():
    at = open_page()
    specs = figures(at)
    assert len(specs) == 4  # every head, the comparison, inside one head, the decode step
    expected = layer_weights(Settings(), "gqa", n_tokens=64)
    grid = heatmaps(specs[0])
    assert len(grid) == 8
    for head, z in enumerate(grid):
        np.testing.assert_array_equal(z, expected[head])  # float32 as computed: not pooled, not rounded
        np.testing.assert_allclose(z.sum(-1), 1.0, atol=1e-6)
        assert np.all(z[np.triu_indices(64, k=1)] == 0)  # causal: nothing above the diagonal
    steps = heatmaps(specs[2])
    np.testing.assert_allclose(steps[6], expected[0], atol=1e-6)  # ④ softmax of head 0
    assert np.isnan(steps[5][np.triu_indices(64, k=1)]).all()  # ③ masked: −∞ sent as gaps
    decode_rows = heatmaps(specs[3])[0]
    np.testing.assert_allclose(decode_rows, expected[:, -1], atol=1e-6)
    assert chart_bytes(at) <= PAYLOAD_BUDGET


def test_every_figure_sent_is_valid_plotly():
    """The figures are built as plain dicts and handed over without Plotly's per-rerun validation: validate them here."""
    import plotly.graph_objects as go

    at = open_page(hm_input="text", hm_variant="mla")
    for spec in figures(at):
        go.Figure(spec)  # raises on any property Plotly does not know
    narrow = [payload["narrow"] for payload in map(chart_payload, charts(at)) if payload["narrow"]]
    assert narrow, "the grids of panels carry a phone's layout"
    for layout in narrow:
        go.Figure({"layout": layout["layout"]})  # the phone's layout too


def test_moving_the_sequence_length_within_the_same_window_recomputes_nothing(monkeypatch):
    from explorer.heatmaps import computed, figures

    at = open_page(d_model="64", heads="32", groups="4", latent="16", rope_dim="2", seq_len="384")
    assert states(texts(at), 362, 384), "the first 362 of 384 tokens are used"
    before = [chart.proto.bytes for chart in charts(at)]
    calls = []
    for module, name in (
        (computed, "explore_variant"),
        (computed, "compare_from_mha"),
        (figures, "grid_figure"),
        (figures, "steps_figure"),
        (figures, "decode_figure"),
    ):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    at.select_slider(key="setting_seq_len").set_value(512).run()
    at.radio(key="setting_dtype").set_value("float32").run()
    at.select_slider(key="setting_batch").set_value(4).run()
    no_exception(at)
    assert states(texts(at), 362, 512), "the first 362 of 512 tokens are used"
    assert calls == []  # the window is still 362 tokens: every pass and figure is read back, none recomputed
    assert [chart.proto.bytes for chart in charts(at)] == before
    table = at.table[-1].value  # the cache table follows the dtype without redrawing the decode figure
    assert "Bytes read per step in float32" in table.columns


def test_heads_are_laid_out_one_kv_group_per_row():
    at = open_page()
    layout = figures(at)[0]["layout"]
    titles = [a["text"].replace("<br>", " · ", 1) for a in layout["annotations"]]
    assert titles[:4] == [f"head {h} · KV 0" for h in range(4)]
    assert titles[4] == "head 4 · KV 1"
    top_row = layout["yaxis"]["domain"]
    assert [layout[f"yaxis{i}"]["domain"] for i in (2, 3, 4)] == [top_row] * 3  # heads 0-3 share a row
    assert layout["yaxis5"]["domain"][1] < top_row[0]  # head 4 (next group) starts the next row


def test_causal_off_and_rope_off_are_the_layers_weights_too():
    at = open_page(hm_causal="0", hm_rope="0", hm_variant="mla", hm_scale="4")
    expected = layer_weights(Settings(), "mla", n_tokens=64, scale=4.0, causal=False, rope=False)
    for head, z in enumerate(heatmaps(figures(at)[0])):
        np.testing.assert_array_equal(z, expected[head])
        assert np.all(z > 0)  # every query sees every key


def test_every_head_at_default_settings_reruns_cleanly():
    # Rerun timings are benchmarks/app.py's (against the budget): here only that each head's rerun works
    at = open_page()
    for head in (1, 2, 3, 4, 5, 6, 7):
        at.selectbox(key=link.HEAD.key).set_value(head)
        at.run()
        no_exception(at)


# --- smallest and largest settings ----------------------------------------------------------------------------------
def test_smallest_settings():
    at = open_page(**SMALLEST)
    specs = figures(at)
    grid = heatmaps(specs[0])
    assert [z.shape for z in grid] == [(1, 1)]
    assert grid[0][0, 0] == pytest.approx(1.0)  # one token attends to itself with all its weight
    assert chart_bytes(at) <= PAYLOAD_BUDGET


def test_largest_settings_stay_within_the_payload_budget():
    at = open_page(**LARGEST)
    assert chart_bytes(at) <= PAYLOAD_BUDGET
    notes = texts(at)
    assert states(notes, 128, 8192), "the first 128 of 8,192 tokens are used"
    assert states(notes, 0, 15, 128), "heads 0 to 15 of 128 are shown"
    assert "Only the shown heads are computed" in notes
    # no MHA of 4 x 8192^2 weights is built for section 2: the page says why and which width shows it
    assert states(notes, 8192, 128), "not computed at d_model 8,192 on 128 tokens"
    assert "Pick d_model 1,024 or less" in notes
    assert len(figures(at)) == 3
    grid = heatmaps(figures(at)[0])
    assert len(grid) == 16
    assert "mean of 2×2 blocks" in notes  # 128 × 128 weights per head, 64 × 64 cells sent
    np.testing.assert_allclose(np.stack(grid).sum(-1) * 2, 1.0, atol=1e-5)  # a block row: the mean of 2 rows' 2 keys
    # Reruns at these settings each work and stay within the budget (their times are benchmarks/app.py's)
    for kind, key, value in (
        ("selectbox", link.HEAD.key, 5),
        ("selectbox", link.HEAD.key, 0),
        ("select_slider", "setting_seq_len", 6144),
        ("selectbox", link.FIRST_HEAD.key, 16),
        ("select_slider", "setting_groups", 8),
    ):
        getattr(at, kind)(key=key).set_value(value).run()
        no_exception(at)
        assert chart_bytes(at) <= PAYLOAD_BUDGET, key
        if key == link.FIRST_HEAD.key:
            assert at.selectbox(key=link.HEAD.key).value == 16  # the head opened up moves onto the page shown


def test_a_page_of_heads_shows_those_heads_of_the_full_layer():
    """With more heads than fit, each page is computed on a layer of its heads alone; its maps are the full layer's."""
    settings = Settings(d_model=256, heads=32, groups=4, latent=16, rope_dim=8, seq_len=24)
    at = open_page(d_model="256", heads="32", groups="4", latent="16", rope_dim="8", seq_len="24", hm_from="16")
    expected = layer_weights(settings, "gqa", n_tokens=24)
    grid = heatmaps(figures(at)[0])
    titles = [a["text"].replace("<br>", " · ", 1) for a in figures(at)[0]["layout"]["annotations"]][:16]
    assert titles == [f"head {h} · KV {h // 8}" for h in range(16, 32)]  # 8 a row: drawn on two lines, so they fit
    for z, weights in zip(grid, expected[16:32], strict=True):
        np.testing.assert_allclose(z, weights, atol=1e-6)
    assert states(texts(at), 16, 31, 2), "measured on heads 16 to 31, whose cache holds 2 KV heads"


# --- downsampling ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["mean", "max"])
def test_long_sequences_are_pooled_by_blocks_and_say_so(how):
    settings = Settings(d_model=64, heads=2, groups=1, latent=16, rope_dim=8, seq_len=1024)
    at = open_page(
        d_model="64", heads="2", groups="1", latent="16", rope_dim="8", seq_len="1024", hm_pool=how, hm_variant="mqa"
    )
    assert f"{how} of 4×4 blocks" in texts(at)
    expected = layer_weights(settings, "mqa", n_tokens=512)  # the window: 512 of 1,024 tokens
    np.testing.assert_allclose(expected.sum(-1), 1.0, atol=1e-5)  # the un-pooled rows sum to 1
    blocks = expected.reshape(2, 128, 4, 128, 4)
    reference = blocks.mean(axis=(2, 4)) if how == "mean" else blocks.max(axis=(2, 4))
    grid = heatmaps(figures(at)[0])
    for head, z in enumerate(grid):
        assert z.shape == (128, 128)
        np.testing.assert_allclose(z, reference[head], rtol=1e-5, atol=1e-7)
    trace = figures(at)[0]["data"][0]
    assert f"{how} of a 4×4 block" in trace["hovertemplate"]
    assert chart_bytes(at) <= PAYLOAD_BUDGET


# --- links ----------------------------------------------------------------------------------------------------------
def test_the_link_sent_by_another_page_opens_that_variant_and_group():
    at = open_page(hm_variant="gqa", hm_group="1")
    titles = [a["text"].replace("<br>", " · ", 1) for a in figures(at)[0]["layout"]["annotations"]]
    assert titles == [f"head {h} · KV 1" for h in range(4, 8)]
    at = open_page(hm_variant="mqa", hm_group="all")
    assert len(heatmaps(figures(at)[0])) == 8
    assert at.query_params["hm_variant"] == "mqa"
    assert at.query_params["hm_group"] == "all"


def test_text_input_puts_tokens_on_the_axes():
    text = "the cat saw the cat"
    at = open_page(hm_input="text", hm_text=text, hm_tokens="words", hm_rope="0", hm_causal="0")
    spec = figures(at)[0]
    assert spec["data"][0]["x"] == ["0 the", "1 cat", "2 saw", "3 the", "4 cat"]
    expected = layer_weights(Settings(), "gqa", n_tokens=0, rope=False, causal=False, tokens=tuple(text.split()))
    z = heatmaps(spec)[0]
    np.testing.assert_array_equal(z, expected[0])
    # without RoPE or a mask, a repeated token is the same key: every query weighs both copies equally
    np.testing.assert_allclose(z[:, 0], z[:, 3], rtol=1e-6)
    at = open_page(hm_input="text", hm_text="a<b> c&d", hm_tokens="chars")
    assert figures(at)[0]["data"][0]["x"][1] == "1 ‹"  # markup characters cannot act on the figure


def test_chinese_text_becomes_one_token_per_character_and_the_page_shows_the_split():
    at = open_page(hm_input="text", hm_text="猫坐在垫子上 cat", hm_tokens="words", hm_causal="0")
    assert figures(at)[0]["data"][0]["x"] == ["0 猫", "1 坐", "2 在", "3 垫", "4 子", "5 上", "6 cat"]
    assert "Split into 7 tokens: `猫` `坐` `在` `垫` `子` `上` `cat`" in texts(at)


def test_bad_link_values_give_warnings_and_fallbacks_never_a_traceback():
    at = open_page(
        hm_variant="xyz",
        hm_group="99",
        hm_head="-1",
        hm_scale="abc",
        hm_causal="maybe",
        hm_pool="median",
        hm_input="audio",
        hm_from="7",
    )
    warnings = " ".join(w.value for w in at.warning)
    for name in ("hm_variant", "hm_group", "hm_head", "hm_scale", "hm_causal", "hm_pool", "hm_input"):
        assert name in warnings
    assert len(figures(at)) == 4


@pytest.mark.parametrize("text", ["\x00\x07 ctrl\tchars", "x" * 500, "", "   "])
def test_any_text_is_usable(text):
    at = open_page(hm_input="text", hm_text=text)
    assert len(figures(at)) == 4
    if len(text) > 200:
        assert len(at.text_input(key=link.TEXT.key).value) == 200


def test_same_link_same_pictures():
    params = {"hm_input": "text", "hm_text": "to be or not to be", "hm_variant": "mla", "hm_head": "3", "seed": "7"}
    first = [chart.proto.bytes for chart in charts(open_page(**params))]
    second = [chart.proto.bytes for chart in charts(open_page(**params))]
    assert first == second


@pytest.mark.parametrize(
    "params",
    [
        {"d_model": "1024", "heads": "16", "groups": "4", "latent": "64", "rope_dim": "32", "seq_len": "8192"},
        {
            "d_model": "256",
            "heads": "128",
            "groups": "8",
            "latent": "16",
            "rope_dim": "2",
            "seq_len": "8192",
            "hm_variant": "mla",
        },
        {
            "d_model": "512",
            "heads": "4",
            "groups": "4",
            "seq_len": "128",
            "hm_input": "text",
            "hm_tokens": "chars",
            "hm_text": "ab c" * 50,
        },
    ],
)
def test_heavy_views_stay_within_the_payload_budget(params):
    at = open_page(**params)
    assert chart_bytes(at) <= PAYLOAD_BUDGET
    grid = heatmaps(figures(at)[0])
    assert all(z.shape[0] <= 128 for z in grid)
    assert len(grid) <= 16


def test_text_longer_than_the_token_limit_is_cut_and_the_page_says_so():
    at = open_page(hm_input="text", hm_tokens="chars", hm_text="abcdefghij" * 15)
    assert states(texts(at), 128, 128, 150), "text is limited to 128 tokens: the first 128 of 150 are used"
    x = figures(at)[0]["data"][0]["x"]
    assert "mean of 2×2 blocks" in texts(at)
    assert x == list(range(0, 128, 2))


def _head_steps(d_k: int = 8) -> HeadSteps:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((6, d_k)).astype(np.float32) for _ in range(3))
    scores = q @ k.T
    scaled = scores / np.sqrt(d_k)
    masked = np.where(np.tril(np.ones((6, 6), bool)), scaled, -np.inf)
    weights = np.exp(masked - masked.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    return HeadSteps(q=q, k=k, v=v, scores=scores, scaled=scaled, masked=masked, weights=weights, out=weights @ v)


def test_inside_one_head_every_step_has_a_colour_scale_and_its_values_fill_it():
    """Issue 47: ② and ③ were a grey fade on ①'s ±40 scale. Each step has a named colour bar, and every panel's values
    reach its scale's end (none drawn pale on another's range): ① alone, ② and ③ on one (③ is ② with the mask)."""
    from explorer.heatmaps.figures import steps_figure

    steps = _head_steps()
    spec, _, _ = steps_figure(steps, causal=True, pool="mean", tokens=None, d_k=8)
    layout, traces = spec["layout"], spec["data"]
    axes = {trace["coloraxis"] for trace in traces}
    assert all(layout[axis].get("showscale", True) and layout[axis]["colorbar"]["title"]["text"] for axis in axes)
    assert traces[3]["coloraxis"] != traces[4]["coloraxis"], "QKᵀ and ×1/√d_k on scales of their own"
    assert traces[4]["coloraxis"] == traces[5]["coloraxis"], "scaled and masked on one scale"
    for trace, values in zip(
        traces, [steps.q, steps.k, steps.v, steps.scores, steps.scaled, steps.masked], strict=False
    ):
        axis = layout[trace["coloraxis"]]
        shared = [t for t in traces if t["coloraxis"] == trace["coloraxis"]]
        if len(shared) == 1:  # alone on its scale: its own values end it
            assert axis["cmax"] == pytest.approx(float(np.abs(values[np.isfinite(values)]).max()), rel=1e-6)
    assert layout["coloraxis4"]["cmax"] == pytest.approx(layout["coloraxis3"]["cmax"] / np.sqrt(8), rel=1e-5)
    assert all(layout[f"xaxis{'' if i == 0 else i + 1}"]["title"]["text"] for i in range(3, 8)), "steps 1-5 axes titled"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_inside_one_heads_caption_states_the_scores_range_before_and_after_scaling(lang):
    """The caption's ±① and ±② are the ends of their colour bars, and their ratio is √d_k (the formula)."""
    at = open_page(d_model="64", heads="2", groups="1", seq_len="16", lang=lang)
    layout = next(f["layout"] for f in figures(at) if "coloraxis4" in f["layout"])  # inside one head
    raw, scaled = (f"±{layout[axis]['cmax']:.3g}" for axis in ("coloraxis3", "coloraxis4"))
    caption = next(c.value for c in at.caption if raw in c.value)
    assert scaled in caption
    assert layout["coloraxis3"]["cmax"] / layout["coloraxis4"]["cmax"] == pytest.approx(np.sqrt(64 // 2), rel=1e-5)


def test_only_the_sidebars_variants_are_offered():
    """The sidebar's "Variants" choice limits the variant opened up; GQA, the page's default, moves quietly when left
    out (to the first variant chosen)."""
    at = open_page(variant="mha,mla")
    radio = at.radio(key=link.VARIANT.key)
    assert list(radio.options) == ["MHA", "MLA"]
    assert radio.value == "mha"
    assert not at.warning, [w.value for w in at.warning]  # the page's own default moved: nothing to report
    assert at.query_params["hm_variant"] == "mha"

    at = open_page(variant="mqa,gqa")
    assert list(at.radio(key=link.VARIANT.key).options) == ["MQA", "GQA"]
    assert at.radio(key=link.VARIANT.key).value == "gqa"


def test_a_link_asking_for_a_variant_left_out_falls_back_and_says_so():
    at = open_page(variant="mha,mqa", hm_variant="mla")
    assert at.radio(key=link.VARIANT.key).value == "mha"
    assert at.query_params["hm_variant"] == "mha"
    assert any("hm_variant" in w.value for w in at.warning), [w.value for w in at.warning]


@pytest.mark.parametrize("heads", ["1", "2"])
def test_the_decode_steps_colour_bar_keeps_a_readable_height(heads):
    at = open_page(d_model="16", heads=heads, groups="1", seq_len="8")
    layout = figures(at)[-1]["layout"]  # the decode step's figure comes last
    assert layout["xaxis"]["title"]["text"].startswith("cached key position")
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert plot_px >= 120, plot_px  # the colour bar spans the plot: at least a readable scale


def test_the_decode_steps_colour_bar_has_room_for_each_tick_and_a_phone_larger_labels():
    """Issue 47: five tick labels on a 50 px bar touched, and a phone drew the head names at 9 px."""
    from explorer.heatmaps.figures import DECODE_PHONE_TEXT, DECODE_TICK_GAP

    at = open_page(d_model="64", heads="8", groups="2", seq_len="64")
    sent = chart_payload(charts(at)[-1])  # the decode step's chart comes last
    layout = sent["figure"]["layout"]
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    colorbar = layout["coloraxis"]["colorbar"]
    assert colorbar["len"] == 1, "as tall as the plot"
    assert colorbar["title"]["side"] == "right", "its title beside it, not taking its length"
    assert 2 <= colorbar["nticks"] <= plot_px / DECODE_TICK_GAP
    phone = sent["narrow"]["layout"]
    assert phone["xaxis"]["tickfont"]["size"] == phone["yaxis"]["tickfont"]["size"] == DECODE_PHONE_TEXT >= 11


def test_a_titled_decode_chart_grows_on_a_phone_above_its_plot_only():
    """The lesson titles the decode chart (step 10): on a phone the layout is DECODE_PHONE_TITLE_ROOM taller, all of it
    above the plot; the flat colour bar stays as many px above the chart's foot, and nothing else changes."""
    from explorer.heatmaps import computed, figures

    settings = Settings(variants=("mla",), d_model=128, heads=4, groups=4, latent=32, rope_dim=8, seq_len=8)
    cfg = computed.layer_config(settings, "mla", True)
    spec = computed.make_input_spec(settings, kind="random", text="", tokens="words", scale="1").spec
    plain, titled = (
        figures.decode_chart(cfg, 0, spec, True, range(4), None, "mean", "en", titled=t).spec for t in (False, True)
    )
    assert titled["layout"] == plain["layout"], "the wide chart as it was"
    phone, room = dict(plain["narrow"]["layout"]), figures.DECODE_PHONE_TITLE_ROOM
    grown = dict(titled["narrow"]["layout"])
    assert grown.pop("height") == phone.pop("height") + room
    assert grown.pop("margin") == phone.pop("margin") | {"t": plain["narrow"]["layout"]["margin"]["t"] + room}
    bar, grown_bar = phone.pop("coloraxis")["colorbar"], grown.pop("coloraxis")["colorbar"]
    foot = bar.pop("y") * plain["narrow"]["layout"]["height"]  # px above the chart's foot
    assert grown_bar.pop("y") * titled["narrow"]["layout"]["height"] == pytest.approx(foot)
    assert grown_bar == bar
    assert grown == phone


@pytest.mark.parametrize(("lang", "said"), [("en", "cannot be built"), ("zh", "无法构建")])
def test_a_layer_the_core_refuses_is_a_message_in_the_pages_language(monkeypatch, lang, said):
    """The settings are snapped before any layer is built, so the core refusing one is a defect; should it happen,
    the page says so in its reader's language and shows the core's reason as the core's words, not a traceback."""
    from explorer.heatmaps import figures

    reason = "n_heads=6 is not divisible by n_kv_heads=4."

    def refused(*_args, **_kwargs):
        raise ValueError(reason)

    monkeypatch.setattr(figures, "heads_chart", refused)
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params["lang"] = lang
    at.run()
    no_exception(at)
    (error,) = [e.value for e in at.error]
    assert said in error
    assert reason not in error
    assert reason in verbatim(at.main)
