"""The lesson's second chapter (steps 13 onwards) reads cleanly where it is taught and read: presenter mode on a
projector's 1024x768, a laptop's 1400 px and a phone's 400 px, in both languages at the narrowest. The checks are the
layout suite's (tests/browser/test_layout.py) on each step's chart: no overlapping titles, no text cut off at the
chart's edge, no text too small, no bar labels over each other; test_lesson_slides.py measures the slide itself, and
runs these checks in presenter mode at 1024x768 (English and Chinese) on its walk, each step reached by → as taught.

Each view walks the chapter in one tab, as a reader does: the chapter's first step opened by its link, each next one
by →, and each step checked when reached (a rerun draws a step whole, as its link does, for a fifth of a new page
load's work)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from explorer.lesson import steps

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
