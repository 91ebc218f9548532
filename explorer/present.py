"""Presenter mode: `present=1` in any link shows the page for a 1024x768 projector.

One place for it: explorer.state.page_settings calls use_presenter() on every page, and explorer.charts.show_chart
passes every figure through for_projector(). Body text and chart fonts are about twice their size, the sidebar starts
collapsed, Streamlit's toolbar and footer are hidden (assets/present.css), and `present=1` stays in the link.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from .params import Flag

PRESENT = Flag("present", False)
FONT_SCALE = 2.0  # chart fonts, as the body text (assets/present.css)
# A lesson step is a slide: its chart shares the screen with the step's title, words and question, so its fonts grow
# less (the chart is sized to what the slide leaves, explorer.lesson.views.slide_height)
SLIDE_FONT_SCALE = 1.5
MIN_TEXT_PX = 14  # nothing on a presented chart is drawn smaller: read from the back row
# Grey labels (tick labels, axis titles, notes) darkened on a projector, whose light greys wash out
PRESENT_GREY = "#464a57"
MIN_HEIGHT = 400  # a short chart (one decode step's few rows) leaves its colour bar no room for doubled tick labels
TITLE_SIZE = 16  # a chart title's size in explorer.charts.PLOTLY_TEMPLATE
HEIGHT_SCALE = 1.35  # a chart's height: doubled fonts need room, and a 768-px screen must still show the chart whole
PRESENT_CSS = (Path(__file__).resolve().parents[1] / "assets" / "present.css").read_text(encoding="utf-8")
_STATE = "_presenting"


def use_presenter() -> bool:
    """Read `present` from the link once per session, keep it in the link, and style the page for a projector when
    on. A garbled value reads as off (a link without it is the usual page)."""
    state = st.session_state
    if _STATE not in state:
        raw = st.query_params.get(PRESENT.name)
        state[_STATE] = PRESENT.parse(raw)[0] if raw is not None else False
    on = bool(state[_STATE])
    if on:
        st.set_page_config(initial_sidebar_state="collapsed")
        st.html(f"<style>{PRESENT_CSS}</style>")
        if st.query_params.get(PRESENT.name) != "1":
            st.query_params[PRESENT.name] = "1"
    return on


def presenting() -> bool:
    """Whether this session shows pages for a projector (False outside a session: a script, a module's test)."""
    try:
        return bool(st.session_state.get(_STATE, False))
    except Exception:
        return False


def present_query() -> dict[str, str]:
    """What a link to another view adds to keep presenter mode: {"present": "1"} when on, else nothing."""
    return {PRESENT.name: "1"} if presenting() else {}


def for_projector(
    spec: dict, scale: float = FONT_SCALE, *, height: int | None = None, greys: frozenset[str] = frozenset()
) -> dict:
    """A figure dict with every font size (layout, traces, frames, template) times scale, none under MIN_TEXT_PX,
    font colours in greys darkened to PRESENT_GREY, and its height raised (or set: a slide's chart, sized to what the
    slide leaves): a copy, since figures are cached."""
    scaled = _scaled(spec, scale, greys)
    layout = dict(scaled.get("layout") or {})
    panels = sum(1 for name in layout if name.startswith("xaxis"))
    if height is None:
        # A grid of panels keeps its gaps as shares of its height: doubled labels need it doubled to stay apart.
        height = max(round((layout.get("height") or 450) * (scale if panels > 1 else HEIGHT_SCALE)), MIN_HEIGHT)
    layout["height"] = height
    margin = layout.get("margin")
    if isinstance(margin, dict):
        layout["margin"] = projected_margins(margin, scale)
    # A slider's or a button row's pad keeps it clear of text drawn above it (the mapping chart's cache text): in px,
    # so it grows with that text's fonts
    for control in ("sliders", "updatemenus"):
        if isinstance(layout.get(control), list):
            layout[control] = [_padded(item, scale) for item in layout[control]]
    title = layout.get("title")
    title = {"text": title} if isinstance(title, str) else title
    if isinstance(title, dict) and title.get("text") and not (title.get("font") or {}).get("size"):
        # sized by the template otherwise, which the top margin (charts.title_below_toolbar) would not see
        layout["title"] = {**title, "font": {**(title.get("font") or {}), "size": round(TITLE_SIZE * scale)}}
    return {**scaled, "layout": layout}


def projected_margins(margin: dict[str, Any], scale: float) -> dict[str, Any]:
    """A figure's margins (px by side) as for_projector draws them at scale; what a layout sized for a slide reads
    (explorer.heatmaps.panels.slide_columns, explorer.lesson.after_mla_figures.grid_on_a_slide). Margins hold labels:
    the top one titles (the chart's, subplots' above the top row), scaled as they are; the others tick labels, which
    Plotly's automargin widens as needed, so they grow by half as much and leave the plot its room."""
    grow = {"t": scale, "b": (1 + scale) / 2, "l": (1 + scale) / 2, "r": (1 + scale) / 2}
    return {side: _times(value, grow[side]) if side in grow else value for side, value in margin.items()}


def _padded(control: Any, scale: float) -> Any:
    pad = control.get("pad") if isinstance(control, dict) else None
    if not isinstance(pad, dict):
        return control
    return {**control, "pad": {side: _times(value, scale) for side, value in pad.items()}}


def _scaled(value: Any, scale: float, greys: frozenset[str], font: bool = False) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if font and key == "size":
                out[key] = _times(item, scale, least=MIN_TEXT_PX)
            elif font and key == "color" and isinstance(item, str) and item.lower() in greys:
                out[key] = PRESENT_GREY
            else:
                out[key] = _scaled(item, scale, greys, font=key.endswith("font") and isinstance(item, dict))
        return out
    if isinstance(value, list):
        return [_scaled(item, scale, greys) for item in value]
    return value


def _times(size: object, scale: float, least: float = 0) -> object:
    if isinstance(size, (int, float)) and not isinstance(size, bool):
        return max(round(size * scale, 1), least)
    if isinstance(size, list):
        return [_times(s, scale, least) for s in size]
    return size
