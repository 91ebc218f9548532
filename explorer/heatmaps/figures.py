"""The page's figures, built from explorer.probes.heatmaps results (plain arrays in, figure dicts out)."""

from __future__ import annotations

import numpy as np
from plotly.colors import sample_colorscale

from explorer.i18n import _
from explorer.probes.heatmaps import Comparison, HeadSteps, Skipped, VariantPass, block_size, pool_blocks

from .csv_export import PanelNumbers, panel_csv
from .heads import grid_columns
from .layout import panels_figure
from .panels import HOW, Panel, Pooling, attention_panel, axis_labels, grid_pooling

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
    result: VariantPass, variant: str, group_size: int, *, pool: str, tokens: list[str] | None
) -> tuple[dict, PanelNumbers, Pooling]:
    """Every computed head's weights, one KV group per row where groups are 2..8 heads wide."""
    weights, heads = result.weights, result.heads
    pooling = grid_pooling(weights.shape[1], len(heads), pool)
    ncols = grid_columns(len(heads), group_size)
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
        y_title=_("query position"),
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


def steps_figure(
    steps: HeadSteps, *, causal: bool, pool: str, tokens: list[str] | None, d_k: int
) -> tuple[dict, PanelNumbers, Pooling]:
    """Q, K, V, then Q·Kᵀ, ÷√d_k, masked, softmax and ×V as matrices, in the order the formula applies them."""
    length, keys = steps.scores.shape
    square = Pooling(block_size(length, STEP_SIDE), block_size(keys, STEP_SIDE), pool)

    def tall(n_rows: int, n_cols: int) -> Pooling:
        return Pooling(block_size(n_rows, STEP_SIDE), block_size(n_cols, STEP_SIDE), pool)

    q, k, v = steps.q, steps.k, steps.v
    d_v = v.shape[1]
    shape = f"{length}×{keys}"
    masked_shown = np.where(np.isfinite(steps.masked), steps.masked, np.nan)  # −∞ goes out as a gap
    panels = [
        attention_panel(
            q,
            title=f"Q [{length}×{d_k}]",
            pooling=tall(*q.shape),
            tokens=tokens,
            value_name="value",
            coloraxis="coloraxis2",
            x_name="dim",
            csv_name="Q",
        ),
        attention_panel(
            k,
            title=f"K [{keys}×{d_k}]",
            pooling=tall(*k.shape),
            tokens=tokens,
            value_name="value",
            coloraxis="coloraxis2",
            y_name="key",
            x_name="dim",
            csv_name="K",
        ),
        attention_panel(
            v,
            title=f"V [{keys}×{d_v}]",
            pooling=tall(*v.shape),
            tokens=tokens,
            value_name="value",
            coloraxis="coloraxis2",
            y_name="key",
            x_name="dim",
            csv_name="V",
        ),
        attention_panel(
            steps.scores,
            title="① Q·Kᵀ",
            pooling=square,
            tokens=tokens,
            value_name="score",
            coloraxis="coloraxis3",
            csv_name=_("1 scores Q.K^T [{shape}]", shape=shape),
        ),
        attention_panel(
            steps.scaled,
            title=f"② ×1/√{d_k}",
            pooling=square,
            tokens=tokens,
            value_name="scaled score",
            coloraxis="coloraxis3",  # shared with ①: the scaling shows as a fade
            csv_name=_("2 scaled x{factor}", factor=f"{d_k**-0.5:.4g}"),
        ),
        attention_panel(
            masked_shown,
            title=_("③ + mask") if causal else _("③ no mask"),
            pooling=square,
            tokens=tokens,
            value_name="masked score",
            coloraxis="coloraxis3",  # shared with ①: the scaling shows as a fade
            csv_name=_("3 masked (empty = -inf)"),
        ),
        attention_panel(steps.weights, title="④ softmax", pooling=square, tokens=tokens, csv_name="4 softmax"),
        attention_panel(
            steps.out,
            title=f"⑤ ·V<br>[{length}×{d_v}]",
            pooling=tall(*steps.out.shape),
            tokens=tokens,
            value_name="value",
            coloraxis="coloraxis5",
            x_name="dim",
            csv_name=_("5 output"),
        ),
    ]

    # Every step has its colour scale. ① and ② (and ③) share one: ÷√d_k shrinks the scores, and on a scale of their
    # own the two looked identical: the lesson of that step was invisible.
    def bar(x: float, y: float, title: str, length: float = 200) -> dict:
        return {
            "colorbar": {
                "title": {"text": title, "side": "right"},
                "thickness": 10,
                "len": length,
                "lenmode": "pixels",
                "ypad": 0,
                "x": x,
                "y": y,
                "yanchor": "middle",
                "tickfont": {"size": 9},
            }
        }

    # Three rows of three, three and two: five steps in one row left a phone ~25 px a panel, and their titles ran into
    # each other. Each colour bar sits beside the row it scales.
    coloraxes = {
        "coloraxis": weights_axis(float(np.nanmax(panels[6].z))) | bar(1.02, 0.225, _("④ weight"), 90),
        "coloraxis2": diverging_axis(np.concatenate([q.ravel(), k.ravel(), v.ravel()]), "q, k, v")
        | bar(1.02, 0.856, "Q, K, V", 180),
        "coloraxis3": diverging_axis(steps.scores, "") | bar(1.02, 0.5, _("①②③ score"), 160),
        "coloraxis5": diverging_axis(steps.out, "") | bar(1.02, 0.065, _("⑤ output"), 90),
    }
    fig = panels_figure(
        panels,
        3,
        coloraxes=coloraxes,
        row_height=250,
        layout_cols=[[0, 1, 2], [0, 1, 2], [0, 1]],
        share_x=False,
    )
    layout = fig["layout"]
    layout["margin"] = {**layout["margin"], "r": max(layout["margin"].get("r", 0), 110)}  # the standing colour bars
    x_names = ["", "", "", _("key"), _("key"), _("key"), _("key"), _("dim")]  # Q, K, V: their titles name the dims
    # The first panel of each row names its rows: three a row (wide), two a row (a phone's layout)
    for shown, y_names in (
        (layout, {0: _("token"), 3: _("query"), 6: _("query")}),
        (fig.get("narrow", {}).get("layout"), {0: _("token"), 2: _("key"), 4: _("query"), 6: _("query")}),
    ):
        if shown is None:
            continue
        for index, x_name in enumerate(x_names[: len(panels)]):
            suffix = "" if index == 0 else str(index + 1)
            shown[f"xaxis{suffix}"]["title"] = {"text": x_name, "font": {"size": 10}, "standoff": 4}
            shown[f"xaxis{suffix}"]["nticks"] = 3  # a phone leaves ~60 px a panel: "0 20 40 60" ran together
            if index in y_names:
                shown[f"yaxis{suffix}"]["title"] = {"text": y_names[index], "font": {"size": 10}}
    return fig, panel_csv(panels), square


def decode_figure(
    result: VariantPass, variant: str, *, pool: str, tokens: list[str] | None, highlight: int
) -> tuple[dict, PanelNumbers, Pooling]:
    """The decode step's weights: one row per head (grouped heads next to each other), one column per cached key."""
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
    panel = Panel("", z, x, y, hover, csv_name=_("decode step"))
    fig = panels_figure(
        [panel],
        1,
        coloraxes={"coloraxis": weights_axis(float(np.nanmax(z)))},
        row_height=min(520, max(DECODE_MIN_ROW_HEIGHT, 40 + 18 * heads)),
        x_title=_("cached key position (the last one is the token itself)"),
    )
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
