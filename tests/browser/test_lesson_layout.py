"""The lesson's second chapter (steps 13 onwards) reads cleanly where it is taught and read: presenter mode on a
projector's 1024x768, a laptop's 1400 px and a phone's 400 px, in both languages at the narrowest. The checks are the
layout suite's (tests/browser/test_layout.py) on each step's chart: no overlapping titles, no text cut off at the
chart's edge, no text too small, no bar labels over each other; test_lesson_slides.py measures the slide itself, and
runs these checks in presenter mode at 1024x768 (English and Chinese) on its walk, each step reached by → as taught."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from explorer.lesson import steps

from .conftest import new_tab, open_link
from .test_layout import SIZES, TEXT_SIZES, chart_text_problems, text_size_problems

FIRST = next(i for i, step in enumerate(steps.STEPS, 1) if step.key == "axes")
CHAPTER = range(FIRST, len(steps.STEPS) + 1)
# (size, language, presenter mode). Presenter mode on a projector, in English and Chinese, is read on the slides' walk
# (test_lesson_slides.py: test_each_step_of_the_second_chapter_reads_cleanly_as_a_slide), which reaches every step.
VIEWS = [("laptop", "en", False), ("phone", "zh", False)]


def layout_problems(tab) -> list[str]:
    """The layout suite's checks on what the page draws."""
    return chart_text_problems(tab, axis_titles=True) + text_size_problems(tab.evaluate(TEXT_SIZES))


@pytest.mark.parametrize(
    ("size", "lang", "present"), VIEWS, ids=[f"{s}-{lang}{'-present' * p}" for s, lang, p in VIEWS]
)
@pytest.mark.parametrize("number", CHAPTER)
def test_each_step_of_the_second_chapter_reads_cleanly(server, visits, number, size, lang, present):
    tab = new_tab(visits, SIZES[size])
    try:
        query = {"step": str(number), "lang": lang} | ({"present": "1"} if present else {})
        open_link(tab, f"{server.url}/lesson?{urlencode(query)}")
        problems = layout_problems(tab)
        assert not problems, f"step {number} at {size} ({lang}): {problems}"
    finally:
        tab.close()
