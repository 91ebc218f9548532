"""The address bar: what writes it (write_link, and the share box follows), a page's own widgets bound to it (bound,
text_box, follow), and links to other pages (link_query, page_link).

The URL is the source of truth when a session opens (a shared link reproduces the sender's view); after that the
widgets are, and every change is written back to the URL so the address bar is always a link to what is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.errors import StreamlitPageNotFoundError

from . import i18n, share
from .i18n import LINK_PARAM, _
from .params import Choice, IntRange, Param, Text, view_link
from .present import present_query
from .settings import Settings

T = TypeVar("T")


def write_link(params: dict[str, str]) -> None:
    """Write params into the address bar (the share box follows)."""
    changed = False
    for name, text in params.items():
        if st.query_params.get_all(name) != [text]:  # also collapses a key the link repeated
            st.query_params[name] = text
            changed = True
    share.link_changed(params, changed=changed)


def bound(
    param: Param,
    render: Callable[[str], T],
    options: tuple | None = None,
    *,
    say_moves: bool = True,
    notes: DeltaGenerator | None = None,
) -> T:
    """A page widget whose value lives in the link under param.name.

    render(key) draws the widget with that key and returns its value. options narrows the valid values for this
    view (a Choice's options, an IntRange's (low, high)). The value survives leaving the page and coming back.
    say_moves=False: when other controls make the value unavailable it moves without a note (a value that follows
    another by design, as the head opened up follows the page of heads); a bad link value is still reported, where
    the widget is or in `notes` (a widget folded away, as a slide's step menu: its note must still be seen).
    """
    key, kept = param.key, f"_kept_{param.name}"
    state = st.session_state
    if key not in state:
        raws = st.query_params.get_all(param.name)
        if raws:
            value, note = param.parse(raws[-1], options)
            if len(raws) > 1:
                note = " ".join(
                    filter(
                        None,
                        [
                            _(
                                "{name} appears {times} times in the link, so its last value is the one read.",
                                name=param.name,
                                times=len(raws),
                            ),
                            note,
                        ],
                    )
                )
            if note:
                (notes or st).warning(note)  # a value the link carried that does not fit is reported
        else:
            value = state.get(kept, param.default)
        state[key] = value
    else:
        # Re-stated before every draw: a widget whose range changed (a slider's max following another slider) is a
        # new widget to Streamlit, which would otherwise start it from its minimum and drop a value still valid.
        state[key] = state[key]
    if options is not None:
        # Only a value someone chose is worth a note when it moves; the page's own default moves quietly.
        _move_into(param, key, options, say_moves and state[key] != param.default)
    value = render(key)
    state[kept] = value
    write_link({param.name: param.to_text(value)})
    return value


def text_box(param: Text, draw: Callable[..., str], label: str, **options: Any) -> str:
    """A free-text widget bound to the link that takes any paste. draw is st.text_area or st.text_input.

    No max_chars on the widget: the browser would drop a longer paste whole, with no word. What was typed is cleaned
    and cut when it is sent, the box shows what is kept, and the page says what changed and where it was cut.
    """
    key, note_key = param.key, f"_typed_note_{param.name}"

    def keep_what_fits() -> None:
        typed = st.session_state[key]
        kept, _note = param.parse(typed)
        st.session_state[key] = kept
        st.session_state[note_key] = param.typed_note(typed, kept)

    value = bound(param, lambda widget: draw(label, key=widget, on_change=keep_what_fits, **options))
    if note := st.session_state.pop(note_key, None):
        st.info(note, icon="✂️")
    return value


def follow(param: Param, source: object, value: object) -> None:
    """Set param's widget to value when source differs from the last run's (a new answer opens at its last step);
    the link's own value stands on the run that opens it."""
    key, last_key = param.key, f"_followed_{param.name}"
    state = st.session_state
    if last_key in state and state[last_key] != source:
        state[key] = value
    state[last_key] = source


def page_link(page_path: str, *, label: str, icon: str | None = None, query: dict[str, str] | None = None) -> None:
    """st.page_link to another page of the app. A page file run alone (outside st.navigation, as in a test) cannot
    resolve other pages, so the same address is then given as a plain markdown link."""
    try:
        st.page_link(page_path, label=label, icon=icon, query_params=query)
    except StreamlitPageNotFoundError:
        url_path = Path(page_path).stem
        st.markdown(f"[{label}]({url_path}{'?' + urlencode(query) if query else ''})")


def link_query(settings: Settings, view: Mapping[Param, object] | None = None) -> dict[str, str]:
    """Query parameters for a link to another page showing these settings and the given view values (that page's
    Params), in this run's language (and presenter mode, when on)."""
    return settings.to_link() | {LINK_PARAM: i18n.language()} | present_query() | view_link(view or {})


def _move_into(param: Param, key: str, options: tuple, say: bool) -> None:
    """A view value the settings made unavailable (head 7 after heads went to 2) moves to the nearest valid one,
    and the page says so; a widget given a value outside its range would fail or jump to its minimum instead."""
    current = st.session_state[key]
    if isinstance(param, Choice):
        if current in options:
            return
        if isinstance(current, int) and all(isinstance(option, int) for option in options):
            fixed = min(options, key=lambda option: (abs(option - current), option))  # head 7 of 4 -> head 3
        else:
            fixed = param.default if param.default in options else options[0]
    elif isinstance(param, IntRange):
        low, high = options
        fixed = min(max(current, low), high)
        if fixed == current:
            return
    else:
        return
    st.session_state[key] = fixed
    if say:
        st.info(
            _(
                "{name}: {value} is not available at these settings, so {fixed} is shown.",
                name=param.name,
                value=str(current),
                fixed=str(fixed),
            ),
            icon="↪️",
        )
