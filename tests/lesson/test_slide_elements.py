"""Every element on a lesson step is explained or gone, and one layer runs through the chapter (issue #37, item 4):
the cache steps draw no preallocated staircase (nothing explains it), the pitfall's rings are drawn large enough to
be seen, the absorption step states its comparison with the full pass on the chart and outlines no head, the
choosing step has no control that would change nothing shown, and steps 3-9 are drawn at one layer."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.heatmaps import computed as heatmaps_computed
from explorer.heatmaps import figures as heatmaps_figures
from explorer.i18n import difference, set_language, speaking
from explorer.kv_cache import computed as kv_cache_computed
from explorer.kv_cache import figures as kv_cache_figures
from explorer.lesson import views
from explorer.sent import decode
from tests.app.helpers import no_exception, open_page

# The steps from the cache to the shared rotary key: the gqa step at each of its group counts.
ONE_LAYER_STEPS = ("cache", "mqa", "pitfall", "rope")


@pytest.fixture(autouse=True)
def english():
    set_language("en")


def test_steps_3_to_9_are_drawn_at_one_layer_so_the_cache_per_token_never_changes():
    shown = [views.STEP_VIEWS[key]("en").settings for key in ONE_LAYER_STEPS]
    shown += [views.STEP_VIEWS["gqa"]("en", g).settings for g in views.GROUPS.options]
    layers = {(s.d_model, s.heads, s.head_dim, s.dtype) for s in shown}
    assert len(layers) == 1, f"the chapter changes its layer: {layers}"


def test_the_cache_step_quotes_mhas_bytes_per_token_of_that_layer():
    caption = views.STEP_VIEWS["cache"]("en").caption
    layer = views.LAYER
    per_token = 2 * layer.heads * layer.head_dim * 2  # K and V, h heads of d_h numbers, 2 bytes in float16
    assert f"adds {per_token / 1024:.2f} KiB" in caption


@pytest.mark.parametrize("key", ["cache", "pitfall"])
def test_the_cache_steps_draw_no_preallocated_staircase(key):
    spec = views.STEP_VIEWS[key]("en").spec
    assert spec is not None
    assert [t["name"] for t in spec["data"] if t.get("line", {}).get("shape") == "hv"] == []


def test_the_kv_cache_page_still_draws_the_preallocated_capacity():
    traces, _skipped = kv_cache_computed.traces_for(views.DECODE, views.PROMPT_TOKENS, 4, False)
    spec = kv_cache_figures.cache_size_figure(traces, 4)
    assert [t["y"] for t in spec["data"] if t.get("line", {}).get("shape") == "hv"] == [traces["MHA"].capacity_nbytes]


def test_the_pitfalls_rings_are_wider_than_the_points_they_ring():
    spec = views.STEP_VIEWS["pitfall"]("en").spec
    assert spec is not None
    rings = [t for t in spec["data"] if t.get("marker", {}).get("symbol") == "circle-open"]
    points = [t for t in spec["data"] if t.get("name") == "MHA" and "marker" in t]
    assert rings
    assert points
    assert rings[0]["marker"]["size"] >= 2 * points[0]["marker"]["size"]


def test_the_absorption_step_states_its_difference_from_the_full_pass_on_the_chart():
    settings = views.LATENT_HEAD
    cfg = heatmaps_computed.layer_config(settings, "mla", True)
    spec = heatmaps_computed.make_input_spec(
        settings, kind="text", text=views.SENTENCES["en"], tokens="words", scale=views.SCALE
    ).spec
    heads = heatmaps_computed.head_pages(settings.heads, cfg.group_size, "all")[0]
    facts = heatmaps_figures.decode_chart(cfg, settings.seed, spec, True, heads, None, views.POOL, "en").facts
    shown = views.STEP_VIEWS["absorb"]("en").spec
    assert shown is not None
    assert difference(facts.decode_error) in shown["layout"]["title"]["text"]
    # on a phone too (the chart's narrow layout), where presenter mode folds the caption away as a slide does
    assert shown["narrow"]["layout"]["title"] == shown["layout"]["title"]
    assert not shown["layout"].get("shapes"), "no head outlined: nothing on the step explains an outline"


def test_the_choosing_step_has_no_control_that_changes_nothing_shown():
    at = open_page("lesson", {"step": "11", "present": "1"})
    no_exception(at)
    assert not at.select_slider
    assert not at.slider


@pytest.mark.parametrize("key", ["sdpa", "heads", "absorb"])
def test_the_sentence_steps_show_the_same_numbers_in_both_languages(key):
    """Issue #47: the Chinese sentence translates the English one token for token and is drawn with its numbers."""

    def drawn(lang: str) -> dict | None:
        with speaking(lang):
            return views.STEP_VIEWS[key](lang).spec

    english, chinese = drawn("en"), drawn("zh")
    assert english is not None
    assert chinese is not None
    arrays = [
        (decode(a[field]), decode(b[field]))
        for a, b in zip(english["data"], chinese["data"], strict=True)
        for field in ("z", "y")
        if field in a and a.get("type") in ("heatmap", "bar", None)
    ]
    numeric = [(a, b) for a, b in arrays if np.asarray(a).dtype.kind == "f"]
    assert numeric, "the step draws numbers"
    for a, b in numeric:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    labels = [str(trace.get("y")) + str(trace.get("x")) for trace in chinese["data"]]
    assert any("吃" in label for label in labels), "each language's own words label the rows"


def test_the_mla_step_draws_no_line_under_another():
    """Issue #47: step 8's "as MHA" entry was invisible, its line under Llama-2-7B's published (MHA) one."""
    spec = views.STEP_VIEWS["mla"]("en").spec
    assert spec is not None
    lines = [(t["name"], tuple(decode(t["y"]))) for t in spec["data"] if t.get("mode") == "lines" and t.get("name")]
    drawn = [values for _name, values in lines]
    assert len(lines) >= 4, lines
    assert len(set(drawn)) == len(drawn), [name for name, values in lines if drawn.count(values) > 1]
