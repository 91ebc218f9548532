"""The lesson in presenter mode is a set of slides (issue #37, items 1-3): at 1024x768, in English and Chinese, every
step shows its title, its chart and its question on the first screen without scrolling; → opens the next step at its
top even from the foot of the last one (and so do the ← → buttons); and no text on a step's chart is drawn under
14 px, nor its tick labels in a light grey.

One served app (the session's) and one tab per language, walked from step to step with → as a teacher does: each step
is measured once, when reached, and each check reads the measurement, so a step that breaks fails by name."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from explorer import i18n
from explorer.lesson import steps
from explorer.present import MIN_TEXT_PX

from .conftest import new_tab, open_link, url_params, wait_for_app
from .test_lesson_in_browser import heading, presenter_problems, title
from .test_lesson_layout import CHAPTER, layout_problems, wait_for_step_drawn

SCREEN = (1024, 768)
STEPS = range(1, len(steps.STEPS) + 1)
LANGS = ("en", "zh")
# Tick labels darker than this in every channel: Streamlit's chart grey (128, 132, 149) washes out on a projector
DARKEST_LIGHT_GREY = 110
TITLE_LINE_PX = 0.9 * 32 * 1.25  # a slide title's line: 0.9rem of the doubled 16 px, line-height 1.25 (present.css)

# Where the slide's parts are on the screen, how far the page is scrolled, and every text of the chart as drawn.
SLIDE = """lead => {
    const main = document.querySelector('[data-testid="stMain"]');
    const box = e => { if (!e) return null; const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const header = document.querySelector('[data-testid="stHeader"]');
    const plot = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
    const question = Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p'))
        .find(p => p.textContent.trim().startsWith(lead));
    const texts = plot ? Array.from(plot.querySelectorAll('svg text'))
        .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
        .map(e => { const m = e.getScreenCTM();
            return {text: e.textContent.trim().slice(0, 40),
                px: parseFloat(getComputedStyle(e).fontSize) * Math.hypot(m.a, m.b),
                tick: /^[xy][0-9]*tick$/.test(e.parentNode.getAttribute('class') || ''),
                point: !!e.closest('.textpoint'), box: box(e),
                fill: getComputedStyle(e).fill}; }) : [];
    const data = plot && plot._fullData ? plot._fullData : [];
    return {scrolled: main.scrollTop, header: box(header), title: box(document.querySelector('[data-testid="stMain"] h2')),
        lead: box(document.querySelector('.st-key-lesson-lead p')),
        chart: box(plot), question: box(question), texts,
        controls: main.querySelectorAll('[data-testid="stSlider"]').length,
        staircases: data.filter(t => t.line && t.line.shape === 'hv').length,
        outlines: ((plot && plot._fullLayout.shapes) || []).filter(s => s.type === 'rect' && s.xref === 'x domain').length,
        chartTitle: (plot && plot._fullLayout.title && plot._fullLayout.title.text) || '',
        leadText: main.querySelector('.st-key-lesson-lead')?.innerText || '',
        legend: legendEntries(plot)};
}"""
# A chart's legend entries, and those in sight: a legend too long for its chart scrolls, its last entries out of sight.
LEGEND = """function legendEntries(plot) {
    const frame = plot && plot.querySelector('g.legend rect.bg');
    if (!frame) return {all: [], seen: []};
    const shown = frame.getBoundingClientRect();
    const entries = Array.from(plot.querySelectorAll('g.legend g.traces text.legendtext'));
    const inSight = e => { const r = e.getBoundingClientRect(); return r.top >= shown.top - 1 && r.bottom <= shown.bottom + 1; };
    return {all: entries.map(e => e.textContent.trim()), seen: entries.filter(inSight).map(e => e.textContent.trim())};
}"""

# Every chart's points as drawn: what a control must change.
CHART_POINTS = """() => JSON.stringify(Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
    .map(g => (g._fullData || []).map(t => [t.x, t.y].map(a => a ? Array.from(a) : null))))"""


def in_language(message: str, lang: str, **values: object) -> str:
    i18n.set_language(lang)
    try:
        return i18n._(message, **values)
    finally:
        i18n.set_language("en")


class Walk:
    """One tab for a language, on the lesson in presenter mode, and what each step looked like when reached."""

    def __init__(self, visits, server, lang: str) -> None:
        self.tab = new_tab(visits, SCREEN)
        self.server, self.lang = server, lang
        self.step: int | None = None
        self.seen: dict[int, dict] = {}
        # the question's bold lead-in ("Question for the class:"), as the page shows it in this language
        self.question = (
            in_language("**Question for the class:** {question}", lang, question="").strip("* ").rstrip(":：")
        )

    def open(self, number: int) -> None:
        query = {"step": str(number), "lang": self.lang, "present": "1"}
        open_link(self.tab, f"{self.server.url}/lesson?{urlencode(query)}")
        self.arrived(number)

    def arrived(self, number: int) -> None:
        wait_for_step_drawn(self.tab, number, self.lang)
        self.tab.evaluate("() => document.fonts.ready")
        self.step = number
        self.seen[number] = self.measure()

    def measure(self) -> dict:
        return self.tab.evaluate(f"lead => {{ {LEGEND}; return ({SLIDE})(lead); }}", self.question) | {
            "heading": heading(self.tab),
            "presenter": presenter_problems(self.tab),
            "layout": layout_problems(self.tab),
        }

    def next_from_the_foot(self) -> None:
        """Unfold the answer and the rest, scroll to the foot and press →, as a teacher who read the answer."""
        to_the_foot(self.tab)
        self.tab.evaluate("() => document.activeElement && document.activeElement.blur()")
        self.tab.keyboard.press("ArrowRight")
        self.arrived(self.step + 1)

    def slide(self, number: int) -> dict:
        """The step as it was when reached: by → from the step before it (opened by its link if need be); step 1 by
        its link."""
        if number not in self.seen:
            if number == 1:
                self.open(1)
            else:
                if self.step != number - 1:
                    self.open(number - 1)
                self.next_from_the_foot()
        assert url_params(self.tab)["present"] == "1"
        return self.seen[number]


@pytest.fixture(scope="module")
def walks(visits, server):
    opened: dict[str, Walk] = {}

    def walk(lang: str) -> Walk:
        # not opened.setdefault(lang, Walk(...)): that opens a new tab on every call, never closed (a
        # run of this file left ~500 of chromium's renderers, ~20 GB, and the suite after it swapping)
        if lang not in opened:
            opened[lang] = Walk(visits, server, lang)
        return opened[lang]

    yield walk
    for each in opened.values():
        each.tab.close()


def inside_the_screen(name: str, box: list[float] | None, top: float) -> list[str]:
    if box is None:
        return [f"no {name} on the page"]
    left, upper, right, lower = box
    if upper < top - 1 or lower > SCREEN[1] + 1 or left < -1 or right > SCREEN[0] + 1:
        return [f"the {name} at {[round(v) for v in box]}, outside the first screen (top {top:.0f}, 0..{SCREEN[1]})"]
    return []


@pytest.mark.parametrize("number", STEPS)
@pytest.mark.parametrize("lang", LANGS)
def test_each_step_shows_its_title_chart_and_question_on_one_screen(walks, lang, number):
    seen = walks(lang).slide(number)
    assert seen["scrolled"] == 0, "measured at the step's top"
    header = seen["header"][3] if seen["header"] else 0
    problems = inside_the_screen("title", seen["title"], header)
    problems += inside_the_screen("chart", seen["chart"], header)
    problems += inside_the_screen("question", seen["question"], header)
    assert not problems, f"step {number} ({lang}): {problems}"
    assert seen["title"][3] <= seen["chart"][1] <= seen["chart"][3] <= seen["question"][1] + 1, "title, chart, question"


@pytest.mark.parametrize("number", STEPS)
@pytest.mark.parametrize("lang", LANGS)
def test_a_steps_title_takes_one_line_clear_of_its_first_sentence(walks, lang, number):
    """Two-line titles touched the sentence below them (steps 1, 3, 5 and 12 in English)."""
    seen = walks(lang).slide(number)
    _, top, _, bottom = seen["title"]
    assert bottom <= seen["lead"][1] + 1, f"step {number} ({lang}): the title over its first sentence"
    assert bottom - top < 1.6 * TITLE_LINE_PX, f"step {number} ({lang}): the title takes more than one line"


@pytest.mark.parametrize("number", STEPS[1:])
@pytest.mark.parametrize("lang", LANGS)
def test_the_right_arrow_opens_the_next_step_at_its_top(walks, lang, number):
    seen = walks(lang).slide(number)  # reached by → from the foot of the step before
    assert seen["scrolled"] == 0, f"step {number} ({lang}) opened {seen['scrolled']} px down"


@pytest.mark.parametrize("number", STEPS)
@pytest.mark.parametrize("lang", LANGS)
def test_no_text_on_a_steps_chart_is_under_14_px(walks, lang, number):
    texts = walks(lang).slide(number)["texts"]
    assert texts, "the chart draws text"
    small = [f"{t['text']!r} at {t['px']:.1f} px" for t in texts if t["px"] < MIN_TEXT_PX - 0.05]
    assert not small, f"step {number} ({lang}): {len(small)} texts, as {small[:6]}"


@pytest.mark.parametrize("number", STEPS)
@pytest.mark.parametrize("lang", LANGS)
def test_a_steps_tick_labels_are_not_light_grey(walks, lang, number):
    ticks = [t for t in walks(lang).slide(number)["texts"] if t["tick"]]
    light = []
    for tick in ticks:
        channels = [int(c) for c in tick["fill"].removeprefix("rgb(").removesuffix(")").split(",")[:3]]
        if min(channels) > DARKEST_LIGHT_GREY:
            light.append(f"{tick['text']!r} in {tick['fill']}")
    assert not light, f"step {number} ({lang}): {len(light)} tick labels, as {light[:6]}"


@pytest.mark.parametrize("number", STEPS)
@pytest.mark.parametrize("lang", LANGS)
def test_presenter_mode_reads_cleanly_on_a_projector_at_every_step(walks, lang, number):
    """test_lesson_in_browser.py's presenter checks at 1024x768, read off this walk as each step is reached."""
    seen = walks(lang).slide(number)
    assert seen["heading"] == title(number, lang)
    assert not seen["presenter"], f"step {number} ({lang}): {seen['presenter']}"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("number", CHAPTER)
def test_each_step_of_the_second_chapter_reads_cleanly_as_a_slide(walks, number, lang):
    """test_lesson_layout.py's checks in presenter mode on a projector, read off this walk as each step is reached."""
    problems = walks(lang).slide(number)["layout"]
    assert not problems, f"step {number} at 1024x768 ({lang}): {problems}"


def to_the_foot(tab) -> None:
    """Every fold of the step opened (the answer, the rest), and the page scrolled to its foot."""
    folded = tab.locator('[data-testid="stMain"] [data-testid="stExpander"] details:not([open]) > summary')
    while folded.count():
        folded.first.click()
    # Streamlit grows an opened fold's height in script: scrolled before that, the foot is short of the page's
    tab.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stExpander"] details'))
            .every(fold => fold.getBoundingClientRect().height >= fold.scrollHeight - 1)""",
        polling=100,
    )
    tab.evaluate("() => { document.querySelector('[data-testid=\"stMain\"]').scrollTop = 1e6; }")
    scrolled = tab.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop")
    assert scrolled > SCREEN[1] / 2, f"the unfolded step scrolls only {scrolled} px: a weak test of the top"


def test_the_arrow_buttons_and_the_left_key_open_a_step_at_its_top(visits, server):
    tab = new_tab(visits, SCREEN)
    try:
        open_link(tab, f"{server.url}/lesson?{urlencode({'step': '3', 'lang': 'en', 'present': '1'})}")
        for press, number in (("lesson_next", 4), ("lesson_previous", 3), ("ArrowLeft", 2)):
            to_the_foot(tab)
            if press.startswith("Arrow"):
                tab.evaluate("() => document.activeElement && document.activeElement.blur()")
                tab.keyboard.press(press)
            else:  # a click where the page is (a click by hand would first scroll the button into view)
                tab.locator(f".st-key-{press} button:visible").first.dispatch_event("click")
            wait_for_step_drawn(tab, number, "en")
            assert url_params(tab)["step"] == str(number)
            assert tab.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0, press
    finally:
        tab.close()


@pytest.mark.parametrize("number", [3, 7, 10])
@pytest.mark.parametrize("lang", LANGS)
def test_a_slide_draws_no_staircase_or_outline_it_does_not_explain(walks, lang, number):
    """Item 4: the preallocated cache's staircase (steps 3 and 7) and the outlined head (step 10) are gone."""
    seen = walks(lang).slide(number)
    assert (seen["staircases"], seen["outlines"]) == (0, 0), f"step {number} ({lang})"


@pytest.mark.parametrize("lang", LANGS)
def test_the_absorption_slide_states_the_comparison_with_the_full_pass(walks, lang):
    title = walks(lang).slide(10)["chartTitle"].replace("<br>", " ")
    message = "Absorbed decode: each head's weights; the full up-projected pass gives the same {agreement}"
    words = [part.strip() for part in in_language(message, lang, agreement="\0").split("\0") if part.strip()]
    assert words, message
    assert all(part in title for part in words), title


def test_every_control_on_a_slide_changes_its_chart(walks, visits, server):
    """A step's slider must change what is shown (step 11's context slider changed nothing and is gone)."""
    walk = walks("en")
    with_control = [n for n in STEPS if walk.slide(n)["controls"]]
    assert 11 not in with_control
    tab = new_tab(visits, SCREEN)
    try:
        for number in with_control:
            open_link(tab, f"{server.url}/lesson?{urlencode({'step': str(number), 'lang': 'en', 'present': '1'})}")
            before = tab.evaluate(CHART_POINTS)
            tab.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]').first.focus()
            tab.keyboard.press("ArrowLeft")
            try:
                tab.wait_for_function(f"before => ({CHART_POINTS})() !== before", arg=before, polling=100)
            except PlaywrightTimeout:
                pytest.fail(f"step {number}'s control changed nothing shown")
            wait_for_app(tab)
    finally:
        tab.close()


def overlap(a: list[float], b: list[float], slack: float = 1.0) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


@pytest.mark.parametrize("number", STEPS)
@pytest.mark.parametrize("lang", LANGS)
def test_no_two_point_names_on_a_slide_overlap(walks, lang, number):
    """Item 6: the healed close-up's names ran into each other at 1024 px, and step 11's "256" into "288"."""
    names = [t for t in walks(lang).slide(number)["texts"] if t["point"]]
    together = [
        f"{a['text']!r} and {b['text']!r}"
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if overlap(a["box"], b["box"])
    ]
    assert not together, f"step {number} ({lang}): {together}"


@pytest.mark.parametrize("number", STEPS)
@pytest.mark.parametrize("lang", LANGS)
def test_every_legend_entry_is_in_sight(walks, lang, number):
    """Issue 47: step 22's legend of 13 models scrolled, Nemotron 3 Nano, named in its lead, out of sight; then, listed
    first, Llama 4 Scout was. Every entry is in sight, the lead's two first."""
    seen = walks(lang).slide(number)
    named = [name for name in seen["legend"]["all"] if name and name in seen["leadText"]]
    if steps.STEPS[number - 1].key == "choose2026":
        assert len(named) >= 2, f"the lead names its largest and smallest cache: {seen['leadText']!r}"
        assert seen["legend"]["all"][:2] == named[:2], "the lead's models first in the legend"
    hidden = [name for name in seen["legend"]["all"] if name and name not in seen["legend"]["seen"]]
    assert not hidden, f"step {number} ({lang}): {hidden} out of the legend's sight"
