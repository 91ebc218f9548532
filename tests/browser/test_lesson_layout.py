"""The lesson's second chapter (steps 13 onwards) reads cleanly where it is taught and read: presenter mode on a
projector's 1024x768, a laptop's 1400 px and a phone's 400 px, in both languages at the narrowest. The checks are the
layout suite's (tests/browser/test_layout.py) on each step's chart: no overlapping titles, no text cut off at the
chart's edge, no text too small, no bar labels over each other; test_lesson_slides.py measures the slide itself, and
runs these checks in presenter mode at 1024x768 (English and Chinese) on its walk, each step reached by → as taught.
Step 5's control and its boxes' names are checked here too, where they were seen wrong: a short projector, a phone.

Each view walks the chapter in one tab, as a reader does: the chapter's first step opened by its link, each next one
by →, and each step checked when reached (a rerun draws a step whole, as its link does, for a fifth of a new page
load's work)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from explorer.lesson import keys, steps, views
from explorer.present import MIN_TEXT_PX

from .conftest import new_tab, open_link, wait_for_app
from .test_layout import SIZES, TEXT_SIZES, chart_text_problems, in_language, text_size_problems

FIRST = next(i for i, step in enumerate(steps.STEPS, 1) if step.key == "axes")
CHAPTER = range(FIRST, len(steps.STEPS) + 1)
# (size, language, presenter mode). Presenter mode on a projector, in English and Chinese, is read on the slides' walk
# (test_lesson_slides.py: test_each_step_of_the_second_chapter_reads_cleanly_as_a_slide), which reaches every step.
VIEWS = [("laptop", "en", False), ("phone", "zh", False)]

# The step with this title and key is drawn whole: its chart holds data, and no element of the last run is left
# (Streamlit keeps the last run's elements, faded, until the new run replaces them).
ARRIVED = """([title, key]) => {
    const main = document.querySelector('[data-testid="stMain"]');
    const plot = main.querySelector(`.st-key-chart_lesson-${key} .js-plotly-plot`);
    return (main.querySelector('h2')?.innerText || '').trim() === title && !!plot && !!plot._fullData
        && plot._fullData.length > 0 && !main.querySelector('[data-stale="true"]');
}"""


def wait_for_step_drawn(tab, number: int, lang: str) -> None:
    """Until step `number` is drawn whole (ARRIVED) and the page is idle."""
    step = steps.STEPS[number - 1]
    tab.wait_for_function(ARRIVED, arg=[in_language(step.title, lang), step.key], polling=100)
    wait_for_app(tab)


# Each annotation's pointer (arrow) that comes within a line's half width (and a px) of another colour's plotted
# line, in px: the pointer from its tail to where its head stops (standoff), each line through its points as drawn.
CROSSED_LINES = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).flatMap(plot => {
    const full = plot._fullLayout;
    if (!full) return [];
    const px = (axis, value) => axis._offset + axis.l2p(value);
    const near = (p, a, b) => {  // distance from p to the segment a-b
        const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
        const t = Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (dx * dx + dy * dy || 1)));
        return Math.hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy);
    };
    const cross = (a, b, c, d) => {
        const side = (p, q, r) => Math.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]));
        return side(a, b, c) * side(a, b, d) < 0 && side(c, d, a) * side(c, d, b) < 0;
    };
    const apart = (a, b, c, d) => cross(a, b, c, d) ? 0 : Math.min(near(a, c, d), near(b, c, d), near(c, a, b), near(d, a, b));
    return (full.annotations || []).filter(note => note.showarrow && note.axref !== 'pixel').flatMap(note => {
        const xa = full[note.xref.replace('x', 'xaxis')], ya = full[note.yref.replace('y', 'yaxis')];
        const head = [px(xa, note.x), px(ya, note.y)], tail = [px(xa, note.ax), px(ya, note.ay)];
        const length = Math.hypot(head[0] - tail[0], head[1] - tail[1]), stop = (note.standoff || 0) / length;
        const end = [head[0] + (tail[0] - head[0]) * stop, head[1] + (tail[1] - head[1]) * stop];
        return plot._fullData.filter(trace => trace.visible === true && (trace.mode || '').includes('lines')
                && trace.line.color !== note.arrowcolor)
            .flatMap(trace => {
                const points = trace.x.map((x, i) => [trace.xaxis === 'x' ? px(xa, xa.c2l(x)) : NaN,
                                                      px(ya, ya.c2l(trace.y[i]))]);
                const least = Math.min(...points.slice(1).map((p, i) => apart(tail, end, points[i], p)));
                return least < trace.line.width / 2 + 1
                    ? [`${note.text.slice(0, 40)}'s pointer crosses ${trace.name} (${least.toFixed(1)} px)`] : [];
            });
    });
})"""


def layout_problems(tab) -> list[str]:
    """The layout suite's checks on what the page draws, and no pointer across a line (CROSSED_LINES)."""
    return (
        chart_text_problems(tab, axis_titles=True)
        + text_size_problems(tab.evaluate(TEXT_SIZES))
        + tab.evaluate(CROSSED_LINES)
    )


class ChapterWalk:
    """One tab of a view (size, language, presenter mode) on the lesson, and the problems of each step reached."""

    def __init__(self, visits, server, size: str, lang: str, present: bool) -> None:
        self.tab = new_tab(visits, SIZES[size])
        self.server, self.lang, self.present = server, lang, present
        self.step: int | None = None  # the step the tab shows
        self.seen: dict[int, list[str]] = {}

    def problems(self, number: int) -> list[str]:
        """The step's problems as drawn when reached: by → from the step before, else by its link."""
        if number not in self.seen:
            by_arrow, self.step = self.step == number - 1, None  # None until drawn: a step that fails leaves a link
            if by_arrow:
                self.tab.evaluate("() => document.activeElement && document.activeElement.blur()")
                self.tab.keyboard.press("ArrowRight")
            else:
                query = {"step": str(number), "lang": self.lang} | ({"present": "1"} if self.present else {})
                open_link(self.tab, f"{self.server.url}/lesson?{urlencode(query)}")
            wait_for_step_drawn(self.tab, number, self.lang)
            self.step, self.seen[number] = number, layout_problems(self.tab)
        return self.seen[number]


@pytest.fixture(scope="module")
def walks(visits, server):
    opened: dict[tuple[str, str, bool], ChapterWalk] = {}

    def walk(size: str, lang: str, present: bool) -> ChapterWalk:
        if (size, lang, present) not in opened:
            opened[size, lang, present] = ChapterWalk(visits, server, size, lang, present)
        return opened[size, lang, present]

    yield walk
    for each in opened.values():
        each.tab.close()


@pytest.mark.parametrize(
    ("size", "lang", "present"), VIEWS, ids=[f"{s}-{lang}{'-present' * p}" for s, lang, p in VIEWS]
)
@pytest.mark.parametrize("number", CHAPTER)
def test_each_step_of_the_second_chapter_reads_cleanly(walks, number, size, lang, present):
    problems = walks(size, lang, present).problems(number)
    assert not problems, f"step {number} at {size} ({lang}): {problems}"


# Each bar's name drawn inside it whose ink (its glyphs, measured with the name's own font) reaches past the bar's
# inside edge (its outline's half width in): [name, ink top, ink bottom, inside top, inside bottom], in px.
NAMES_OUT_OF_BOXES = """() => {
    const pen = document.createElement('canvas').getContext('2d'), out = [];
    for (const point of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot .barlayer .point')) {
        const text = point.querySelector('text.bartext-inside'), path = point.querySelector('path');
        if (!text || !path || !(text.textContent || '').trim()) continue;
        const style = getComputedStyle(text);
        pen.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const m = pen.measureText(text.textContent), r = text.getBoundingClientRect();
        const scale = r.height / (m.fontBoundingBoxAscent + m.fontBoundingBoxDescent);
        const baseline = r.bottom - m.fontBoundingBoxDescent * scale;
        const ink = [baseline - m.actualBoundingBoxAscent * scale, baseline + m.actualBoundingBoxDescent * scale];
        const box = path.getBoundingClientRect(), edge = (parseFloat(getComputedStyle(path).strokeWidth) || 0) / 2;
        const inside = [box.top + edge, box.bottom - edge];
        out.push({name: text.textContent, fits: ink[0] >= inside[0] - 0.5 && ink[1] <= inside[1] + 0.5,
                  at: [ink, inside].flat().map(v => Math.round(v * 10) / 10), size: style.fontSize});
    }
    return out;
}"""
SHORT_PROJECTOR = (1024, 680)  # a projector's 768 px less the browser's toolbars (issue 47)


def drawn_for_a_short_window(tab, key: str, window: int) -> None:
    """Until step `key`'s chart is drawn at the height a slide gives it in a `window` px tall window (the page reports
    a short window after its first run, and the chart is drawn again shorter)."""
    full = views.SLIDE_CHART_HEIGHT - (views.CONTROL_HEIGHT if key == "gqa" else 0)
    height = max(full - (keys.SLIDE_SCREEN_PX - window), min(full, views.LEAST_SLIDE_CHART))
    shown = f".st-key-chart_lesson-{key} .js-plotly-plot"
    tab.wait_for_function(f"() => document.querySelector('{shown}')?._fullLayout?.height === {height}", polling=100)
    wait_for_app(tab)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_step_5s_head_names_sit_inside_their_boxes_on_a_short_projector(visits, server, lang):
    """Issue 47: at a 1024x680 window step 5's boxes were 11 px tall and their 18 px names ran over the edges."""
    tab = new_tab(visits, SHORT_PROJECTOR)
    try:
        open_link(tab, f"{server.url}/lesson?{urlencode({'step': '5', 'lang': lang, 'present': '1'})}")
        drawn_for_a_short_window(tab, "gqa", SHORT_PROJECTOR[1])
        names = tab.evaluate(NAMES_OUT_OF_BOXES)
        assert len(names) == 10, names  # 8 query heads, 2 KV heads
        assert all(name["fits"] for name in names), [name for name in names if not name["fits"]]
        assert all(float(name["size"].removesuffix("px")) >= MIN_TEXT_PX for name in names), names
    finally:
        tab.close()


# The step's slider's value as the page shows it: the bubble over its thumb (if seen) and the label beside it.
SLIDER_VALUES = """() => {
    const bubble = document.querySelector('.st-key-lesson-control-slider [data-testid="stSliderThumbValue"]');
    const seen = bubble && bubble.getClientRects().length > 0 && getComputedStyle(bubble).visibility !== 'hidden';
    return {bubble: seen ? bubble.innerText.trim() : null,
            label: document.querySelector('.st-key-lesson-control')?.innerText.trim() || null};
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_steps_control_on_a_phone_slide_shows_its_value_once(visits, server, lang):
    """Issue 47: presenter mode at 400 px showed the slider's bubble "2" under the label's "= 2"."""
    tab = new_tab(visits, (400, 800))
    try:
        open_link(tab, f"{server.url}/lesson?{urlencode({'step': '5', 'lang': lang, 'present': '1'})}")
        wait_for_step_drawn(tab, 5, lang)
        shown = tab.evaluate(SLIDER_VALUES)
        assert "= 2" in (shown["label"] or ""), shown
        assert shown["bubble"] is None, shown
    finally:
        tab.close()
