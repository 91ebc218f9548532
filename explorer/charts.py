"""How every chart reaches the page: Plotly's toolbar kept visible (PNG export), a caption saying what to notice,
and the chart's numbers as a CSV download, so a teacher can take both away."""

from __future__ import annotations

import base64
import csv
import functools
import io
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly
import plotly.graph_objects as go
import plotly.io
import streamlit as st
import streamlit.components.v1 as components_v1
from streamlit.delta_generator import DeltaGenerator

from .i18n import N_, _, language
from .labels import display_width, is_wide
from .present import FONT_SCALE, MIN_TEXT_PX, SLIDE_FONT_SCALE, for_projector, presenting

PLOTLY_CONFIG: dict[str, Any] = {
    "displayModeBar": True,  # always shown, not only on hover: the camera icon saves a PNG
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},
    "showSendToCloud": False,  # plotly.js would offer to upload the chart to Plotly's cloud: nothing leaves the app
    # No selection is read back from a chart; without these the toolbar fits a chart in a narrow column in one row
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
}


# Tools left out in presenter mode (present=1): the camera, zoom, reset and full screen stay.
PRESENTER_REMOVES = ["zoomIn2d", "zoomOut2d", "autoScale2d", "pan2d"]


# plotly.js's own words a reader meets (its toolbar's tooltips, its notices), translated like ours: plotly.js looks
# each up by its English text in the config's locale dictionary.
PLOTLY_WORDS = (
    N_("Download plot as a PNG"),
    N_("Zoom"),
    N_("Pan"),
    N_("Zoom in"),
    N_("Zoom out"),
    N_("Autoscale"),
    N_("Reset axes"),
    N_("Preparing image - this may take a few seconds"),
    N_("Image download succeeded"),
    N_("Sorry, there was a problem downloading your image!"),
    N_("Double-click to zoom back out"),
    N_("Double-click on legend to isolate one trace"),
)


def plotly_locale() -> dict:
    """Plotly's config for this run's language: its own words translated (nothing to add in English)."""
    lang = language()
    if lang == "en":
        return {}
    return {"locale": lang, "locales": {lang: {"dictionary": {word: _(word) for word in PLOTLY_WORDS}}}}


# plotly.js built with only the traces the charts draw (scatter, bar, heatmap: assets/plotly-build, `make plotly`), at
# the release the plotly package bundles and validates the figures against (tests/app/test_charts.py checks the two
# agree). A new visit's main thread evaluates it before the first chart: the full bundle and the cartesian one (every
# 2-D trace) took several times as long (benchmarks/MEASUREMENTS.md). Served by Streamlit from assets/plotly: nothing
# fetched from elsewhere. Declared as a component only for the files it serves; never mounted.
PLOTLY_JS_FILES = components_v1.declare_component(
    "plotly_js", path=str(Path(__file__).resolve().parents[1] / "assets" / "plotly")
)
# A chart that is updated in place when its figure changes, drawn one chart per frame (see live_chart.js).
LIVE_CHART_NAME = "attention_explorer.live_chart"
LIVE_CHART = st.components.v2.component(
    LIVE_CHART_NAME,
    js=(Path(__file__).parent / "live_chart.js").read_text(encoding="utf-8"),
    isolate_styles=False,  # in the page's own DOM: Plotly's hover and toolbar styles are global
)


def plotly_js_url() -> str:
    """The path the browser loads plotly.js from, under the server's base URL path."""
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{'/' + base if base else ''}/component/{PLOTLY_JS_FILES.name}/plotly-scatter-bar-heatmap.min.js"


def typed_array(values: np.ndarray) -> dict:
    """A float32 array in Plotly's binary JSON form, as Figure.to_dict() gives it: little-endian bytes in base64 with
    dtype and shape (NaN stays NaN: a gap in the heatmap)."""
    array = np.ascontiguousarray(values, dtype="<f4")
    encoded = {"dtype": "f4", "bdata": base64.b64encode(array.tobytes()).decode("ascii")}
    if array.ndim > 1:
        encoded["shape"] = ", ".join(str(n) for n in array.shape)
    return encoded


# Streamlit's chart colours in a light theme: its series colours, its grey for labels and its grid lines
STREAMLIT_COLORWAY = [
    "#0068c9",
    "#83c9ff",
    "#ff2b2b",
    "#ffabab",
    "#29b09d",
    "#7defa1",
    "#ff8700",
    "#ffd16a",
    "#6d3fc0",
    "#d5dae5",
]
CHART_GREY, CHART_GRID = "#808495", "#e6eaf1"
# The light greys of labels and notes (the template's and the mapping chart's), darkened on a projector
LIGHT_GREYS = frozenset({CHART_GREY, "#6f7a85"})
CHART_FONT = '"Source Sans", sans-serif'  # Streamlit's sans-serif body font


def _chart_template() -> dict:
    """The look Streamlit's chart theme gives a Plotly chart in this app's theme (.streamlit/config.toml), as a
    template every figure carries: the charts are drawn by plotly.js itself (LIVE_CHART), which Streamlit's theming
    never reaches, and that theming ran in the browser at every redraw of every chart (benchmarks/MEASUREMENTS.md)."""
    background = st.get_option("theme.backgroundColor") or "#ffffff"
    text = st.get_option("theme.textColor") or "#31333f"
    axis = _axis_look()
    return {
        "layout": {
            "font": {"color": CHART_GREY, "family": CHART_FONT, "size": 12},
            "title": {
                "font": {"family": CHART_FONT, "size": 16, "color": text, "weight": "bold"},
                "x": 0,
                "xanchor": "left",
            },
            "paper_bgcolor": background,
            "plot_bgcolor": background,
            "colorway": list(STREAMLIT_COLORWAY),
            "xaxis": axis
            | {
                "showgrid": False,
                "zeroline": False,
                "title": {"font": {"color": CHART_GREY, "size": 14}, "standoff": 20},
            },
            "yaxis": axis
            | {"ticklabelposition": "outside", "title": {"font": {"color": CHART_GREY, "size": 14}, "standoff": 24}},
            "margin": {"pad": 8, "r": 0, "l": 0},
            "hoverlabel": {
                "bgcolor": background,
                "bordercolor": "rgba(34, 37, 43, 0.2)",
                "font": {"color": CHART_GREY, "family": CHART_FONT, "size": 12},
            },
            "legend": _legend_look(text),
            "coloraxis": {"colorbar": _colorbar_look()},
        },
        "data": {"scatter": [{"marker": {"line": {"width": 0}}, "type": "scatter"}]},
    }


def _axis_look() -> dict:
    """What both axes share: Streamlit's grid lines and grey tick labels, margins grown to fit the labels."""
    return {
        "gridcolor": CHART_GRID,
        "zerolinecolor": CHART_GRID,
        "tickcolor": CHART_GRID,
        "minor": {"gridcolor": CHART_GRID},
        "tickfont": {"color": CHART_GREY, "size": 12},
        "automargin": True,
    }


def _legend_look(text: str) -> dict:
    return {
        "title": {"font": {"size": 12, "color": CHART_GREY}, "side": "top"},
        "valign": "top",
        "bordercolor": "rgba(0, 0, 0, 0)",
        "borderwidth": 0,
        "font": {"size": 12, "color": text},
    }


def _colorbar_look() -> dict:
    return {
        "thickness": 16,
        "xpad": 24,
        "ticklabelposition": "outside",
        "outlinecolor": "rgba(0, 0, 0, 0)",
        "outlinewidth": 8,
        "len": 0.75,
        "title": {"font": {"color": CHART_GREY, "size": 14}},
        "tickfont": {"color": CHART_GREY, "size": 12},
    }


PLOTLY_TEMPLATE = _chart_template()


def preload_plotly() -> None:
    """Start loading plotly.js as the page begins. The first chart asked for it only when it was mounted, after the
    page's other elements: on a new visit it came long after the chart's data had (benchmarks/MEASUREMENTS.md). The chart then takes the same promise (live_chart.js). The span keeps the element from taking
    room (assets/app.css)."""
    url = json.dumps(plotly_js_url())
    st.html(
        "<script>(() => { if (window.__explorerPlotly || window.Plotly) return;"
        " window.__explorerPlotly = new Promise((resolve, reject) => {"
        " const script = document.createElement('script'); script.src = " + url + "; script.async = true;"
        " script.onload = () => resolve(window.Plotly); script.onerror = () => reject(new Error(" + url + "));"
        " document.head.appendChild(script); }); })();</script>"
        '<span class="no-room"></span>',
        unsafe_allow_javascript=True,
    )


def csv_text(rows: Sequence[dict]) -> str:
    """rows (dicts with the same keys) as CSV text."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _chart_config(name: str) -> tuple[dict, int]:
    """Plotly's config for the chart `name` (its PNG named after it, the run's locale), and the least heatmap cell
    text in px (0: Plotly's own)."""
    to_image = dict(PLOTLY_CONFIG["toImageButtonOptions"], filename=name)
    config = PLOTLY_CONFIG | {"toImageButtonOptions": to_image} | plotly_locale()
    least = 0
    if presenting():  # one row of tools, clear of the larger title, on a projector's half-width column
        config["modeBarButtonsToRemove"] = [*PLOTLY_CONFIG["modeBarButtonsToRemove"], *PRESENTER_REMOVES]
        least = MIN_TEXT_PX  # numbers Plotly fits into heatmap cells smaller than this are left to the hover
    return config, least


def show_chart(
    fig: go.Figure | dict,
    *,
    name: str,
    rows: Sequence[dict] | Callable[[], str],
    caption: str,
    slide_height: int | None = None,
    caption_place: DeltaGenerator | None = None,
) -> None:
    """Draw fig (a Figure, or a figure dict built by hand, sent as it is: the tests validate those with Plotly) with
    its caption and a CSV download of rows (the numbers it plots), or of a callable giving their CSV text. The CSV is
    written when the button is clicked, not on every rerun. name keys the widgets and the chart, which is updated in
    place when its figure changes (LIVE_CHART). Every chart is drawn in PLOTLY_TEMPLATE, set here.

    In presenter mode, slide_height draws the chart as a slide's (exactly that tall, its fonts scaled by
    SLIDE_FONT_SCALE); caption_place puts the caption and the CSV button there rather than under the chart."""
    # A Figure goes as its dict too: setting the template dict on it with update_layout validated the whole
    # template in every rerun
    spec = fig if isinstance(fig, dict) else fig.to_dict()
    # How to draw the chart narrow, if the figure says ({"below": px, "layout": a phone's layout, "unlabelled": its
    # points without their text labels, "textposition": per trace, its labels' places or None}, each optional but
    # "below"): sent beside the figure, and the browser draws it
    # so where the chart is narrower than that (live_chart.js)
    narrow = spec.get("narrow")
    spec = {key: value for key, value in spec.items() if key != "narrow"}
    shown = _as_drawn(spec, slide_height, present=presenting())
    narrow = _narrow(spec, narrow, slide_height)
    config, least = _chart_config(name)
    # Plotly's own JSON writer (numpy arrays, NaN), without building Plotly's object tree for a dict: that costs
    # milliseconds a chart for figures of many heatmaps, every rerun
    figure = plotly.io.to_json(shown, validate=False)
    said = {
        "unloaded": _("The chart library (plotly.js) did not load: reload the page."),
        "failed": _("This chart could not be drawn ({error})."),
        "fullscreen": _("Full screen"),
    }
    label = chart_description(shown["layout"], caption)
    narrow_json = plotly.io.to_json(narrow, validate=False) if narrow else "null"
    payload = (
        f'{{"plotly": {json.dumps(plotly_js_url())}, "label": {json.dumps(label, ensure_ascii=False)}, '
        f'"said": {json.dumps(said, ensure_ascii=False)}, "config": {json.dumps(config)}, "narrow": {narrow_json}, '
        f'"leastCellText": {least}, '
        f'"figure": {figure}}}'
    )
    LIVE_CHART(key=f"chart_{name}", data=payload.encode("utf-8"))
    # A row that does not wrap: the caption takes what the button leaves, and the button keeps its label whole (as a
    # column of a fixed share it shrank to "C" in a chart's half of a projector's width).
    row = (caption_place or st).container(horizontal=True, wrap=False, vertical_alignment="center")
    row.caption(caption)
    row.download_button(
        "CSV",
        rows if callable(rows) else functools.partial(csv_text, rows),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"csv_{name}",
        on_click="ignore",
        help=_("The numbers this chart plots"),
        width="content",
    )


def chart_description(layout: dict, caption: str) -> str:
    """The chart's text alternative, for a screen reader (it cannot read the plot): its title and what its caption
    says, as plain text (no Plotly tags, no Markdown marks)."""
    title = layout.get("title")
    title = title.get("text", "") if isinstance(title, dict) else title or ""
    plain = [re.sub(r"<br\s*/?>", " ", part) for part in (str(title), caption)]
    plain = [re.sub(r"<[^>]+>|\*\*|`|\$", "", part) for part in plain]
    parts = [" ".join(part.split()).rstrip(".。") for part in plain if part.strip()]
    stop = "。" if language() == "zh" else ". "
    return stop.join(parts) + stop.strip() if parts else ""


def _as_drawn(spec: dict, slide_height: int | None = None, *, present: bool = False) -> dict:
    """The figure as it is sent: in PLOTLY_TEMPLATE, fonts scaled for a projector when present (as a slide's,
    slide_height tall, if given), the title below the toolbar."""
    spec = {**spec, "layout": {**spec.get("layout", {}), "template": PLOTLY_TEMPLATE}}
    if present and slide_height:  # a lesson's step on a projector: the chart fits what the slide leaves
        spec = for_projector(spec, SLIDE_FONT_SCALE, height=slide_height, greys=LIGHT_GREYS)
        spec = as_slide(spec)
    elif present:  # present=1: fonts about twice their size for a projector
        spec = for_projector(spec, greys=LIGHT_GREYS)
    return {**spec, "layout": with_unmeasured_tick_labels(title_below_toolbar(spec["layout"]))}


def _narrow(spec: dict, own: dict | None, slide_height: int | None) -> dict | None:
    """What live_chart.js draws where the chart is narrow ("below" px) or, in presenter mode, the screen a phone's."""
    present = presenting()
    narrow = None
    if own:
        narrow = {
            "below": own["below"],
            "layout": _as_drawn({**spec, "layout": own["layout"]}, slide_height, present=present)["layout"]
            if "layout" in own
            else None,
            "unlabelled": bool(own.get("unlabelled")),
            "textposition": own.get("textposition"),
            "frameLayouts": own.get("frameLayouts"),
        }
    if not present:
        return narrow
    usual = narrow or {"below": 0, "layout": None, "unlabelled": False, "textposition": None}
    return {**usual, "phone": _on_a_phone(spec, own, slide_height)}


# Presenter mode opened on a phone (a class link sent with present=1): under this screen width the page drops the
# projector's sizes (assets/present.css), and each chart is drawn at its usual size, as on the usual page.
PRESENTER_SCREEN_FROM = 641


def _on_a_phone(spec: dict, narrow: dict | None, slide_height: int | None) -> dict:
    """How a presented chart is drawn on a screen under PRESENTER_SCREEN_FROM px: its usual layout (its own phone
    layout if it has one), its traces' fonts divided back by the projector's scale in the browser ("unscale")."""
    own = narrow or {}
    layout = own.get("layout", spec.get("layout", {}))
    return {
        "screenBelow": PRESENTER_SCREEN_FROM,  # the window's width: a projector's half-width column is narrow too
        "layout": _as_drawn({**spec, "layout": layout})["layout"],
        "unlabelled": bool(own.get("unlabelled")),
        "textposition": own.get("textposition"),
        "frameLayouts": own.get("frameLayouts"),
        "unscale": SLIDE_FONT_SCALE if slide_height else FONT_SCALE,
    }


def fixed_place() -> DeltaGenerator:
    """A place for what a run may or may not show (a note on a capped input or pooled cells, a section that can be
    blocked): one element of the page whatever it holds, so the charts and controls after it keep their places from
    run to run. Streamlit hides a keyed element (a chart, a control) that a rerun has moved until the rerun reaches
    it: a chart would vanish for a moment, the page jump, and the chart be laid out anew."""
    return st.container()


TOOLBAR_PX = 30  # the height of Plotly's always-visible toolbar row at the top right of a chart


def with_unmeasured_tick_labels(layout: dict) -> dict:
    """The layout with every axis's tick labels never measured for overflow (unless the chart says otherwise).

    Plotly's default (ticklabeloverflow "hide past div") measures every tick label in the page with
    getBoundingClientRect at every redraw, to hide those past the chart's edge: on the heatmaps page a fifth of the
    browser's time per key press. Margins stay Plotly's to grow (automargin): fixed
    margins saved as much again but put axis titles on wide tick labels (tests/browser/test_layout.py checks both).
    A copy: figures are cached.
    """
    axes = {name for name in layout if name.startswith(("xaxis", "yaxis"))} | {"xaxis", "yaxis"}
    return {**layout, **{name: {"ticklabeloverflow": "allow", **(layout.get(name) or {})} for name in axes}}


def title_below_toolbar(layout: dict) -> dict:
    """The layout with its title seated just above the plot, so the always-visible toolbar (top right of the chart)
    never covers it on a narrow screen, and a top margin that leaves room for both. The title goes whole (its own
    lines kept): Plotly does not wrap, and only the browser knows the chart's width, so live_chart.js breaks it there
    and grows the margin by the lines it adds. A copy: figures are cached."""
    title = layout.get("title")
    if not title or not (title.get("text") if isinstance(title, dict) else title):
        return layout
    title = dict(title) if isinstance(title, dict) else {"text": title}
    # Hung from the top of the chart below the toolbar's row, and the plot pushed down by the title's lines: a title
    # stood on the plot's top edge instead (yanchor bottom) lets Plotly's second line fall onto the plot.
    height = layout.get("height") or 450  # Streamlit's default height for a chart that sets none
    size = (title.get("font") or {}).get("size", 17)
    # Plotly hangs a title by its first line's middle rather than its top: half a line more keeps it off the toolbar
    # (more for a larger title: presenter mode's doubled fonts).
    below = TOOLBAR_PX + max(14, round(size * 0.8))
    title.update(yref="container", y=1 - below / height, yanchor="top")
    title.pop("pad", None)
    lines = title["text"].count("<br>") + 1
    margin = dict(layout.get("margin") or {})
    margin["t"] = max(margin.get("t", 0), below + round(lines * size * 1.3) + 12)
    return {**layout, "title": title, "margin": margin}


PHRASE_SLACK = 0.5  # a phrase's break may be this share of half the text off its middle


def in_two_lines(text: str) -> str:
    """text broken into two lines near its middle (Plotly does not wrap), unless it has lines already."""
    if "<br>" in text:
        return text
    middle = display_width(text) / 2
    # A line may break at a space, or between two Chinese characters (Chinese puts no spaces between words).
    cuts = [i for i, ch in enumerate(text) if i and (ch in " （" or (is_wide(text[i - 1]) and is_wide(ch)))]
    if not cuts:
        return text
    # Before a bracket or after a comma or colon first, near enough the middle: between two characters may be inside
    # a Chinese word ("缓<br>存")
    phrases = [
        i
        for i in cuts
        if text[i] in "（(" or text[i - 1] in "，、：；,:;" or (text[i] == " " and text[i + 1 : i + 2] in ("(", "（"))
    ]
    near = [i for i in phrases if abs(display_width(text[:i]) - middle) <= PHRASE_SLACK * middle]
    cut = min(near or cuts, key=lambda i: abs(display_width(text[:i]) - middle))
    return text[:cut] + "<br>" + text[cut:].removeprefix(" ")


LEGEND_ROW = 1.9  # a legend entry's height in its font's size, as drawn (the line and the gap to the next)
SLIDE_LEGEND_PX = round(12 * SLIDE_FONT_SCALE)  # the template's legend text on a slide


def as_slide(spec: dict) -> dict:
    """A slide's figure (wide and short: explorer.lesson in presenter mode): a legend laid below the plot stands at its
    right instead, where the slide has room, and bar labels keep their size (Plotly shrinks a label to fit its bar:
    the short bars of a short chart took them under MIN_TEXT_PX). A y axis title longer than its plot is tall is
    broken where the plot's height is known, in the browser (live_chart.js). A copy: figures are cached."""
    layout = dict(spec["layout"])
    legend = layout.get("legend")
    if isinstance(legend, dict) and legend.get("orientation") == "h" and (legend.get("y") or 0) < 0:
        layout["legend"] = {**legend, "orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"}
        entries = sum(1 for t in spec.get("data") or [] if t.get("showlegend") is not False and t.get("name"))
        height = layout.get("height") or 450
        below_title = height - ((layout.get("margin") or {}).get("t") or 0)
        if entries * LEGEND_ROW * SLIDE_LEGEND_PX > below_title:
            # a column of names at the slide's size runs past the chart's foot (step 22's 13 published models): the
            # least size a projector reads, entries closer together, and the column placed in the chart's pixels,
            # from under the toolbar (beside the title) down to the chart's foot at most. Beside the plot, it
            # scrolled at the plot's height, its last names out of sight.
            font = {**(legend.get("font") or {}), "size": MIN_TEXT_PX}
            layout["legend"] |= {"font": font, "tracegroupgap": 0, "maxheight": height - TOOLBAR_PX}
            layout["legend"] |= {"xref": "container", "x": 1, "xanchor": "right"}
            layout["legend"] |= {"yref": "container", "y": 1 - TOOLBAR_PX / height}

    def whole_labels(traces: list) -> list:
        return [{**t, "constraintext": "none"} if t.get("type") == "bar" and t.get("text") else t for t in traces]

    out = {**spec, "layout": layout, "data": whole_labels(spec.get("data") or [])}
    if spec.get("frames"):
        out["frames"] = [{**frame, "data": whole_labels(frame.get("data") or [])} for frame in spec["frames"]]
    return out


# One colour per variant, on every page.
VARIANT_COLORS = {"mha": "#3b6ea8", "mqa": "#c4573a", "gqa": "#4a9a6b", "mla": "#8a5cb8"}
# (the designs after MLA's colours are their kinds', explorer/kinds/, apart from these)

BYTE_UNITS = (("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3), ("TiB", 1024**4))
FLOP_UNITS = (("FLOP", 1), ("kFLOP", 1e3), ("MFLOP", 1e6), ("GFLOP", 1e9), ("TFLOP", 1e12))


def log_bytes_axis(low: float, high: float, *, most_ticks: int = 9) -> dict:
    """A log axis of bytes from below `low` to above `high`, ticked at powers of two in binary units (1 MiB, 4 MiB,
    ...: every 2nd or 4th power when the span is wide, so at most about `most_ticks` ticks), never Plotly's SI "B"
    (billion)."""
    low, high = max(low, 1.0), max(high, low * 2)
    first, last = int(np.floor(np.log2(low))), int(np.ceil(np.log2(high)))
    stride = next(stride for stride in (1, 2, 4, 8, 16) if (last - first) / stride < most_ticks or stride == 16)
    powers = [k for k in range(first - 1, last + 2) if k % stride == 0]
    text = []
    for k in powers:
        unit, size = next((name, size) for name, size in reversed(BYTE_UNITS) if 2**k >= size or size == 1)
        text.append(f"{2**k / size:g} {unit}")
    return {
        "type": "log",
        "tickvals": [float(2**k) for k in powers],
        "ticktext": text,
        "range": [float(np.log10(low / 1.6)), float(np.log10(high * 1.6))],
    }


def unit_axis(highest: float, units: Sequence[tuple[str, float]] = BYTE_UNITS, *, ticks: int = 5) -> dict:
    """A linear axis from 0 that holds `highest`, with ticks labelled in one unit of `units` (as the values are sent:
    bytes or FLOPs, so hover and CSV stay exact). Plotly's own labels would use SI letters: "8B" meaning 8 billion
    bytes beside labels in GiB. The unit is the largest that keeps the top tick at 1 or more; steps are 1, 2, 2.5 or 5
    times a power of ten in that unit. Returns tickvals, ticktext and range for a plotly axis dict."""
    highest = max(float(highest), 1.0)
    name, size = next(((n, s) for n, s in reversed(units) if highest >= s), units[0])
    top = highest / size
    raw = top / max(ticks - 1, 1)
    power = 10 ** np.floor(np.log10(raw)) if raw > 0 else 1
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if size == 1:
        step = max(step, 1)  # no fractional bytes or FLOPs
    count = int(np.ceil(top / step - 1e-9))
    values = [i * step for i in range(count + 1)]
    text = [
        f"{v:,.{0 if float(step).is_integer() else (1 if float(step * 10).is_integer() else 2)}f} {name}"
        for v in values
    ]
    tickvals = [float(v * size) for v in values]
    return {"tickvals": tickvals, "ticktext": text, "range": [0.0, tickvals[-1]]}


def count_axis(highest: int, *, ticks: int = 8) -> dict:
    """Ticks for an axis of whole things (tokens, steps): whole-number steps of 1, 2 or 5 times a power of ten, so a
    short range never shows "0.2 tokens"."""
    raw = max(highest, 1) / ticks
    power = 10 ** int(np.floor(np.log10(raw))) if raw >= 1 else 1
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return {"tickmode": "linear", "tick0": 0, "dtick": max(int(step), 1)}


def shape_text(shape: tuple[int, ...] | tuple[tuple[int, ...], ...]) -> str:
    """A tensor shape as [2, 8, 16, 64]; several shapes joined with "and"."""
    if shape and isinstance(shape[0], tuple):
        return _(" and ").join(shape_text(s) for s in shape)
    return "[" + ", ".join(str(n) for n in shape) + "]"
