"""Streamlit glue: the shared sidebar, the link <-> settings sync, and link-backed page widgets.

The URL is the source of truth when a session opens (a shared link reproduces the sender's view); after that the
widgets are, and every change is written back to the URL so the address bar is always a link to what is shown.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import streamlit as st
import torch
from streamlit.delta_generator import DeltaGenerator
from streamlit.errors import StreamlitPageNotFoundError

from attn_core import VARIANTS

from . import i18n, share
from .glossary import glossary_markdown, variant_name
from .i18n import LANGUAGES, LINK_PARAM, N_, _
from .navigation import LANGUAGE_KEY, requested_page, use_language
from .pages import ALL_SETTINGS, PAGES, PageEntry
from .params import Choice, IntRange, Param, Text, shown, view_link
from .present import present_query, use_presenter
from .settings import (
    BATCH_CHOICES,
    D_MODEL_CHOICES,
    DTYPE_CHOICES,
    LATENT_CHOICES,
    MAX_SEED,
    SEQ_LEN_CHOICES,
    Settings,
    from_link,
    groups_choices,
    heads_choices,
    normalize,
    rope_dim_choices,
    version_note,
)
from .verbatim import show_verbatim

T = TypeVar("T")

SETTINGS_KEY = "settings"
APP_CSS = (Path(__file__).resolve().parents[1] / "assets" / "app.css").read_text(encoding="utf-8")
_WIDGET = {name: f"setting_{name}" for name in Settings().as_dict()}  # setting name -> widget key
_LINK_READ = "_link_read"
_ADJUSTED = "_adjusted_notes"
_SHARE_BOX = "_share_box"  # this run's placeholder for the link; dropped at the start of every run
_LINK_SHOWN_AFTER = "_link_shown_after"  # set while a fragment's first run defers the box (link_shown_after)
_SHOW_QR = "_show_qr"  # set by the share box's QR button, for the run it starts
_SHARE_PARAMS = "_share_params"  # this run's link parameters (shared and the page's own), for the JSON download


def page_settings(page_key: str) -> Settings:
    """Draw the shared settings in the sidebar and return them. Every page calls this first.

    Pages, not app.py, draw the sidebar, so that a page behaves the same whether it runs under st.navigation or
    alone (AppTest reruns a page file by itself after the first run).
    """
    _start_run()
    _settings_into_widgets()
    page = PAGES.get(page_key)  # its declaration: which settings it uses (None for a page not in the menu, a test's)
    with st.sidebar:
        _sidebar_controls(page)
    settings = _read_widgets()
    st.session_state[SETTINGS_KEY] = settings
    _write_link(settings.to_link() | {LINK_PARAM: i18n.language()})
    with st.sidebar:
        _share_tools(settings)
        # A popover, not an expander: a folded expander's formulas are typeset anyway, on every new visit before its
        # first chart (benchmarks/MEASUREMENTS.md); a popover draws them when opened
        with st.popover(_("Symbols: what each letter means"), icon=":material/menu_book:", width="stretch"):
            st.markdown(glossary_markdown())
    return settings


def _start_run() -> None:
    """What every run sets up before drawing: its language, presenter mode, torch's threads, the app's style, and
    last run's placeholders dropped."""
    use_language()
    use_presenter()  # present=1: a projector's view (explorer/present.py)
    # One torch thread per op, set in the thread that runs this page (the setting is per thread). A served app runs
    # many small ops for many sessions at once: torch's pool spinning against other sessions' work slowed a decode
    # trace many times over. And a result's last bits depend on the thread count: one count everywhere keeps a
    # link's numbers identical to the sender's.
    torch.set_num_threads(1)
    st.html(f"<style>{APP_CSS}</style>")  # style only: Streamlit puts it where it takes no room on the page
    _phone_language_switch()
    state = st.session_state
    state.pop(_SHARE_BOX, None)  # last run's placeholder is no longer on the page
    state.pop(_LINK_SHOWN_AFTER, None)
    state.pop(_SHARE_PARAMS, None)


def _settings_into_widgets() -> None:
    """The settings the sidebar's widgets start from: the link's on a session's first run (with notes on what it
    could not use), else the ones the session already has."""
    state = st.session_state
    if not state.get(_LINK_READ):
        params = {name: st.query_params.get_all(name) for name in st.query_params}
        settings, notes = from_link(params)
        if (asked := st.query_params.get(LINK_PARAM)) is not None and asked not in LANGUAGES:
            notes.append(
                _(
                    "lang: {value} is not a language here, so {name} is shown.",
                    value=shown(asked),
                    name=LANGUAGES[i18n.language()],
                )
            )
        _warn_about_link(notes)
        if (note := version_note(params)) is not None:
            st.info(note, icon=":material/history:")
        _store_in_widgets(settings)
        state[_LINK_READ] = True
    elif all(key in state for key in _WIDGET.values()):
        # Streamlit keys a widget's value by the page that drew it: the same sliders on the next page would start
        # from their minimums. Writing the values back before drawing carries them to whichever page runs now.
        _store_in_widgets(_read_widgets())
    else:
        _store_in_widgets(state[SETTINGS_KEY])  # widget state is dropped for a run that did not draw it


def _sidebar_controls(page: PageEntry | None) -> None:
    """The language switch and the layer settings the page reads (none on a page that reads none)."""
    _declare_language()
    st.segmented_control(
        _("Language"),
        tuple(LANGUAGES),
        format_func=LANGUAGES.__getitem__,
        key=LANGUAGE_KEY,
        on_change=_keep_language,
    )
    if page is not None and not page.uses:
        # A page that reads none of them shows none: seven sliders that do nothing there would only mislead.
        # Their values stay in the session and the link for the other pages.
        st.caption(_("This page runs the trained model as it is: the layer settings are on the other pages."))
    else:
        _layer_controls()
        if page is not None and (cue := settings_cue(page.uses)):
            st.caption(cue)
    for note in st.session_state.pop(_ADJUSTED, []):
        st.info(note, icon="↪️")


def bound(param: Param, render: Callable[[str], T], options: tuple | None = None, *, say_moves: bool = True) -> T:
    """A page widget whose value lives in the link under param.name.

    render(key) draws the widget with that key and returns its value. options narrows the valid values for this
    view (a Choice's options, an IntRange's (low, high)). The value survives leaving the page and coming back.
    say_moves=False: when other controls make the value unavailable it moves without a note (a value that follows
    another by design, as the head opened up follows the page of heads); a bad link value is still reported.
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
                st.warning(note)  # a value the link carried that does not fit is reported here
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
    _write_link({param.name: param.to_text(value)})
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


# The sidebar's sliders, labelled (in English: the browser tests and benchmarks find a slider by its label). Plain
# text, not LaTeX: a label is also the slider's accessible name, which a screen reader reads out as it is.
SLIDER_LABELS = {
    "d_model": N_("Model width (d_model)"),
    "heads": N_("Query heads (h)"),
    "groups": N_("KV groups (g, GQA)"),
    "latent": N_("Latent width (d_c, MLA)"),
    "rope_dim": N_("Rotary key width (dₕᴿ, MLA)"),
    "seq_len": N_("Sequence length (L, tokens)"),
    "batch": N_("Batch"),
}
# The sidebar's settings as the cue under them names them.
SETTING_LABELS = {
    "variants": N_("Variants"),
    "d_model": "d_model",
    "heads": N_("Query heads"),
    "groups": N_("KV groups"),
    "latent": N_("Latent width"),
    "rope_dim": N_("Rotary key width"),
    "seq_len": N_("Sequence length"),
    "batch": N_("Batch"),
    "dtype": N_("Cache dtype"),
    "seed": N_("Seed"),
}


def settings_cue(uses: tuple[str, ...]) -> str:
    """One line under the sidebar settings: which of them this page reads (its PAGES entry says), and which do nothing
    here. Empty when the page reads them all."""
    unused = [_(SETTING_LABELS[name]) for name in ALL_SETTINGS if name not in uses]
    if not unused:
        return ""
    if not any(name in uses for name in ALL_SETTINGS):
        return _("This page uses none of these settings: they shape the other pages.")
    used = [_(SETTING_LABELS[name]) for name in ALL_SETTINGS if name in uses]
    return _("This page uses {used}. Not used here: {unused}.", used=_(", ").join(used), unused=_(", ").join(unused))


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


def page_not_found() -> None:
    """What a link to a page that does not exist opens: the sidebar, a sentence in the link's language, and the way
    to every page."""
    page_settings("not_found")
    st.title(_("Page not found"))
    st.info(
        _(
            "This link asks for a page called “{name}”, which the explorer does not have (a typo, or an old "
            "address). Its settings are kept: every page below opens with them.",
            name=requested_page() or "",
        ),
        icon=":material/explore_off:",
    )
    for entry in PAGES.values():
        page_link(entry.path, label=f"{_(entry.title)}: {_(entry.teaser)}", icon=entry.icon)


# --- internals ------------------------------------------------------------------------------------------------------
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


def _layer_controls() -> None:
    """The sidebar's layer settings, each a widget keyed by its setting's name."""
    state = st.session_state
    st.subheader(_("Layer settings"))
    st.pills(
        _("Variants"),
        VARIANTS,
        selection_mode="multi",
        key=_WIDGET["variants"],
        on_change=_on_change,
        format_func=str.upper,
        help=" · ".join(f"{v.upper()}: {variant_name(v)}" for v in VARIANTS),
    )
    _slider("d_model", D_MODEL_CHOICES)
    _slider("heads", heads_choices(state[_WIDGET["d_model"]]))
    _slider(
        "groups",
        groups_choices(state[_WIDGET["heads"]]),
        help=_("KV heads shared by the query heads; MHA uses one per head, MQA one in all."),
    )
    _slider(
        "latent",
        LATENT_CHOICES,
        help=_("kv_lora_rank: the width of the compressed KV vector MLA caches per token."),
    )
    head_dim = state[_WIDGET["d_model"]] // state[_WIDGET["heads"]]
    _slider(
        "rope_dim",
        rope_dim_choices(head_dim),
        help=_("qk_rope_head_dim: the position-carrying key shared by all heads."),
    )
    _slider("seq_len", SEQ_LEN_CHOICES)
    _slider("batch", BATCH_CHOICES)
    st.radio(_("Cache dtype"), DTYPE_CHOICES, key=_WIDGET["dtype"], horizontal=True, on_change=_on_change)
    st.number_input(_("Seed"), min_value=0, max_value=MAX_SEED, step=1, key=_WIDGET["seed"], on_change=_on_change)


def _slider(name: str, options: Iterable[object], help: str | None = None) -> None:
    st.select_slider(_(SLIDER_LABELS[name]), options=list(options), key=_WIDGET[name], on_change=_on_change, help=help)


def _store_in_widgets(settings: Settings) -> None:
    for name, value in settings.as_dict().items():
        st.session_state[_WIDGET[name]] = list(value) if name == "variants" else value


def _read_widgets() -> Settings:
    values = {name: st.session_state[key] for name, key in _WIDGET.items()}
    values["variants"] = tuple(values["variants"] or ())
    return Settings(**values)


HTML_LANG = {"en": "en", "zh": "zh-Hans"}


def _declare_language() -> None:
    """The page's language on <html lang>: screen readers pick their voice by it, browsers their fonts and
    hyphenation. Streamlit's document says "en" whatever the content."""
    lang = json.dumps(HTML_LANG[i18n.language()])
    st.html(
        f'<script>document.documentElement.lang = {lang};</script><span class="no-room" data-lang={lang}></span>',
        unsafe_allow_javascript=True,
    )


PHONE_LANGUAGE_KEY = "setting_lang_phone"


def _phone_language_switch() -> None:
    """The language switch again, at the top of the page, shown on narrow screens only (assets/app.css): a phone
    keeps the sidebar, and the sidebar's switch, folded away."""
    st.session_state[PHONE_LANGUAGE_KEY] = st.session_state[LANGUAGE_KEY]
    with st.container(key="phone-language"):
        st.segmented_control(
            _("Language"),
            tuple(LANGUAGES),
            format_func=LANGUAGES.__getitem__,
            key=PHONE_LANGUAGE_KEY,
            on_change=_language_from_phone,
            label_visibility="collapsed",
        )


def _language_from_phone() -> None:
    chosen = st.session_state.get(PHONE_LANGUAGE_KEY)
    st.session_state[LANGUAGE_KEY] = chosen if chosen in LANGUAGES else i18n.language()


def _keep_language() -> None:
    """The switch was clicked on the language already shown: a segmented control would then show none."""
    if st.session_state.get(LANGUAGE_KEY) not in LANGUAGES:
        st.session_state[LANGUAGE_KEY] = i18n.language()


def _on_change() -> None:
    """A control moved: move any setting it made invalid to its nearest valid value, and say so."""
    settings, notes = normalize(_read_widgets())
    _store_in_widgets(settings)
    st.session_state[_ADJUSTED] = notes


def _write_link(params: dict[str, str]) -> None:
    changed = False
    for name, text in params.items():
        if st.query_params.get_all(name) != [text]:  # also collapses a key the link repeated
            st.query_params[name] = text
            changed = True
    if _SHARE_PARAMS in st.session_state:
        st.session_state[_SHARE_PARAMS].update(params)  # and the JSON download, which is written when clicked
    if changed and _SHARE_BOX in st.session_state:
        if _LINK_SHOWN_AFTER in st.session_state:
            st.session_state[_LINK_SHOWN_AFTER] = True  # shown once the fragment returns (link_shown_after)
        else:
            _show_link(st.session_state[_SHARE_BOX])  # the page's own view settings join the link shown


@contextmanager
def link_shown_after() -> Iterator[None]:
    """Around a fragment's call in the page's full run: what its controls write to the link is shown in the share box
    once it returns, from the page, not from inside it. Streamlit's browser side failed on a fresh session's first run
    when a fragment redrew that box (outside the fragment) while the page's own run redrew it too ("Cannot set a node
    at a delta path": the whole page went blank). A fragment's own reruns (▶ Play) still redraw the box themselves."""
    st.session_state[_LINK_SHOWN_AFTER] = False
    try:
        yield
    finally:
        if st.session_state.pop(_LINK_SHOWN_AFTER, False) and _SHARE_BOX in st.session_state:
            _show_link(st.session_state[_SHARE_BOX])


def _current_link() -> str:
    base = (st.context.url or "").split("?")[0]
    return f"{base}?{urlencode(st.query_params.to_dict())}"


def _show_link(box: DeltaGenerator) -> None:
    link = _current_link()
    with box.container():
        show_verbatim(link)
        _warn_if_local(link)


def _warn_if_local(link: str) -> None:
    if share.points_at_this_machine(link):
        st.warning(
            _(
                "This link points at this computer (localhost): students' devices cannot open it. Share the hosted "
                "copy's address, or this computer's address on the network."
            ),
            icon=":material/computer:",
        )


def _qr_code() -> None:
    """The link as a QR code, large enough to scan from a projector's screen across a room."""
    link = _current_link()
    if (image := share.qr_data_uri(link)) is None:
        st.info(_("This link is too long for a QR code ({n} characters): shorten the page's text.", n=len(link)))
    else:
        alt = html.escape(_("QR code of the link: {link}", link=link))
        st.html(f'<img class="share-qr" src="{image}" alt="{alt}">')
    _warn_if_local(link)
    show_verbatim(link)


def _warn_about_link(notes: list[str]) -> None:
    if notes:
        st.warning(
            _("This link had settings that could not be used as they were:")
            + "\n\n"
            + "\n".join(f"- {n}" for n in notes)
        )


def _share_tools(settings: Settings) -> None:
    st.subheader(_("Share"))
    st.caption(_("This link opens exactly this view (same weights, inputs and numbers)."))
    st.session_state[_SHARE_BOX] = box = st.empty()  # redrawn as the page's own controls write to the link
    _show_link(box)
    # A dialog drawn on demand: a QR code takes too long to make for every press of every slider.
    # on_click, not the button's return value: a run that reruns itself (the pages/ folder fix) loses the latter.
    st.button(
        _("QR code for the class"),
        icon=":material/qr_code_2:",
        width="stretch",
        on_click=lambda: st.session_state.update({_SHOW_QR: True}),
    )
    if st.session_state.pop(_SHOW_QR, False):
        st.dialog(_("Scan to open this view"), width="large")(_qr_code)()  # titled in this run's language
    # Everything the link carries, the page's own view settings included (they are bound after this is drawn, so
    # the dict is filled in as they write to the link, and the JSON is written when the button is clicked).
    params = st.session_state[_SHARE_PARAMS] = settings.to_link() | {LINK_PARAM: i18n.language()}
    st.download_button(
        _("Settings as JSON"),
        lambda: json.dumps(params, indent=2),
        file_name="attention-explorer-settings.json",
        mime="application/json",
        on_click="ignore",
        width="stretch",
        help=_("The settings and this page's own choices: what the link reproduces."),
    )


__all__ = [
    "SETTINGS_KEY",
    "SLIDER_LABELS",
    "bound",
    "follow",
    "link_query",
    "link_shown_after",
    "page_link",
    "page_not_found",
    "page_settings",
    "text_box",
]
