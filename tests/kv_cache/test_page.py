"""The KV cache page through AppTest: what it plots is what the core's formulas give, for every preset and variant."""

from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attn_core import FORMER_NAMES, PRESETS, VARIANTS, bytes_per_element, kv_cache_bytes
from explorer.glossary import design_name
from explorer.kv_cache import link
from explorer.settings import DESIGNS, Settings
from tests.app.helpers import chart_bytes, chart_specs, no_exception, numbers, run_fragment, verbatim

REPO = Path(__file__).resolve().parents[2]
PAGE_FILE = str(REPO / "pages" / "kv_cache.py")
TIMEOUT = 240  # seconds: a run takes about a second, but the machine's two cores are shared
LARGEST = Settings(
    d_model=8192, heads=128, groups=8, latent=4096, rope_dim=64, seq_len=8192, batch=128, dtype="float32"
)


def open_page(query: dict[str, str]) -> AppTest:
    """The page as a link with these query parameters opens it."""
    at = AppTest.from_file(PAGE_FILE, default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def link_value(at, name: str) -> str:
    value = at.query_params[name]
    return value[-1] if isinstance(value, list) else value


def charts_by_title(at) -> dict[str, dict]:
    return {spec["layout"]["title"]["text"].replace("<br>", " "): spec for spec in chart_specs(at)}


def chart(at, starts: str) -> dict:
    matches = [spec for title, spec in charts_by_title(at).items() if title.startswith(starts)]
    assert len(matches) == 1, list(charts_by_title(at))
    return matches[0]


def elements_per_token(name: str, preset) -> int:
    """Numbers per token per layer, from a row's label and the model's config, by the notes' formulas."""
    attention, d_h, heads = preset.attention, preset.attention.head_dim, preset.attention.n_heads
    if name.endswith("as published (MLA)"):
        return attention.kv_lora_rank + attention.qk_rope_head_dim
    if name.endswith("as published (MHA)") or name == "as MHA" or name.endswith("(pitfall)"):
        return 2 * heads * d_h
    if name.endswith("as published (MQA)") or name == "as MQA":
        return 2 * d_h
    if name.endswith("as published (GQA)"):
        return 2 * attention.n_kv_heads * d_h
    if name.startswith("as GQA, "):
        return 2 * int(name.split()[2]) * d_h
    if name.startswith("as MLA, "):
        latent, rope = name.removeprefix("as MLA, latent ").split(" + rotary key ")
        return int(latent) + int(rope)
    raise AssertionError(name)


@pytest.mark.parametrize("model", PRESETS)
def test_each_preset_renders_and_its_whole_model_lines_equal_the_formula(model):
    settings = Settings(batch=4)
    at = open_page(settings.to_link() | {"kv_model": model, "kv_repeat": "1"})
    no_exception(at, nor_error=True)
    preset = PRESETS[model]
    spec = chart(at, f"{model}: KV cache of 4 sequences")
    lines = [trace for trace in spec["data"] if trace["mode"] == "lines"]
    assert len(lines) == (6 if preset.attention.variant != "mla" else 5)
    element = bytes_per_element(settings.dtype)
    for trace in lines:
        per_token = elements_per_token(trace["name"], preset) * element * preset.n_layers * 4
        for tokens, plotted in zip(trace["x"], trace["customdata"], strict=True):
            held = min(tokens, preset.sliding_window - 1 if preset.sliding_window else tokens)
            assert plotted == per_token * held, (trace["name"], tokens)
        measured = next(t for t in spec["data"] if t["name"] == f"{trace['name']} (measured)")
        assert measured["customdata"] == [
            per_token
            * min(preset.context_len, preset.sliding_window - 1 if preset.sliding_window else preset.context_len)
        ]
    assert preset.source in " ".join(c.value for c in at.caption)
    if preset.not_modelled:
        assert any(preset.not_modelled in c.value for c in at.caption)
    if preset.sliding_window:
        assert any(f"{preset.sliding_window:,}" in i.value for i in at.info)


@pytest.mark.parametrize(("model", "elements"), [("DeepSeek-V3", "576"), ("Llama 3 70B", f"{2 * 8 * 128:,}")])
def test_full_scale_numbers_per_token_per_layer_shown(model, elements):
    at = open_page(Settings().to_link() | {"kv_model": model})
    table = next(df.value for df in at.dataframe if "Numbers / token" in df.value.columns)
    assert table.iloc[0]["Numbers / token"] == elements


def test_deepseek_v2_shows_the_papers_2_25_groups():
    at = open_page(Settings().to_link() | {"kv_model": "DeepSeek-V2"})
    assert any({2.25, 32768} <= set(numbers(s.value)) for s in at.success), "2.25 groups, 32,768 numbers per token"


def test_the_notes_example_button_shows_8192_vs_640_numbers():
    at = open_page(Settings().to_link() | {"kv_model": "Mistral 7B"})
    at.button(key="kv_example").click().run()
    no_exception(at, nor_error=True)
    assert link_value(at, "kv_model") == "Llama 2 7B"
    sentence = next(m.value for m in at.markdown if m.value.startswith("As MHA"))
    assert "**8,192**" in sentence
    assert "**640**" in sentence
    assert "**12.8×**" in sentence


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_decodes_with_bytes_on_the_formula_and_outputs_on_the_full_recompute(variant):
    settings = Settings(variants=(variant,), batch=2, dtype="float16")
    at = open_page(settings.to_link() | {"kv_prompt": "7", "kv_steps": "9", "kv_step": "4"})
    no_exception(at, nor_error=True)
    cfg = settings.config(variant)
    spec = chart(at, "Bytes held after each step")
    measured = next(t for t in spec["data"] if t["name"] == variant.upper())
    formula = next(t for t in spec["data"] if t["name"] == f"{variant.upper()} formula")
    expected = [kv_cache_bytes(cfg, 2, 7 + step, "float16") for step in range(10)]
    assert measured["y"] == expected
    assert formula["y"] == expected
    assert "frames" not in spec  # Play is the page's: it moves the step, the log and the table together
    difference = chart(at, "Largest difference")
    diffs = difference["data"][0]["customdata"]
    assert len(diffs) == 10
    assert max(diffs) < 1e-5
    assert difference["layout"]["yaxis"]["exponentformat"] == "power"  # 10⁻⁶, not Plotly's SI "1µ"
    shown = at.dataframe[0].value
    assert float(shown.iloc[0]["max |Δ|"]) < 1e-5
    assert shown.iloc[0]["Tokens held"] == 11
    assert "Step 4:" in verbatim(at.main)[0]


def test_moving_the_step_reads_the_same_trace_and_prints_its_shapes():
    at = open_page(Settings().to_link() | {"kv_step": "0"})
    first = chart(at, "Bytes held after each step")["data"]
    at.slider(key=link.STEP.key).set_value(5).run()
    no_exception(at, nor_error=True)
    log = verbatim(at.main)[0]
    assert "GQA  Step 5: K cache shape: [1, 2, 17, 64], V cache shape: [1, 2, 17, 64]" in log
    assert "MLA  Step 5: c_kv cache shape: [1, 1, 17, 128], k_rope cache shape: [1, 1, 17, 32]" in log
    after = chart(at, "Bytes held after each step")["data"]
    assert [t["y"] for t in after[:-1]] == [t["y"] for t in first[:-1]]  # only the step marker moved
    assert after[-1]["x"] == [5, 5, 5, 5]
    assert link_value(at, "kv_step") == "5"


def test_the_share_box_shows_the_steps_link_drawn_by_the_fragment():
    """The step slider lives in a fragment, which draws the share box (explorer.share.shares_link) after every
    parameter the page writes: its link carries the step as the address bar does."""
    at = open_page(Settings().to_link() | {"kv_step": "3"})
    no_exception(at, nor_error=True)
    (shown,) = verbatim(at.sidebar)
    assert "kv_step=3" in shown
    at.slider(key=link.STEP.key).set_value(5).run()
    assert "kv_step=5" in verbatim(at.sidebar)[0]


def test_the_step_slider_reruns_its_fragment_alone_and_the_share_box_follows():
    """In a browser, moving the step (or ▶ Play's tick) reruns the step's fragment alone. That rerun raised
    StreamlitInvalidLayoutContextError, shown on the page, when it redrew the share box that only the page had drawn
    in the full run; now the fragment draws the box in every run, after the page's own parameters."""
    at = open_page(Settings().to_link() | {"kv_step": "3", "kv_model": "Mistral 7B"})
    at.slider(key=link.STEP.key).set_value(5)
    run_fragment(at, "kv_step")
    no_exception(at, nor_error=True)
    assert link_value(at, "kv_step") == "5"
    (shown,) = verbatim(at.sidebar)
    assert "kv_step=5" in shown
    assert "kv_model=Mistral+7B" in shown


def test_the_pitfall_toggle_measures_mha_sized_caches_for_grouped_variants():
    settings = Settings()
    at = open_page(settings.to_link() | {"kv_repeat": "1"})
    no_exception(at, nor_error=True)
    spec = chart(at, "Bytes held after each step")
    names = {t["name"] for t in spec["data"]}
    assert {"MQA repeated", "GQA repeated"} <= names
    assert "MLA repeated" not in names
    mha = next(t for t in spec["data"] if t["name"] == "MHA")["y"]
    for name in ("MQA repeated", "GQA repeated"):
        assert next(t for t in spec["data"] if t["name"] == name)["y"] == mha
    assert len([w for w in at.warning if "wasted" in w.value]) == 2
    assert max(chart(at, "Largest difference")["data"][-1]["customdata"]) < 1e-5


@pytest.mark.parametrize(("old", "new"), FORMER_NAMES.items())
def test_a_link_with_a_models_former_name_opens_the_same_model_silently(old, new):
    """Links shared before the presets took attn_core.published's names: same model, same numbers, no note, and
    the link rewritten with today's name."""
    before, today = (open_page(Settings().to_link() | {"kv_model": name}) for name in (old, new))
    no_exception(before, nor_error=True)
    assert link_value(before, "kv_model") == new
    assert not [w.value for w in before.warning if "kv_model" in w.value]
    tables = [[df.value.to_dict() for df in at.dataframe] for at in (before, today)]
    assert tables[0]
    assert tables[0] == tables[1]


def test_bad_link_values_warn_and_fall_back():
    at = open_page(
        Settings().to_link() | {"kv_model": "GPT-5", "kv_steps": "500", "kv_groups": "7", "kv_repeat": "maybe"}
    )
    no_exception(at, nor_error=True)
    warnings = " ".join(w.value for w in at.warning)
    assert "kv_model" in warnings
    assert "kv_steps" in warnings
    assert "kv_repeat" in warnings
    assert link_value(at, "kv_steps") == "64"


def test_largest_settings_render_within_the_payload_budget_and_say_what_is_not_traced():
    at = open_page(LARGEST.to_link() | {"kv_repeat": "1", "kv_model": "DeepSeek-V3", "kv_gpus": "16"})
    no_exception(at, nor_error=True)
    assert any("Not traced" in i.value for i in at.info)
    assert chart_bytes(at) < 1_000_000


def test_heaviest_traced_settings_stay_within_the_payload_budget():
    settings = Settings(d_model=256, heads=8, groups=2, batch=4)
    at = open_page(settings.to_link() | {"kv_repeat": "1", "kv_prompt": "64", "kv_steps": "64"})
    no_exception(at, nor_error=True)
    assert not any("Not traced" in i.value for i in at.info)
    assert chart_bytes(at) < 1_000_000


def test_gpt2_the_course_notes_cached_model_opens_with_its_own_what_if_groups():
    """GPT-2's 12 heads do not divide into the default 8 groups: the what-if starts at the divisor nearest 8, quietly,
    and its cache is 2 × 12 heads × 64 numbers per token per layer."""
    at = open_page(Settings().to_link() | {"kv_model": "GPT-2"})
    no_exception(at, nor_error=True)
    assert not [i.value for i in at.info if "kv_groups" in i.value]
    assert at.select_slider(key=link.GROUPS.key).value == 6
    table = next(df.value for df in at.dataframe if "Numbers / token" in df.value.columns)
    assert table.iloc[0]["Numbers / token"] == f"{2 * 12 * 64:,}"
    assert any("124 M parameters" in c.value for c in at.caption)


def step_shown(at) -> dict:
    """The step as every part of the page shows it: slider, printed log, table, chart markers, link."""
    markers = next(t for t in chart(at, "Bytes held after each step")["data"] if t["name"] == "at the step")
    return {
        "slider": at.slider(key=link.STEP.key).value,
        "log": int(verbatim(at.main)[0].split("Step ", 1)[1].split(":", 1)[0]),
        "table": int(at.dataframe[0].value.iloc[0]["Tokens held"]) - int(at.query_params["kv_prompt"]),
        "markers": markers["x"][0],
        "link": int(at.query_params["kv_step"]),
    }


def test_play_moves_the_step_slider_the_log_the_table_and_the_chart_together():
    at = open_page(Settings(variants=("gqa",)).to_link() | {"kv_prompt": "3", "kv_steps": "4", "kv_step": "4"})
    no_exception(at, nor_error=True)
    at.button(key="kv_play").click().run()  # at the last step: Play starts again from step 0
    no_exception(at, nor_error=True)
    assert set(step_shown(at).values()) == {0}
    assert at.button(key="kv_play").label.startswith("❚❚")
    seen = [0]
    deadline = time.monotonic() + TIMEOUT
    while seen[-1] < 4 and time.monotonic() < deadline:  # each run after a tick's time moves one step on
        at.run()
        no_exception(at, nor_error=True)
        shown = step_shown(at)
        assert len(set(shown.values())) == 1, shown  # every part of the page shows the same step
        if shown["slider"] != seen[-1]:
            seen.append(shown["slider"])
    assert seen == [0, 1, 2, 3, 4]
    assert at.button(key="kv_play").label.startswith("▶"), "Play stops at the last step"


def test_play_shows_the_start_step_first_on_a_slow_server(monkeypatch):
    """At load ~18 the click's own run took longer than a tick and Play began at step 1: the start step was never
    shown. The page is made slow here (0.7 s between the click's callback and the step's section, more than the
    0.64 s a tick waits); the click's run must still show step 0, and the next tick step 1."""
    from explorer.kv_cache import link as kv_link

    options = kv_link.group_options

    def slow(*args, **kwargs):
        time.sleep(0.7)  # stands for a loaded server's run, not a wait
        return options(*args, **kwargs)

    at = open_page(Settings(variants=("gqa",)).to_link() | {"kv_prompt": "3", "kv_steps": "4", "kv_step": "4"})
    monkeypatch.setattr(kv_link, "group_options", slow)
    at.button(key="kv_play").click().run()
    no_exception(at, nor_error=True)
    assert set(step_shown(at).values()) == {0}
    at.run()
    assert set(step_shown(at).values()) == {1}


def test_whole_model_chart_at_default_settings_shows_the_variants_apart():
    """#14 item 13: one sequence against an 80 GiB budget lay flat at zero, every variant on top of the others. On the
    log byte axis each line at the full context sits clearly apart (a visible share of the plot's height) from every
    line whose bytes differ, and the budget line is inside the plot."""
    at = open_page(Settings().to_link())
    no_exception(at, nor_error=True)
    spec = chart(at, "Llama 2 7B: KV cache of 1 sequence")
    yaxis = spec["layout"]["yaxis"]
    assert yaxis["type"] == "log"
    low, high = yaxis["range"]

    def height(value: float) -> float:  # 0 at the bottom of the plot, 1 at its top
        return (math.log10(value) - low) / (high - low)

    ends = {t["name"]: t["customdata"][-1] for t in spec["data"] if t["mode"] == "lines"}
    assert len(ends) == 5
    distinct = sorted(set(ends.values()))
    assert all(0.05 < height(b) < 1 for b in distinct)
    assert min(height(b) - height(a) for a, b in itertools.pairwise(distinct)) > 0.05
    budget = spec["layout"]["shapes"][0]["y0"]
    assert 0 < height(budget) <= 1
    assert all(text.endswith(("B", "KiB", "MiB", "GiB", "TiB")) for text in yaxis["ticktext"])  # never Plotly's "G"


@pytest.mark.parametrize("model", ["Llama 2 7B", "Mistral 7B"])
def test_whole_model_table_headers_are_short_and_their_help_says_what_they_count(model):
    """#14 item 13: "One sequence at 4,096 tokens, whole model" was clipped at 1400 px (nine columns of short
    numbers: a header is as wide as its cells). Headers stay short; the context and the layer count move into the
    column help."""
    at = open_page(Settings().to_link() | {"kv_model": model, "kv_repeat": "1"})
    no_exception(at, nor_error=True)
    preset = PRESETS[model]
    table = next(df for df in at.dataframe if "Numbers / token" in df.value.columns)
    assert max(len(str(name)) for name in table.value.columns) <= 26, list(table.value.columns)
    helps = {name: config.get("help", "") for name, config in json.loads(table.proto.columns).items()}
    held = min(preset.context_len, preset.sliding_window - 1 if preset.sliding_window else preset.context_len)
    assert f"{held:,} tokens" in helps["One sequence"]
    assert f"{preset.n_layers} layers" in helps["One sequence"]
    assert table.value.columns[0] == "Cache kept"
    assert table.value.columns[-1] == "One token leaves"


DESIGNED = Settings(
    d_model=64, heads=4, groups=2, latent=16, rope_dim=8, designs=DESIGNS, window=8, sinks=2, topk=8, rate=4, bits=4
)


def test_the_designs_decode_with_held_and_read_bytes_on_their_formulas():
    at = open_page(DESIGNED.to_link() | {"kv_prompt": "4", "kv_steps": "16"})
    no_exception(at, nor_error=True)
    spec = chart(at, "Held and read after each step")
    # a design's measured lines share its legend entry: held is solid, read dashed; each formula line is named
    measured = {
        (trace["legendgroup"], trace["line"]["dash"]): trace["y"]
        for trace in spec["data"]
        if trace.get("legendgroup") in DESIGNS and trace["mode"] == "lines+markers"
    }
    formulas = {trace["name"]: trace["y"] for trace in spec["data"] if trace["name"].endswith(" formula")}
    for name in DESIGNS:
        shown = design_name(name)
        for what, dash in (("held", "solid"), ("read", "dash")):
            assert measured[(name, dash)] == formulas[f"{shown} {what} formula"], (name, what)
    assert len(measured[("linear", "solid")]) == 17
    assert len(set(measured[("linear", "solid")])) == 1  # a fixed state
    table = next(df.value for df in at.dataframe if "Design" in df.value.columns)
    assert list(table["Agree"]) == ["✓"] * len(DESIGNS)
    assert chart_bytes(at) < 1_000_000


def test_without_designs_the_page_only_says_where_to_choose_them():
    at = open_page(replace(DESIGNED, designs=()).to_link() | {"kv_prompt": "4", "kv_steps": "4"})
    no_exception(at, nor_error=True)
    assert not any(title.startswith("Held and read") for title in charts_by_title(at))
    assert any("Choose designs after MLA" in c.value for c in at.caption)


def test_the_heaviest_designs_stay_within_the_payload_budget():
    settings = replace(DESIGNED, d_model=256, heads=8, groups=2, batch=4, topk=16, window=16)
    at = open_page(settings.to_link() | {"kv_repeat": "1", "kv_prompt": "64", "kv_steps": "64"})
    no_exception(at, nor_error=True)
    assert chart_bytes(at) < 1_000_000
