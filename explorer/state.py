"""The shared settings in the sidebar: read from the link on a session's first run (with a note on anything it could
not use), drawn as widgets (with the language switch, the share box and the symbols), and written back to the link.
page_settings() is every page's first call.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import streamlit as st
import torch

from attn_core import VARIANTS

from . import i18n, language_switch, share
from .glossary import design_name, glossary_markdown, variant_name
from .i18n import LANGUAGES, LINK_PARAM, N_, _
from .kinds.registry import KINDS
from .link import write_link
from .navigation import use_language
from .pages import ALL_SETTINGS, DESIGN_SETTINGS, PAGES, PageEntry
from .params import shown
from .present import use_presenter
from .settings import (
    BATCH_CHOICES,
    CHUNK_CHOICES,
    D_MODEL_CHOICES,
    DESIGNS,
    DTYPE_CHOICES,
    LATENT_CHOICES,
    MAX_SEED,
    RATE_CHOICES,
    SEQ_LEN_CHOICES,
    SINK_CHOICES,
    STATE_DIM_CHOICES,
    TOPK_CHOICES,
    WINDOW_CHOICES,
    Settings,
    bits_choices,
    from_link,
    groups_choices,
    heads_choices,
    normalize,
    rope_dim_choices,
    version_note,
)

SETTINGS_KEY = "settings"
APP_CSS = (Path(__file__).resolve().parents[1] / "assets" / "app.css").read_text(encoding="utf-8")
_WIDGET = {name: f"setting_{name}" for name in Settings().as_dict()}  # setting name -> widget key
_LINK_READ = "_link_read"
_ADJUSTED = "_adjusted_notes"


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
    write_link(settings.to_link() | {LINK_PARAM: i18n.language()})
    with st.sidebar:
        share.share_tools(settings)
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
    language_switch.phone_switch()
    share.forget_last_run()


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
    else:
        # Streamlit keys a widget's value by the page that drew it: the same sliders on the next page would start
        # from their minimums. Writing the values back before drawing carries them to whichever page runs now.
        # Widget state is dropped for a widget a run did not draw (a page that reads no designs draws no knobs):
        # those settings come from the session's last ones.
        _store_in_widgets(_read_widgets())


def _sidebar_controls(page: PageEntry | None) -> None:
    """The language switch and the layer settings the page reads (none on a page that reads none)."""
    language_switch.sidebar_switch()
    if page is not None and not page.uses:
        # A page that reads none of them shows none: seven sliders that do nothing there would only mislead.
        # Their values stay in the session and the link for the other pages.
        st.caption(_("This page runs the trained model as it is: the layer settings are on the other pages."))
    else:
        _layer_controls()
        if page is not None and (cue := settings_cue(page.uses)):
            st.caption(cue)
        if page is None or "designs" in page.uses:
            _design_controls(DESIGN_SETTINGS if page is None else page.uses)
    for note in st.session_state.pop(_ADJUSTED, []):
        st.info(note, icon="↪️")


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
    "window": N_("Window (W, tokens)"),
    "sinks": N_("Kept first tokens (n_s)"),
    "topk": N_("Tokens read (top-k, DSA)"),
    "rate": N_("Compression rate (m, tokens per entry)"),
    "state_dim": N_("State key width (d_k, linear)"),
    "bits": N_("Bits per cached number"),
    "chunk": N_("Chunk (C, tokens)"),
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


def _design_controls(uses: tuple[str, ...]) -> None:
    """The designs after MLA to show beside the variants, and the knobs of the designs chosen."""
    state = st.session_state
    st.subheader(_("Designs after MLA"))
    st.pills(
        _("Designs"),
        DESIGNS,
        selection_mode="multi",
        key=_WIDGET["designs"],
        on_change=_on_change,
        format_func=design_name,
        help=" · ".join(f"{design_name(d)}: {_(KINDS[d].help)}" for d in DESIGNS),
    )
    read = {knob for name in state[_WIDGET["designs"]] or () for knob in KINDS[name].knobs}
    head_dim = state[_WIDGET["d_model"]] // state[_WIDGET["heads"]]
    choices = {
        "window": WINDOW_CHOICES,
        "sinks": SINK_CHOICES,
        "topk": TOPK_CHOICES,
        "rate": RATE_CHOICES,
        "state_dim": STATE_DIM_CHOICES,
        "bits": bits_choices(head_dim),
        "chunk": CHUNK_CHOICES,
    }
    for knob, options in choices.items():
        if knob in read and knob in uses:
            _slider(knob, options)


def _slider(name: str, options: Iterable[object], help: str | None = None) -> None:
    st.select_slider(_(SLIDER_LABELS[name]), options=list(options), key=_WIDGET[name], on_change=_on_change, help=help)


def _store_in_widgets(settings: Settings) -> None:
    for name, value in settings.as_dict().items():
        st.session_state[_WIDGET[name]] = list(value) if name in ("variants", "designs") else value


def _read_widgets() -> Settings:
    """The settings the widgets hold; a setting whose widget the last run did not draw, the session's last value."""
    state = st.session_state
    last = state.get(SETTINGS_KEY, Settings()).as_dict()
    values = {name: state[key] if key in state else last[name] for name, key in _WIDGET.items()}
    values["variants"] = tuple(values["variants"] or ())
    values["designs"] = tuple(values["designs"] or ())
    return Settings(**values)


def _on_change() -> None:
    """A control moved: move any setting it made invalid to its nearest valid value, and say so."""
    settings, notes = normalize(_read_widgets())
    _store_in_widgets(settings)
    st.session_state[_ADJUSTED] = notes


def _warn_about_link(notes: list[str]) -> None:
    if notes:
        st.warning(
            _("This link had settings that could not be used as they were:")
            + "\n\n"
            + "\n".join(f"- {n}" for n in notes)
        )
