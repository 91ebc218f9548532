"""Lesson: the course notes' path through the explorer, one step at a time, with one live chart a step, a link that
opens the full page at the step's settings, and a question for the class.

In presenter mode (present=1) a step is a slide on one 1024x768 screen: its title beside ← →, a few sentences, its
chart sized to what is left and the question; the answer, the step's whole text, the caption and the links folded
below.

The step is a fragment: ← →, the arrow keys and the step menu rerun it alone (the sidebar did not change), and the
share box shows the step's link (explorer.share.shares_link).
"""

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from explorer.charts import show_chart
from explorer.i18n import _, language
from explorer.lesson import chapters, keys, steps, views
from explorer.link import bound, link_query
from explorer.present import presenting
from explorer.share import link_drawn_by_fragment, shares_link
from explorer.state import page_settings

link_drawn_by_fragment()  # the share box is drawn from the step's fragment (below)
page_settings("lesson")
lang = language()
present = presenting()
lesson_steps = steps.STEPS
last = len(lesson_steps)
step_key = steps.STEP.key


def go(by: int) -> None:
    st.session_state[step_key] = min(max(st.session_state[step_key] + by, 1), last)


def step_menu(key: str) -> int:
    return st.selectbox(
        _("Step"),
        range(1, last + 1),
        key=key,
        format_func=lambda i: _("{i} of {n} · {title}", i=i, n=last, title=_(lesson_steps[i - 1].title)),
        label_visibility="collapsed",
    )


def slide_places() -> SimpleNamespace:
    """A slide's parts in one container (key "lesson-slide": assets/present.css sets them closer together), made in
    the slide's order and filled once the step is known, which the menu, folded at its foot, decides. Off a slide,
    the page's title and its nav row; the step's own places follow its text (step_text)."""
    if not present:
        st.title(_("Lesson: from attention to MLA, and after it"))
        notice = st.container()
        back, menu, forward = st.columns([2, 5, 2], vertical_alignment="center")
        return SimpleNamespace(notice=notice, back=back, menu=menu, forward=forward, body=st.container())
    notice = st.container()  # a bad step in the link is said here: the step menu is folded away
    heading, count, back, forward = st.columns([9, 1.3, 1, 1], vertical_alignment="center", gap="small")
    body, control, chart, question = st.container(key="lesson-lead"), st.container(), st.container(), st.container()
    answer = st.expander(_("Answer"))
    more = st.expander(_("More: the step menu, the step's whole text, the chart's caption and links"))
    return SimpleNamespace(
        notice=notice,
        heading=heading,
        count=count,
        back=back,
        forward=forward,
        body=body,
        control=control,
        chart=chart,
        question=question,
        answer=answer,
        more=more,
        menu=more,
    )


def step_buttons(places: SimpleNamespace, number: int) -> None:
    places.back.button(
        "←" if present else _("← Previous"),
        on_click=go,
        args=(-1,),
        disabled=number <= 1,
        width="stretch",
        key="lesson_previous",
        # no tooltip on a slide: after a click it stayed over the step's title (the keys are said in the fold)
        help=None if present else _("Previous step (← key)"),
    )
    places.forward.button(
        "→" if present else _("Next →"),
        on_click=go,
        args=(1,),
        disabled=number >= last,
        width="stretch",
        key="lesson_next",
        help=None if present else _("Next step (→ key)"),
    )


def step_text(places: SimpleNamespace, number: int, numbers: dict) -> None:
    """The step's title and text; off a slide, its control, chart, question and answer places after them."""
    step = lesson_steps[number - 1]
    chapter, chapter_title = steps.chapter_of(number)
    if present:
        places.heading.header(_(step.title))
        places.count.container(key="lesson-count").markdown(
            _("Chapter {chapter} · {i}/{n}", chapter=chapter, i=number, n=last)
        )
        places.body.markdown(_(step.lead, **numbers))
        places.more.caption(_("The arrow keys ← → move between steps too."))
        places.more.markdown(_(step.text, **numbers))
        return
    with places.body:
        st.caption(_("The arrow keys ← → move between steps too. Add `present=1` to the link for a projector."))
        st.caption(
            _(
                "Chapter {chapter} · {title} · step {i} of {n}",
                chapter=chapter,
                title=_(chapter_title),
                i=number,
                n=last,
            )
        )
        st.header(_(step.title))
        st.markdown(_(step.text, **numbers))
        # The step's control, its chart with the caption and links, the question and, folded, the answer
        places.control, places.chart, places.question = st.container(), st.container(), st.container()
        places.answer = st.expander(_("Answer"))
        places.more = places.chart


def step_control(label: str, options: tuple, key: str, said: Callable[[Any], str]) -> Any:
    """A step's own control: on a slide its label beside it, in one row above the chart, saying the value chosen
    (`said`): the slider's value bubble over its thumb is hidden there (assets/present.css), a line of the slide's
    height it took above the slider."""
    if not present:
        return st.select_slider(label, options, key=key)
    name, slider = st.columns([3, 2], vertical_alignment="center")
    value = slider.container(key="lesson-control-slider").select_slider(
        label, options, key=key, label_visibility="collapsed"
    )
    name.container(key="lesson-control").markdown(said(value))
    return value


def step_chart(step: steps.Step, places: SimpleNamespace) -> None:
    """The step's live chart, with its caption and links (the full page at its settings, a GIF for slides)."""
    with places.control:
        make = chapters.STEP_VIEWS[step.key]
        if step.key == "gqa":
            groups = bound(
                views.GROUPS,
                lambda key: step_control(
                    _("KV groups $g$ (of 8 query heads)"),
                    views.GROUPS.options,
                    key,
                    lambda g: _("KV groups $g$ = {groups} (of 8 query heads)", groups=g),
                ),
            )
            shown = make(lang, groups)
        else:
            with st.spinner(_("Computing the step's chart…")):
                shown = make(lang)
    if shown is None:
        return
    with places.chart:
        show_chart(
            shown.spec,
            name=f"lesson-{step.key}",
            rows=shown.rows,
            caption=shown.caption,
            slide_height=views.slide_height(step.key) if present else None,
            caption_place=places.more if present else None,
        )
    explore, animation = places.more.columns(2)
    target = f"{shown.page}?{urlencode(link_query(shown.settings, shown.query))}"
    explore.link_button(
        _("Explore this"),
        target,
        icon=":material/open_in_new:",
        width="stretch",
        help=_("Opens the full page at this step's settings in a new tab, so the lesson stays on this step."),
    )
    if shown.animation is not None:
        animation.download_button(
            _("GIF for slides"),
            shown.animation.make,
            file_name=shown.animation.file_name,
            mime="image/gif",
            on_click="ignore",
            icon=":material/animated_images:",
            width="stretch",
            key=f"gif_{step.key}",
            help=_(
                "The animation as a GIF of {n} frames at 1024×768, drawn on the server at this step's settings and in "
                "this language.",
                n=shown.animation.frames,
            ),
        )


def lesson_step() -> None:
    """One step, whole: what moves it (the keys, the menu, ← →), its text, chart, question and answer."""
    # An arrow key pressed since the last run moves the step before its menu is drawn.
    pressed = keys.arrow_key()
    if pressed and step_key in st.session_state:
        go(1 if pressed == "next" else -1)
    with st.container(key="lesson-slide") if present else st.container():
        places = slide_places()
        with places.menu:
            number = bound(steps.STEP, step_menu, (1, last), notes=places.notice)
        step_buttons(places, number)
        keys.open_at_top(number)
        step = lesson_steps[number - 1]
        numbers = chapters.STEP_NUMBERS[step.key](lang) if step.key in chapters.STEP_NUMBERS else {}
        step_text(places, number, numbers)
        step_chart(step, places)
        places.question.markdown(_("**Question for the class:** {question}", question=_(step.question, **numbers)))
        places.answer.markdown(_(step.answer, **numbers))


st.fragment(key="lesson_step")(shares_link(lesson_step))()
