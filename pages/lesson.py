"""Lesson: the course notes' path through the explorer, one step at a time, with one live chart a step, a link that
opens the full page at the step's settings, and a question for the class."""

from urllib.parse import urlencode

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from explorer.charts import show_chart
from explorer.i18n import _, language
from explorer.lab import link as lab_link
from explorer.lesson import keys, steps, views
from explorer.link import bound, link_query
from explorer.present import presenting
from explorer.state import page_settings

page_settings("lesson")
lang = language()
lesson_steps = steps.STEPS
last = len(lesson_steps)
step_key = steps.STEP.key

# An arrow key pressed since the last run moves the step before its menu is drawn.
pressed = keys.arrow_key()
if pressed and step_key in st.session_state:
    moved = st.session_state[step_key] + (1 if pressed == "next" else -1)
    st.session_state[step_key] = min(max(moved, 1), last)


def go(by: int) -> None:
    st.session_state[step_key] = min(max(st.session_state[step_key] + by, 1), last)


st.title(_("Lesson: from attention to MLA"))
# On a projector the arrows alone: the step's title needs the row's width at twice the size.
back, menu, forward = st.columns([1, 8, 1] if presenting() else [2, 5, 2], vertical_alignment="center")
with menu:
    number = bound(
        steps.STEP,
        lambda key: st.selectbox(
            _("Step"),
            range(1, last + 1),
            key=key,
            format_func=lambda i: _("{i} of {n} · {title}", i=i, n=last, title=_(lesson_steps[i - 1].title)),
            label_visibility="collapsed",
        ),
        (1, last),
    )
back.button(
    "←" if presenting() else _("← Previous"),
    on_click=go,
    args=(-1,),
    disabled=number <= 1,
    width="stretch",
    key="lesson_previous",
    help=_("Previous step (← key)"),
)
forward.button(
    "→" if presenting() else _("Next →"),
    on_click=go,
    args=(1,),
    disabled=number >= last,
    width="stretch",
    key="lesson_next",
    help=_("Next step (→ key)"),
)
if not presenting():
    st.caption(_("The arrow keys ← → move between steps too. Add `present=1` to the link for a projector."))

step = lesson_steps[number - 1]
numbers = views.STEP_NUMBERS[step.key](lang) if step.key in views.STEP_NUMBERS else {}
st.header(_(step.title))
st.markdown(_(step.text, **numbers))

make = views.STEP_VIEWS[step.key]
if step.key == "gqa":
    groups = bound(
        views.GROUPS,
        lambda key: st.select_slider(_("KV groups $g$ (of 8 query heads)"), views.GROUPS.options, key=key),
    )
    shown = make(lang, groups)
elif step.key == "choose":
    context = bound(
        lab_link.CONTEXT,
        lambda key: st.select_slider(
            _("Context length for the whole-model cache (tokens)"), lab_link.CONTEXT.options, key=key
        ),
    )
    shown = make(lang, context)
else:
    with st.spinner(_("Computing the step's chart…")):
        shown = make(lang)

if shown is not None:
    show_chart(shown.spec, name=f"lesson-{step.key}", rows=shown.rows, caption=shown.caption)
    explore, animation = st.columns(2)
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

st.markdown(_("**Question for the class:** {question}", question=_(step.question, **numbers)))
with st.expander(_("Answer")):
    st.markdown(_(step.answer, **numbers))
