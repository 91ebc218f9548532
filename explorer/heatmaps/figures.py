"""The page's four charts, cached by settings and language: each a figure dict built from explorer.probes.heatmaps
results (plain arrays in), the numbers it plots, how it was pooled, and the facts its caption states."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

import numpy as np
import streamlit as st
from plotly.colors import sample_colorscale

from attn_core import AttentionConfig
from explorer.charts import in_two_lines
from explorer.grid import PHONE_COLUMNS, axis_suffix, narrow, with_flat_colorbars
from explorer.i18n import _, speaking
from explorer.kinds.chunked import ChunkMap
from explorer.kinds.compressed import CompressedMap
from explorer.kinds.dsa import SparseMap
from explorer.kinds.grouped import BandMap
from explorer.kinds.kind import Design
from explorer.kinds.shared import SharedMap
from explorer.kinds.shared_topk import TopKMap
from explorer.probes.heatmaps import (
    Comparison,
    HeadSteps,
    InputSpec,
    Skipped,
    VariantPass,
    block_size,
    pool_blocks,
    steps_of_head,
)

from .computed import comparison_result, design_result, grid_columns, variant_result
from .panels import (
    HOW,
    SHOW_VALUES_UP_TO,
    Panel,
    PanelNumbers,
    Pooling,
    attention_panel,
    axis_labels,
    grid_pooling,
    panel_csv,
    panels_figure,
    slide_columns,
)
from .tables import similarity_table

STEP_SIDE = 64  # cells per side of each step of "inside one head"
DECODE_CELLS = 2**14  # cells of the decode step's figure (heads x keys)
# px of the decode figure's row at least: with 1-2 heads its plot (and the colour bar, as tall as the plot) would
# otherwise shrink to a sliver under the margins
DECODE_MIN_ROW_HEIGHT = 180


def _square_root_blues() -> list[list]:
    """Blues laid out so colour grows with the square root of the value: weights of 0.01 are visible next to 1,
    while the colour bar still reads in plain weights."""
    steps = np.linspace(0.0, 1.0, 17)
    return [[float(s * s), color] for s, color in zip(steps, sample_colorscale("Blues", steps.tolist()), strict=True)]


WEIGHT_COLORSCALE = _square_root_blues()


def weights_axis(vmax: float, title: str | None = None) -> dict:
    title = _("weight") if title is None else title
    return {
        "colorscale": WEIGHT_COLORSCALE,
        "cmin": 0.0,
        "cmax": max(vmax, 1e-9),
        "colorbar": {"title": {"text": title}, "thickness": 12},
    }


def diverging_axis(values: np.ndarray, title: str) -> dict:
    """Red for positive, blue for negative, white at 0, symmetric about 0 (masked −∞ cells are left out)."""
    finite = values[np.isfinite(values)]
    bound = max(float(np.abs(finite).max()), 1e-9) if finite.size else 1.0
    return {
        "colorscale": "RdBu",
        "reversescale": True,
        "cmin": -bound,
        "cmax": bound,
        "cmid": 0.0,
        "colorbar": {"title": {"text": title}, "thickness": 12},
    }


def head_label(head: int, kv_head: int, variant: str, *, two_lines: bool = False) -> str:
    if variant in ("mha", "mla"):
        return _("head {head}", head=head)
    if two_lines:
        return _("head {head}<br>KV {kv}", head=head, kv=kv_head)
    return _("head {head} · KV {kv}", head=head, kv=kv_head)


def grid_figure(
    result: VariantPass,
    variant: str,
    group_size: int,
    *,
    pool: str,
    tokens: list[str] | None,
    slide_height: int | None = None,
) -> tuple[dict, PanelNumbers, Pooling]:
    """Every computed head's weights, one KV group per row where groups are 2..8 heads wide (slide_height: drawn that
    tall on a slide, explorer.heatmaps.panels.panels_figure)."""
    weights, heads = result.weights, result.heads
    pooling = grid_pooling(weights.shape[1], len(heads), pool)
    ncols = grid_columns(len(heads), group_size)
    if slide_height:
        rows = axis_labels(weights.shape[1], pooling.rows, tokens)
        ncols = slide_columns(len(heads), ncols, height=slide_height, rows=rows, share_x=True)
    two_lines = ncols > 4  # "head 12 · KV 1" eight times a row runs together on a 1024-px projector
    panels = [
        attention_panel(
            weights[i],
            title=head_label(h, kv, variant, two_lines=two_lines),
            pooling=pooling,
            tokens=tokens,
            csv_name=head_label(h, kv, variant),
        )
        for i, (h, kv) in enumerate(zip(heads, result.kv_head, strict=True))
    ]
    vmax = max(float(np.nanmax(p.z)) for p in panels)
    fig = panels_figure(
        panels,
        ncols,
        coloraxes={"coloraxis": weights_axis(vmax)},
        row_height=240 if ncols <= 4 else 170,
        x_title=_("key position") if not two_lines else _("key"),
        # a slide's short rows: the short name, which fits beside one row
        y_title=_("query") if slide_height else _("query position"),
        height=slide_height,
    )
    return fig, panel_csv(panels), pooling


def compare_figure(
    results: dict[str, Comparison | Skipped], head: int, *, pool: str, tokens: list[str] | None
) -> tuple[dict, PanelNumbers, Pooling]:
    """Head `head` of each variant made from the same MHA layer, side by side."""
    shown = {v: r for v, r in results.items() if isinstance(r, Comparison)}
    length = next(iter(shown.values())).weights.shape[1]
    pooling = grid_pooling(length, 16, pool)  # the small side: four of these sit in one row
    panels = [
        attention_panel(
            r.weights[head],
            title=_("{variant} · head {head}", variant=v.upper(), head=head),
            pooling=pooling,
            tokens=tokens,
        )
        for v, r in shown.items()
    ]
    vmax = max(float(np.nanmax(p.z)) for p in panels)
    fig = panels_figure(
        panels,
        len(panels),
        coloraxes={"coloraxis": weights_axis(vmax)},
        row_height=300,
        x_title=_("key position"),
        y_title=_("query position"),
    )
    return fig, panel_csv(panels), pooling


# Three rows of three, three and two: five steps in one row left a phone ~25 px a panel, and their titles ran into each
# other. On a phone (two a row) the grid's own order applies.
STEP_ROWS = [[0, 1, 2], [0, 1, 2], [0, 1]]
STEP_COLOR_BAR_ROOM = 110  # px of right margin for the standing colour bars beside the rows
# On a slide (wide and short) two rows of four, in the formula's order, and two colour bars side by side beside each
SLIDE_STEP_COLUMNS = 4
SLIDE_COLOR_BAR_ROOM = 280  # three bars side by side beside the second row


def steps_figure(
    steps: HeadSteps,
    *,
    causal: bool,
    pool: str,
    tokens: list[str] | None,
    d_k: int,
    slide_height: int | None = None,
) -> tuple[dict, PanelNumbers, Pooling]:
    """Q, K, V, then Q·Kᵀ, ÷√d_k, masked, softmax and ×V as matrices, in the order the formula applies them
    (slide_height: two rows of four, drawn that tall on a slide)."""
    length, keys = steps.scores.shape
    square = Pooling(block_size(length, STEP_SIDE), block_size(keys, STEP_SIDE), pool)
    panels = [
        *_input_panels(steps, pool=pool, tokens=tokens, d_k=d_k),
        *_score_panels(steps, causal=causal, square=square, tokens=tokens, d_k=d_k),
        _output_panel(steps, pool=pool, tokens=tokens),
    ]
    coloraxes = _step_coloraxes(steps, softmax=panels[6], slide=slide_height is not None)
    # A phone shows panels with numbers in their cells one a row: two a row left ~20 px a cell, the numbers 5 px.
    phone_columns = 1 if any(panel.show_values for panel in panels) else PHONE_COLUMNS
    ncols = 3
    if slide_height:
        rows = max((panel.y for panel in panels), key=len)
        ncols = slide_columns(len(panels), SLIDE_STEP_COLUMNS, height=slide_height, rows=rows, share_x=False)
    fig = panels_figure(
        panels,
        ncols,
        coloraxes=coloraxes,
        row_height=250,
        layout_cols=None if slide_height else STEP_ROWS,
        share_x=False,
        phone_columns=phone_columns,
        height=slide_height,
    )
    layout = fig["layout"]
    room = SLIDE_COLOR_BAR_ROOM if slide_height else STEP_COLOR_BAR_ROOM
    layout["margin"] = {**layout["margin"], "r": max(layout["margin"].get("r", 0), room)}
    # The first panel of each row names its rows: three a row (wide), four or all eight (a slide), two or one a row
    # (a phone's)
    first = {0: _("token"), ncols: _("query")} if slide_height else {0: _("token"), 3: _("query"), 6: _("query")}
    _name_step_axes(layout, panels, first)
    if "narrow" in fig:
        row_names = (
            {0: _("token"), 2: _("key"), 4: _("query"), 6: _("query")}
            if phone_columns > 1
            else {0: _("token"), 1: _("key"), 2: _("key")} | {index: _("query") for index in range(3, len(panels))}
        )
        _name_step_axes(fig["narrow"]["layout"], panels, row_names)
    return fig, panel_csv(panels), square


def _tall(matrix: np.ndarray, pool: str) -> Pooling:
    """The pooling of a matrix of its own shape (Q, K, V and the output: tokens by dims) to STEP_SIDE a side."""
    n_rows, n_cols = matrix.shape
    return Pooling(block_size(n_rows, STEP_SIDE), block_size(n_cols, STEP_SIDE), pool)


def _input_panels(steps: HeadSteps, *, pool: str, tokens: list[str] | None, d_k: int) -> list[Panel]:
    """Q, K and V, on one diverging colour scale (coloraxis2)."""
    q, k, v = steps.q, steps.k, steps.v
    length, keys = steps.scores.shape
    d_v = v.shape[1]
    panel = partial(attention_panel, tokens=tokens, value_name="value", coloraxis="coloraxis2", x_name="dim")
    return [
        panel(q, title=f"Q [{length}×{d_k}]", pooling=_tall(q, pool), csv_name="Q"),
        panel(k, title=f"K [{keys}×{d_k}]", pooling=_tall(k, pool), y_name="key", csv_name="K"),
        panel(v, title=f"V [{keys}×{d_v}]", pooling=_tall(v, pool), y_name="key", csv_name="V"),
    ]


def _score_panels(
    steps: HeadSteps, *, causal: bool, square: Pooling, tokens: list[str] | None, d_k: int
) -> list[Panel]:
    """① Q·Kᵀ on its own colour scale (coloraxis3), ② scaled and ③ masked on one (coloraxis4: ③ is ② with the mask's
    cells blanked), then ④ softmax."""
    shape = "×".join(map(str, steps.scores.shape))
    masked_shown = np.where(np.isfinite(steps.masked), steps.masked, np.nan)  # −∞ goes out as a gap
    score = partial(attention_panel, pooling=square, tokens=tokens, coloraxis="coloraxis4")
    return [
        attention_panel(
            steps.scores,
            title="① Q·Kᵀ",
            pooling=square,
            tokens=tokens,
            value_name="score",
            coloraxis="coloraxis3",
            csv_name=_("1 scores Q.K^T [{shape}]", shape=shape),
        ),
        score(
            steps.scaled,
            title=f"② ×1/√{d_k}",
            value_name="scaled score",
            csv_name=_("2 scaled x{factor}", factor=f"{d_k**-0.5:.4g}"),
        ),
        score(
            masked_shown,
            title=_("③ + mask") if causal else _("③ no mask"),
            value_name="masked score",
            csv_name=_("3 masked (empty = -inf)"),
        ),
        attention_panel(steps.weights, title="④ softmax", pooling=square, tokens=tokens, csv_name="4 softmax"),
    ]


def _output_panel(steps: HeadSteps, *, pool: str, tokens: list[str] | None) -> Panel:
    """⑤ the weights times V: the head's output, on its own colour scale (coloraxis5)."""
    length, d_v = steps.out.shape
    return attention_panel(
        steps.out,
        title=f"⑤ ·V<br>[{length}×{d_v}]",
        pooling=_tall(steps.out, pool),
        tokens=tokens,
        value_name="value",
        coloraxis="coloraxis5",
        x_name="dim",
        csv_name=_("5 output"),
    )


def _step_coloraxes(steps: HeadSteps, *, softmax: Panel, slide: bool = False) -> dict[str, dict]:
    """Every step's colour scale, each bar beside the row it scales (on a slide, side by side beside each of its two
    rows). ① has its own: on one shared with ②, ÷√d_k left ② and ③ a grey fade on ①'s scale (issue 47); the
    caption states the shrink in numbers instead. ② and ③ share one: ③ is ② with the mask's cells blanked."""
    inputs = np.concatenate([steps.q.ravel(), steps.k.ravel(), steps.v.ravel()])
    axes = {
        "coloraxis": weights_axis(float(np.nanmax(softmax.z))),
        "coloraxis2": diverging_axis(inputs, ""),
        "coloraxis3": diverging_axis(steps.scores, ""),
        "coloraxis4": diverging_axis(steps.scaled, ""),
        "coloraxis5": diverging_axis(steps.out, ""),
    }
    titles = {
        "coloraxis": _("④ weight"),
        "coloraxis2": "Q, K, V",
        "coloraxis3": _("① score"),
        "coloraxis4": _("②③ scaled"),
        "coloraxis5": _("⑤ output"),
    }
    # (y, length, x) of each bar: a slide's rows are Q K V ① and ② ③ ④ ⑤
    places = SLIDE_STEP_BARS if slide else STEP_BARS
    return {name: axis | _standing_bar(places[name][0], titles[name], *places[name][1:]) for name, axis in axes.items()}


# Where each step's colour bar stands: (y centre, length: px, or a share of the plot's height if at most 1, x)
STEP_BARS = {
    "coloraxis2": (0.856, 180, 1.02),
    "coloraxis3": (0.58, 90, 1.02),
    "coloraxis4": (0.42, 90, 1.02),
    "coloraxis": (0.225, 90, 1.02),
    "coloraxis5": (0.065, 90, 1.02),
}
SLIDE_STEP_BARS = {
    "coloraxis2": (0.78, 0.4, 1.02),
    "coloraxis3": (0.78, 0.4, 1.14),
    "coloraxis4": (0.22, 0.4, 1.02),
    "coloraxis": (0.22, 0.4, 1.14),
    "coloraxis5": (0.22, 0.4, 1.26),
}


def _standing_bar(y: float, title: str, length: float, x: float = 1.02) -> dict:
    """A colour bar standing right of the panels at x, centred at y (paper), `length` px tall (a share of the plot's
    height if at most 1)."""
    return {
        "colorbar": {
            "title": {"text": title, "side": "right"},
            "thickness": 10,
            "len": length,
            "lenmode": "fraction" if length <= 1 else "pixels",
            "ypad": 0,
            "x": x,
            "y": y,
            "yanchor": "middle",
            "tickfont": {"size": 9},
        }
    }


def _name_step_axes(layout: dict, panels: list[Panel], y_names: dict[int, str]) -> None:
    """Each step's x title (Q, K and V: none, their titles name the dims) and the y titles of the panels in y_names
    (by panel index). x ticks at the two ends only: Plotly sets an inner panel's x title at its tick labels' height,
    so a middle tick ("50" of 128 keys) ran into it, and a phone leaves ~60 px a panel ("0 20 40 60" ran together)."""
    x_names = ["", "", "", _("key"), _("key"), _("key"), _("key"), _("dim")]
    for index, (panel, x_name) in enumerate(zip(panels, x_names, strict=False)):
        axis = layout[f"xaxis{axis_suffix(index)}"]
        axis["title"] = {"text": x_name, "font": {"size": 10}, "standoff": 4}
        axis["tickmode"] = "array"
        axis["tickvals"] = [panel.x[0], panel.x[-1]]
        if index in y_names:
            layout[f"yaxis{axis_suffix(index)}"]["title"] = {"text": y_names[index], "font": {"size": 10}}


def decode_figure(
    result: VariantPass,
    variant: str,
    *,
    pool: str,
    tokens: list[str] | None,
    highlight: int | None,
    titled: bool = False,
) -> tuple[dict, PanelNumbers, Pooling]:
    """The decode step's weights: one row per head (grouped heads next to each other), one column per cached key;
    head `highlight` outlined (None: none, where nothing would explain the outline); titled, its phone layout has
    room for a title the caller writes (_decode_phone)."""
    row = result.decode.row  # [H, S], one row per computed head
    heads, keys = row.shape
    pooling = Pooling(1, block_size(keys, max(1, DECODE_CELLS // heads)), pool)
    z = pool_blocks(row, 1, pooling.cols, pool)
    x = axis_labels(keys, pooling.cols, tokens)
    y = [head_label(h, kv, variant) for h, kv in zip(result.heads, result.kv_head, strict=True)]
    if pooling.pooled:
        # TRANSLATORS: how is "mean" or "max"
        block = _("{how} of {n} keys:", how=_(HOW[pool]), n=pooling.cols)
        keys_from = _("keys from")
        hover = f"%{{y}}<br>{keys_from} %{{x}}<br>{block} %{{z:.4g}}<extra></extra>"
    else:
        key, weight = _("key"), _("weight")
        hover = f"%{{y}}<br>{key} %{{x}}<br>{weight} %{{z:.4g}}<extra></extra>"
    # A few heads over a short sentence: each weight written in its cell (Plotly fits the numbers to the cells)
    panel = Panel("", z, x, y, hover, show_values=max(z.shape) <= SHOW_VALUES_UP_TO, csv_name=_("decode step"))
    fig = panels_figure(
        [panel],
        1,
        coloraxes={"coloraxis": weights_axis(float(np.nanmax(z)))},
        row_height=min(520, max(DECODE_MIN_ROW_HEIGHT, 40 + 18 * heads)),
        x_title=_("cached key position (the last one is the token itself)"),
    )
    _decode_colorbar(fig["layout"])
    fig["narrow"] = narrow(_decode_phone(fig["layout"], heads, titled=titled))
    if highlight is None:
        return fig, panel_csv([panel]), pooling
    # the head opened up in "inside one head", outlined (categories sit at 0, 1, ... on the y axis)
    at = result.heads.index(highlight)
    fig["layout"]["shapes"] = [
        {
            "type": "rect",
            "xref": "x domain",
            "yref": "y",
            "x0": 0,
            "x1": 1,
            "y0": at - 0.5,
            "y1": at + 0.5,
            "line": {"color": "#c4573a", "width": 2},
        }
    ]
    return fig, panel_csv([panel]), pooling


DECODE_TICK_GAP = 36  # px of colour bar a tick label of the decode step's takes at least: at ~16 they touched
DECODE_PHONE_TEXT = 11  # px of the decode step's labels on a phone, where 9 px does not read
DECODE_PHONE_ROW = 18  # px of plot a head takes on a phone: its 11-px name clear of the next one's
# px of the phone's plot that its two-line x title and key labels take (Plotly's automargin; measured 51 at 8 heads)
DECODE_PHONE_X_ROOM = 60
# px a titled phone layout grows by (the lesson's step 10 writes its comparison there): three lines of title at a
# phone's width (up to 21 px each) over the one its top margin holds; without them the title took the plot's room
DECODE_PHONE_TITLE_ROOM = 44


def _decode_colorbar(layout: dict) -> None:
    """The decode step's colour bar as tall as its plot, its title beside it (on top it took half of a short bar) and
    as many ticks as keep their labels apart."""
    margin = layout["margin"]
    plot = layout["height"] - margin["t"] - margin["b"]
    colorbar = layout["coloraxis"]["colorbar"]
    colorbar |= {"len": 1, "title": {**colorbar.get("title", {}), "side": "right"}}
    colorbar["nticks"] = max(2, plot // DECODE_TICK_GAP)


def _decode_phone(layout: dict, heads: int, *, titled: bool = False) -> dict:
    """The decode step's layout on a phone: its head names and positions at DECODE_PHONE_TEXT (its colour bar's are
    the template's 12 px already), its colour bar laid flat under the plot (standing beside it, it left the plot a
    third of the width beside the larger head names), and tall enough to name every head (8 heads had 98 px: their
    names ran into each other, or Plotly named every other one); titled, DECODE_PHONE_TITLE_ROOM taller above the
    plot, before the flat bar is placed in the final height."""
    phone = copy.deepcopy(layout)
    plot = phone["height"] - phone["margin"]["t"] - phone["margin"]["b"]
    phone["height"] += max(0, heads * DECODE_PHONE_ROW + DECODE_PHONE_X_ROOM - plot)
    if titled:
        phone["height"] += DECODE_PHONE_TITLE_ROOM
        phone["margin"]["t"] += DECODE_PHONE_TITLE_ROOM
    for name in ("xaxis", "yaxis"):
        phone[name]["tickfont"] = {**phone[name].get("tickfont", {}), "size": DECODE_PHONE_TEXT}
    # centred on the plot the wider plot leaves, the one-line x title ran past the phone's right edge
    title = phone["xaxis"].get("title") or {}
    phone["xaxis"]["title"] = {**title, "text": in_two_lines(title.get("text") or "")}
    bar = {**phone["coloraxis"], "colorbar": {**phone["coloraxis"]["colorbar"]}}
    bar["colorbar"].pop("nticks")  # counted for the standing bar's height; Plotly's own along the phone's width
    return with_flat_colorbars(phone, {"coloraxis": bar})


def upper_triangle(length: int) -> np.ndarray:
    """1 above the diagonal of a square [length, length] matrix (the keys a causal query may not see), else 0."""
    return np.triu(np.ones((length, length), dtype=np.float32), k=1)


@dataclass(frozen=True)
class HeadsFacts:
    """What the all-heads caption states: rows sum to 1, and (causal) nothing above the diagonal."""

    row_sum_error: float
    upper_max: float | None  # None without the causal mask


@dataclass(frozen=True)
class StepFacts:
    """What the inside-one-head captions state."""

    kv_head: int  # the KV head the layer gave this head to read
    weights_error: float  # the steps' weights vs the layer's own
    output_rebuild_error: float
    output_scale: float
    score_bound: float  # the largest |score| of ①, its colour bar's end
    scaled_bound: float  # ... of ② (and ③), on a colour bar of their own


@dataclass(frozen=True)
class DecodeFacts:
    """What the decode step's caption and cache table state."""

    decode_error: float  # the decode step's row vs the full pass's last row
    cached_before: int
    cache_shapes: dict[str, tuple[int, ...]]  # each stored tensor's shape, as KVCache.shapes() reads them


# The facts a chart's caption states: HeadsFacts, StepFacts, DecodeFacts, or None.
Facts = TypeVar("Facts")


@dataclass
class Chart(Generic[Facts]):
    """A figure ready to draw (its dict, arrays encoded), the numbers it plots, how it was pooled, and the facts its
    caption states."""

    spec: dict
    csv: PanelNumbers
    pooling: Pooling
    facts: Facts  # None where the caption states nothing measured


def _tokens(spec: InputSpec) -> list[str] | None:
    return spec.labels() if spec.tokens is not None else None


@st.cache_data(max_entries=16, show_spinner=False)
def heads_chart(
    cfg: AttentionConfig,
    seed: int,
    spec: InputSpec,
    causal: bool,
    heads: range,
    pool: str,
    lang: str,
    slide_height: int | None = None,
) -> Chart[HeadsFacts]:
    """Every head's weights (slide_height: drawn that tall on a lesson's slide)."""
    with speaking(lang):
        result = variant_result(cfg, seed, spec, causal=causal, heads=heads)
        fig, rows, pooling = grid_figure(
            result, cfg.variant, cfg.group_size, pool=pool, tokens=_tokens(spec), slide_height=slide_height
        )
        weights = result.weights
        facts = HeadsFacts(
            row_sum_error=float(np.abs(weights.sum(-1) - 1).max()),
            upper_max=float(np.abs(weights * upper_triangle(weights.shape[1])).max()) if causal else None,
        )
        return Chart(fig, rows, pooling, facts)


@st.cache_data(max_entries=16, show_spinner=False)
def compare_chart(
    configs: tuple[tuple[str, AttentionConfig], ...],
    seed: int,
    spec: InputSpec,
    causal: bool,
    head: int,
    pool: str,
    lang: str,
) -> tuple[Chart[None] | None, list[dict]]:
    with speaking(lang):
        results = comparison_result(configs, seed, spec, causal)
        table = similarity_table(results, head)
        if not any(isinstance(r, Comparison) for r in results.values()):
            return None, table
        fig, rows, pooling = compare_figure(results, head, pool=pool, tokens=_tokens(spec))
        return Chart(fig, rows, pooling, None), table


@st.cache_data(max_entries=16, show_spinner=False)
def steps_chart(
    cfg: AttentionConfig,
    seed: int,
    spec: InputSpec,
    causal: bool,
    heads: range,
    head: int,
    pool: str,
    lang: str,
    slide_height: int | None = None,
) -> Chart[StepFacts]:
    """Head `head` (one of the page's heads) step by step (slide_height: drawn that tall on a lesson's slide)."""
    with speaking(lang):
        result = variant_result(cfg, seed, spec, causal=causal, heads=heads)
        steps = steps_of_head(result, head, causal)
        fig, rows, pooling = steps_figure(
            steps, causal=causal, pool=pool, tokens=_tokens(spec), d_k=steps.q.shape[1], slide_height=slide_height
        )
        index = result.heads.index(head)
        facts = StepFacts(
            kv_head=result.kv_head[index],
            weights_error=float(np.abs(steps.weights - result.weights[index]).max()),
            output_rebuild_error=result.output_rebuild_error,
            output_scale=result.output_scale,
            score_bound=float(np.abs(steps.scores).max()),
            scaled_bound=float(np.abs(steps.scaled).max()),
        )
        return Chart(fig, rows, pooling, facts)


@st.cache_data(max_entries=16, show_spinner=False)
def decode_chart(
    cfg: AttentionConfig,
    seed: int,
    spec: InputSpec,
    causal: bool,
    heads: range,
    head: int | None,
    pool: str,
    lang: str,
    titled: bool = False,
) -> Chart[DecodeFacts]:
    """The decode step's figure (titled: with room on a phone for a title the caller writes from the facts); its facts
    carry the cache shapes, so the cache table (which depends on the sidebar's dtype too) is made on the page without
    redrawing the figure."""
    with speaking(lang):
        result = variant_result(cfg, seed, spec, causal=causal, heads=heads)
        decode = result.decode
        fig, rows, pooling = decode_figure(
            result, cfg.variant, pool=pool, tokens=_tokens(spec), highlight=head, titled=titled
        )
        facts = DecodeFacts(
            decode_error=float(np.abs(decode.row - result.weights[:, -1]).max()),
            cached_before=decode.cached_before,
            cache_shapes=decode.cache_shapes,
        )
        return Chart(fig, rows, pooling, facts)


# --- the designs after MLA -------------------------------------------------------------------------------------------
DESIGN_ROW_HEIGHT = 420  # px of a design's one row of panels: its band or top-k, cells a few px each at 128 tokens
SINK_COLOUR = "#c4573a"  # the sink's column and the entries' labels stand out from the keys'


@dataclass(frozen=True)
class DesignFacts:
    """What a design's caption states, measured on its map."""

    read_most: int  # keys (and entries) the busiest query read
    read_last: int  # ... the last query read
    tokens: int  # queries (= token keys) in the map
    entries: int  # compressed entries held after the last token (V4)
    sink_mean: float | None  # mean weight the sink took over every row and the head's queries, where there is one
    same_rows: int = 0  # queries whose keys read are exactly another layer's picks (GLM-5's shared top-k)
    chunks: int = 0  # chunks begun in the map: queries that read one key, their own (Llama 4's chunked layer)
    same_keys: bool = False  # a shared layer's queries read exactly the keys its producer's did


def _key_labels(length: int, tokens: list[str] | None) -> list[str]:
    """The token columns' labels as text: a design's axis mixes them with a sink's and entries' columns."""
    return [str(label) for label in axis_labels(length, 1, tokens)]


def _design_panel(matrix: np.ndarray, x: list[str], y: list, title: str, csv_name: str, value: str) -> Panel:
    query, key = _("query"), _("key")
    hover = f"{query} %{{y}}<br>{key} %{{x}}<br>{value} %{{z:.4g}}<extra>{title}</extra>"
    return Panel(title, matrix, x, y, hover, csv_name=csv_name)


def _categorical(fig: dict) -> dict:
    """Every x axis categorical: "sink" and "⟨0–3⟩" columns beside numbered keys (a numbers-only axis would drop them)."""
    for layout in (fig["layout"], fig.get("narrow", {}).get("layout", {})):
        for name, axis in layout.items():
            if name.startswith("xaxis"):
                axis["type"] = "category"
    return fig


def band_figure(result: BandMap, head: int, tokens: list[str] | None) -> tuple[dict, PanelNumbers, DesignFacts]:
    """One head's weights over the tokens (blank outside its band and kept first tokens) and, with a learned sink,
    the weight the sink took as a column of its own."""
    weights = result.weights[head]
    length = weights.shape[0]
    x, y = _key_labels(length, tokens), axis_labels(length, 1, tokens)
    matrix = weights
    if result.sink is not None:
        matrix = np.concatenate((weights, result.sink[head][:, None]), axis=1)
        x = [*x, _("sink")]
    panel = _design_panel(matrix, x, y, _("head {head}", head=head), _("head {head}", head=head), _("weight"))
    fig = panels_figure(
        [panel],
        1,
        coloraxes={"coloraxis": weights_axis(float(np.nanmax(matrix)))},
        row_height=DESIGN_ROW_HEIGHT,
        x_title=_("key position"),
        y_title=_("query position"),
    )
    read = (~np.isnan(weights)).sum(axis=1)
    facts = DesignFacts(
        read_most=int(read.max()),
        read_last=int(read[-1]),
        tokens=length,
        entries=0,
        sink_mean=None if result.sink is None else float(result.sink[head].mean()),
    )
    return _categorical(fig), panel_csv([panel]), facts


def sparse_figure(result: SparseMap, head: int, tokens: list[str] | None) -> tuple[dict, PanelNumbers, DesignFacts]:
    """The indexer's scores (every earlier key) beside one head's weights (only each query's top-k)."""
    length = result.index_scores.shape[0]
    x, y = _key_labels(length, tokens), axis_labels(length, 1, tokens)
    scores = _design_panel(result.index_scores, x, y, _("indexer scores"), _("indexer scores"), _("score"))
    scores.coloraxis = "coloraxis2"
    title = _("head {head}: top {k} read", head=head, k=result.top_k)
    weights = _design_panel(result.weights[head], x, y, title, _("head {head}", head=head), _("weight"))
    fig = panels_figure(
        [scores, weights],
        2,
        coloraxes={
            "coloraxis": weights_axis(float(np.nanmax(result.weights[head]))) | _standing_bar(0.77, _("weight"), 0.45),
            "coloraxis2": diverging_axis(result.index_scores, "") | _standing_bar(0.23, _("score"), 0.45),
        },
        row_height=DESIGN_ROW_HEIGHT,
        x_title=_("key position"),
        y_title=_("query position"),
        share_x=False,
    )
    fig["layout"]["margin"] = {**fig["layout"]["margin"], "r": STEP_COLOR_BAR_ROOM}
    read = result.chosen.sum(axis=1)
    facts = DesignFacts(int(read.max()), int(read[-1]), length, 0, None)
    return _categorical(fig), panel_csv([scores, weights]), facts


def entry_label(first: int, last: int) -> str:
    """A compressed entry's column: the tokens it pools, in angle brackets so it reads apart from a key's number."""
    return f"⟨{first}–{last}⟩"


def compressed_figure(
    result: CompressedMap, head: int, tokens: list[str] | None
) -> tuple[dict, PanelNumbers, DesignFacts]:
    """One head's weights over the window's keys, then the compressed entries (labelled by the tokens they pool),
    then the sink."""
    weights = result.weights[head]
    length = weights.shape[0]
    x = [*_key_labels(length, tokens), *(entry_label(*span) for span in result.spans), _("sink")]
    matrix = np.concatenate((weights, result.sink[head][:, None]), axis=1)
    panel = _design_panel(
        matrix, x, axis_labels(length, 1, tokens), _("head {head}", head=head), _("head {head}", head=head), _("weight")
    )
    fig = panels_figure(
        [panel],
        1,
        coloraxes={"coloraxis": weights_axis(float(np.nanmax(matrix)))},
        row_height=DESIGN_ROW_HEIGHT,
        x_title=_("key, then ⟨compressed entry⟩, then sink"),
        y_title=_("query position"),
    )
    read = (~np.isnan(weights)).sum(axis=1)
    facts = DesignFacts(int(read.max()), int(read[-1]), length, len(result.spans), float(result.sink[head].mean()))
    return _categorical(fig), panel_csv([panel]), facts


def shared_topk_figure(result: TopKMap, head: int, tokens: list[str] | None) -> tuple[dict, PanelNumbers, DesignFacts]:
    """The full layer's weights (its indexer's top-k) beside the shared layer's (the same keys, its own weights), one
    head each, on one colour scale."""
    length = result.picked.shape[0]
    x, y = _key_labels(length, tokens), axis_labels(length, 1, tokens)
    full_title = _("full layer, top {k}", k=result.top_k)  # short: two panels side by side on a phone
    shared_title = _("shared layer")
    full = _design_panel(result.full_weights[head], x, y, full_title, _("full layer"), _("weight"))
    shared = _design_panel(result.shared_weights[head], x, y, shared_title, _("shared layer"), _("weight"))
    top = float(max(np.nanmax(result.full_weights[head]), np.nanmax(result.shared_weights[head])))
    fig = panels_figure(
        [full, shared],
        2,
        coloraxes={"coloraxis": weights_axis(top)},
        row_height=DESIGN_ROW_HEIGHT,
        x_title=_("key position"),
        y_title=_("query position"),
    )
    read = result.shared_read.sum(axis=1)
    same = int((result.shared_read == result.picked).all(axis=1).sum())
    facts = DesignFacts(int(read.max()), int(read[-1]), length, 0, None, same_rows=same)
    return _categorical(fig), panel_csv([full, shared]), facts


def chunk_figure(result: ChunkMap, head: int, tokens: list[str] | None) -> tuple[dict, PanelNumbers, DesignFacts]:
    """One head's weights over the tokens: a block per chunk along the diagonal, blank across every chunk's edge."""
    weights = result.weights[head]
    length = weights.shape[0]
    panel = _design_panel(
        weights,
        _key_labels(length, tokens),
        axis_labels(length, 1, tokens),
        _("head {head}", head=head),
        _("head {head}", head=head),
        _("weight"),
    )
    fig = panels_figure(
        [panel],
        1,
        coloraxes={"coloraxis": weights_axis(float(np.nanmax(weights)))},
        row_height=DESIGN_ROW_HEIGHT,
        x_title=_("key position"),
        y_title=_("query position"),
    )
    read = (~np.isnan(weights)).sum(axis=1)
    facts = DesignFacts(int(read.max()), int(read[-1]), length, 0, None, chunks=int((read == 1).sum()))
    return _categorical(fig), panel_csv([panel]), facts


def shared_figure(result: SharedMap, head: int, tokens: list[str] | None) -> tuple[dict, PanelNumbers, DesignFacts]:
    """The producer's weights beside the consumer's, one head each: the consumer's queries over the producer's
    cached keys, on one colour scale."""
    length = result.producer.shape[1]
    x, y = _key_labels(length, tokens), axis_labels(length, 1, tokens)
    panels = [
        _design_panel(
            weights[head],
            x,
            y,
            title,
            _("layer {layer} head {head}", layer=layer, head=head),
            _("weight"),
        )
        for weights, layer, title in (
            (result.producer, result.producer_layer, _("layer {layer}: its own cache", layer=result.producer_layer)),
            (
                result.consumer,
                result.consumer_layer,
                _("layer {layer} → layer {source}'s cache", layer=result.consumer_layer, source=result.producer_layer),
            ),
        )
    ]
    top = float(max(np.nanmax(result.producer[head]), np.nanmax(result.consumer[head])))
    fig = panels_figure(
        panels,
        2,
        coloraxes={"coloraxis": weights_axis(top)},
        row_height=DESIGN_ROW_HEIGHT,
        x_title=_("key position"),
        y_title=_("query position"),
        phone_columns=1,  # one above the other on a phone: side by side their titles run into each other
    )
    read = (~np.isnan(result.consumer[head])).sum(axis=1)
    same = bool((np.isnan(result.producer) == np.isnan(result.consumer)).all())
    facts = DesignFacts(int(read.max()), int(read[-1]), length, 0, None, same_keys=same)
    return _categorical(fig), panel_csv(panels), facts


# Each mapped kind's figure (explorer/kinds/: a kind's map is its own; the figure is this page's), by its link value
DESIGN_FIGURES: dict[str, Callable[[Any, int, list[str] | None], tuple[dict, PanelNumbers, DesignFacts]]] = {
    "sliding": band_figure,
    "dsa": sparse_figure,
    "compressed": compressed_figure,
    "shared_topk": shared_topk_figure,
    "chunked": chunk_figure,
    "shared": shared_figure,
}


@st.cache_data(max_entries=16, show_spinner=False)
def design_chart(design: Design, seed: int, spec: InputSpec, head: int, lang: str) -> Chart[DesignFacts]:
    """A design after MLA's map on the page's input: its band, its top-k or its entries, for head `head`."""
    with speaking(lang):
        result = design_result(design, seed, spec)
        tokens = _tokens(spec)
        fig, rows, facts = DESIGN_FIGURES[design.name](result, head, tokens)
        return Chart(fig, rows, Pooling(1, 1, "mean"), facts)
