"""The lesson through AppTest: every step opens from its link in both languages with its one chart, "explore this"
opens the full page at the step's own settings, a garbled step falls back with a note, the buttons move the step
and the link, and the slides' GIFs decode to the animation's frames."""

from __future__ import annotations

import io
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from PIL import Image, ImageChops

from attn_core import PRESETS
from explorer import gif
from explorer.i18n import _, fmt, set_language
from explorer.lesson import chapters, steps, views
from explorer.present import SLIDE_FONT_SCALE
from explorer.settings import LINK_NAMES, Settings
from tests.app.conftest import media  # noqa: F401  (the fixture: what a download button serves)
from tests.app.helpers import (
    chart_payload,
    chart_specs,
    charts,
    link_warnings,
    no_exception,
    open_page,
    run_fragment,
    sidebar_settings,
    verbatim,
)

STEPS = range(1, len(steps.STEPS) + 1)
NEEDS_MODEL = {"trained", "sinks", "bits"}  # the trained model may be absent: the step then says how to install it
# A file or module of this repository in a caption a class reads (issue 47: "attn_core.quant",
# "assets/window_table.json", "attn_core.describe_model"): a teacher's words say what was measured, not where.
REPOSITORY_NAMES = re.compile(r"\b(?:attn_core|explorer|benchmarks|assets|tests)[./]\w|\w\.py\b")


def model_installed() -> bool:
    from attn_core.pretrained import ModelNotInstalled, load_pretrained

    try:
        load_pretrained()
    except ModelNotInstalled:
        return False
    return True


def explore_link(at) -> tuple[str, dict[str, str]]:
    """The "explore this" button's target: the page's URL path and the link's query."""
    (button,) = at.get("link_button")
    url = urlsplit(button.proto.url)
    return url.path, dict(parse_qsl(url.query))


def step_key(number: int) -> str:
    return steps.STEPS[number - 1].key


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("number", STEPS)
def test_every_step_opens_from_its_link_with_its_chart(number, lang):
    at = open_page("lesson", {"step": str(number), "lang": lang})
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert at.query_params["step"] == str(number)
    assert at.query_params["lang"] == lang
    assert at.selectbox(key=steps.STEP.key).value == number
    if step_key(number) in NEEDS_MODEL and not model_installed():
        assert any("not installed" in w.value or "未安装" in w.value for w in at.warning)
        return
    drawn = charts(at)
    assert len(drawn) == 1, "one live chart a step"
    assert drawn[0].proto.id
    assert "lesson-" in drawn[0].proto.id
    assert chart_specs(at)[0]["data"], "the chart holds data"
    assert chart_payload(drawn[0])["config"]["toImageButtonOptions"]["scale"] == 2, "its toolbar saves a 2x PNG"
    assert at.expander, "the answer is folded away"
    named = [c.value for c in at.caption if REPOSITORY_NAMES.search(c.value)]
    assert not named, f"a caption names the repository's files: {named}"


@pytest.mark.parametrize("number", STEPS)
def test_explore_this_opens_the_page_at_the_steps_own_settings(number):
    if step_key(number) in NEEDS_MODEL and not model_installed():
        pytest.skip("the trained model is not installed")
    at = open_page("lesson", {"step": str(number), "lang": "zh"})
    path, query = explore_link(at)
    shown = chapters.STEP_VIEWS[step_key(number)]
    assert query["lang"] == "zh"
    opened = open_page(path, query)
    no_exception(opened)
    assert link_warnings(opened) == [], "the step's settings are valid as they are"
    expected = Settings(
        **{
            name: type(getattr(Settings(), name))(query[name])
            for name in ("d_model", "heads", "groups", "latent", "rope_dim", "seq_len", "batch", "seed")
        },
        variants=tuple(query["variant"].split(",")),
        dtype=query["dtype"],
    )
    assert sidebar_settings(opened) == expected
    # every view value the link carries is what the opened page shows, and stays in its link
    for name, value in query.items():
        if name not in (*LINK_NAMES, "v"):
            assert opened.query_params[name] == value, (name, value, opened.query_params[name])
    assert callable(shown)


def test_the_steps_own_settings_reach_the_explore_link():
    at = open_page("lesson", {"step": "5", "ls_groups": "4"})
    path, query = explore_link(at)
    assert path == "mapping"
    assert (query["groups"], query["heads"], query["map_variant"]) == ("4", "8", "gqa")
    assert at.query_params["ls_groups"] == "4", "the step's control is in the lesson's link"


@pytest.mark.parametrize("garbled", ["banana", "", "4.5", "-1e9"])
def test_a_garbled_step_falls_back_to_step_one_with_a_note(garbled):
    at = open_page("lesson", {"step": garbled})
    no_exception(at)
    assert at.selectbox(key=steps.STEP.key).value == 1
    assert at.query_params["step"] == "1"
    assert any(w.value.startswith("step:") for w in at.warning), [w.value for w in at.warning]


def test_a_step_past_the_end_opens_the_last_with_a_note():
    at = open_page("lesson", {"step": "99"})
    assert at.selectbox(key=steps.STEP.key).value == len(steps.STEPS)
    assert any(w.value.startswith("step:") for w in at.warning)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_bad_step_on_a_slide_is_said_on_the_slide_not_in_its_fold(lang):
    """In presenter mode the step menu is folded away: its note came folded with it, and step 20 opened silently."""
    at = open_page("lesson", {"step": "99", "present": "1", "lang": lang})
    no_exception(at)
    assert at.selectbox(key=steps.STEP.key).value == len(steps.STEPS)
    folded = [w.value for fold in at.expander for w in fold.warning]
    shown = [w.value for w in at.warning if w.value not in folded]
    assert any("step" in note and "99" in note for note in shown), (shown, folded)
    if lang == "zh":
        assert any("step=99" in note for note in shown), "the link's own text, not an English word in a sentence"


def test_next_and_previous_move_the_step_and_the_link():
    at = open_page("lesson", {"step": "1"})
    assert at.button(key="lesson_previous").disabled
    at.button(key="lesson_next").click().run()
    assert at.selectbox(key=steps.STEP.key).value == 2
    assert at.query_params["step"] == "2"
    at.button(key="lesson_previous").click().run()
    assert at.query_params["step"] == "1"
    last = open_page("lesson", {"step": str(len(steps.STEPS))})
    assert last.button(key="lesson_next").disabled


@pytest.mark.parametrize(("number", "lang"), [(4, "en"), (3, "zh"), (7, "en")])
def test_the_slides_gif_decodes_to_the_animations_frames(number, lang, media):  # noqa: F811
    at = open_page("lesson", {"step": str(number), "lang": lang})
    (button,) = [b for b in at.get("download_button") if b.proto.id and "gif_" in b.proto.id]
    shown = chapters.STEP_VIEWS[step_key(number)]
    frames = shown(lang).animation.frames
    image = Image.open(io.BytesIO(media.content(button)))
    assert image.format == "GIF"
    assert image.n_frames == frames
    assert image.size == gif.SIZE
    image.seek(0)
    first = image.convert("RGB")
    image.seek(image.n_frames - 1)
    last = image.convert("RGB")
    assert ImageChops.difference(first, last).getbbox() is not None, "the first and last frames differ"


@pytest.mark.parametrize("number", [4, 5])
def test_presenter_mode_draws_the_steps_chart_as_a_slide_and_stays_in_the_link(number):
    """A slide's chart: fonts SLIDE_FONT_SCALE times their size and the height the slide leaves it (less where the
    step has a control); tests/browser/test_lesson_slides.py measures the slide on the screen."""
    plain = open_page("lesson", {"step": str(number)})
    present = open_page("lesson", {"step": str(number), "present": "1"})
    no_exception(present)
    assert present.query_params["present"] == "1"
    base = chart_payload(charts(plain)[0])["figure"]["layout"]
    big = chart_payload(charts(present)[0])["figure"]["layout"]
    scale = SLIDE_FONT_SCALE
    assert big["template"]["layout"]["font"]["size"] == scale * base["template"]["layout"]["font"]["size"]
    assert big["height"] == views.slide_height(step_key(number))
    assert views.slide_height("gqa") < views.slide_height("mqa"), "step 5's control takes room from its chart"
    _path, query = explore_link(present)
    assert query["present"] == "1", "explore this keeps presenter mode"


def test_presenter_mode_shows_the_steps_few_sentences_and_folds_the_rest():
    at = open_page("lesson", {"step": "3", "present": "1"})
    step = steps.STEPS[2]
    shown = [m.value for m in at.markdown]
    assert shown.index(step.lead) < shown.index(step.text), "the few sentences on the slide, the whole text below"
    assert at.expander[0].label == "Answer"
    assert step.text in [m.value for m in at.expander[1].markdown]


def test_presenter_mode_works_on_every_page():
    for page in ("overview", "mapping", "heatmaps", "kv_cache", "masks"):
        at = open_page(page, {"present": "1"} | Settings(seq_len=16).to_link())
        no_exception(at)
        assert at.query_params["present"] == "1", page
        layout = chart_payload(charts(at)[0])["figure"]["layout"]
        assert layout["template"]["layout"]["font"]["size"] == 24, page


@pytest.mark.parametrize("number", STEPS)
def test_every_steps_settings_are_valid_as_they_are(number):
    from explorer.i18n import set_language
    from explorer.settings import from_link

    if step_key(number) in NEEDS_MODEL and not model_installed():
        pytest.skip("the trained model is not installed")
    set_language("en")
    control = {"gqa": (views.GROUPS.default,)}.get(step_key(number), ())
    shown = chapters.STEP_VIEWS[step_key(number)]("en", *control)
    link = {name: [value] for name, value in shown.settings.to_link().items()}
    assert from_link(link) == (shown.settings, []), "a link to the step's settings opens them unchanged"


@pytest.mark.parametrize("number", STEPS)
def test_every_step_speaks_one_language(number):
    """tests/i18n opens the lesson at its first step; every step's words are checked here, in both languages."""
    from tests.i18n.test_one_language import shown
    from tests.i18n.visible import CJK, english_words

    chinese = open_page("lesson", {"step": str(number), "lang": "zh"})
    names = frozenset(LINK_NAMES) | frozenset(chinese.query_params)
    left = {text: words for text in shown(chinese) if (words := english_words(text, names))}
    assert left == {}, f"step {number} at lang=zh shows English: {left}"
    english = open_page("lesson", {"step": str(number), "lang": "en"})
    assert [text for text in shown(english) if CJK.search(text)] == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_mla_steps_numbers_are_the_formulas_for_the_notes_model(lang):
    """What the MLA step quotes (the notes' 8192 vs 640) is computed, not written in: 2·h·d_h numbers per token per
    layer for MHA, d_c + d_h^R for MLA, read off the preset's own configuration."""
    attention = PRESETS[views.NOTES_MODEL].attention
    mha = 2 * attention.n_heads * attention.head_dim
    mla = views.NOTES_LATENT + views.NOTES_ROPE
    number = next(i for i, step in enumerate(steps.STEPS, 1) if step.key == "mla")
    at = open_page("lesson", {"step": str(number), "lang": lang})
    text = " ".join(m.value for m in at.markdown)
    set_language(lang)
    try:
        quoted = [fmt(mha), fmt(mla), fmt(mha / mla, 1), fmt(mla / (2 * attention.head_dim), 1)]
    finally:
        set_language("en")
    for figure in quoted:  # 8,192; 640; 12.8 (times smaller); 2.5 (groups)
        assert figure in text, (figure, text)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_healing_steps_answer_quotes_the_stored_tables(lang):
    """The closest healed conversion and its perplexity before healing, as the stored JSON tables say (read here
    directly, not through explorer.lab), and the step opens on the lab's close-up of the healed points."""
    import json

    from explorer.lab import stored as lab_stored

    healed = json.loads(lab_stored.HEAL_TABLE_PATH.read_text(encoding="utf-8"))["rows"]
    converted = {row["key"]: row for row in json.loads(lab_stored.TABLE_PATH.read_text(encoding="utf-8"))["rows"]}
    best = min(healed, key=lambda row: row["perplexity_after"])
    number = next(i for i, step in enumerate(steps.STEPS, 1) if step.key == "healed")  # the first chapter's last
    at = open_page("lesson", {"step": str(number), "lang": lang})
    no_exception(at)
    answer = at.expander[0].markdown[0].value
    assert f"{best['perplexity_after']:,.2f}" in answer
    assert f"{converted[best['key']]['perplexity']:,.2f}" in answer
    step_chart, lab_chart = chart_specs(at)[0], chart_specs(open_page("lab", {"lang": lang}))[1]
    assert step_chart["data"] == lab_chart["data"]
    lab_layout = {key: value for key, value in lab_chart["layout"].items() if key != "margin"}
    assert {key: value for key, value in step_chart["layout"].items() if key not in ("title", "margin")} == lab_layout


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_healing_steps_chart_is_titled_with_what_it_plots(lang):
    """Issue 47: step 12's chart had no title, where the steps' other charts have one. It names what it plots: the
    perplexity of its y axis against its x axis's cache per token (the axis title's words before its comma)."""
    number = next(i for i, step in enumerate(steps.STEPS, 1) if step.key == "healed")
    at = open_page("lesson", {"step": str(number), "lang": lang})
    layout = chart_specs(at)[0]["layout"]
    title = layout.get("title", {}).get("text", "")
    assert re.split("[,，]", layout["xaxis"]["title"]["text"])[0] in title
    perplexity = {"en": "perplexity", "zh": "困惑度"}[lang]
    assert perplexity in layout["yaxis"]["title"]["text"]
    assert perplexity in title


@pytest.mark.parametrize(("number", "chapter"), [(1, 1), (12, 1), (13, 2), (len(steps.STEPS), 2)])
def test_each_step_says_which_chapter_it_is_in_in_both_modes(number, chapter):
    title = steps.CHAPTERS[chapter - 1][0]
    at = open_page("lesson", {"step": str(number)})
    assert f"Chapter {chapter} · {title} · step {number} of {len(steps.STEPS)}" in [c.value for c in at.caption]
    slide = open_page("lesson", {"step": str(number), "present": "1"})
    assert f"Chapter {chapter} · {number}/{len(steps.STEPS)}" in [m.value for m in slide.markdown]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("number", [1, 13])
def test_a_chapter_line_has_no_more_colons_than_its_chapters_title(number, lang):
    """Issue 47: "第 2 章：MLA 之后：缓存的四个轴" put a colon after the chapter's number before the title's own."""
    set_language(lang)
    try:
        title = _(steps.chapter_of(number)[1])
    finally:
        set_language("en")
    at = open_page("lesson", {"step": str(number), "lang": lang})
    (line,) = [c.value for c in at.caption if title in c.value]
    colons = [len(re.findall("[:：]", text)) for text in (line, title)]
    assert colons[0] == colons[1], line


def test_the_second_chapter_starts_after_the_first_chapters_twelve_steps():
    assert [first for _title, first in steps.CHAPTERS] == [1, 13]
    assert steps.STEPS[12].key == "axes"


def test_next_reruns_the_step_alone_and_the_share_box_follows():
    """The step is a fragment: → reruns it alone (as the browser does), and the share box, outside it, shows the new
    step's link; that link opens the same step."""
    at = open_page("lesson", {"step": "1", "lang": "en"})
    at.button(key="lesson_next").click()
    run_fragment(at, "lesson_step")
    no_exception(at)
    (link,) = [text for text in verbatim(at) if "step=" in text]
    query = dict(parse_qsl(urlsplit(link).query))
    assert query["step"] == "2"
    assert query["lang"] == "en"
    again = open_page("lesson", query)
    assert again.session_state[steps.STEP.key] == 2
