"""One heatmap panel: a matrix pooled to what the browser gets, its axis labels and hover text."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from explorer.i18n import N_, _
from explorer.probes.heatmaps import block_size, pool_blocks

GRID_CELLS = 2**16  # cells of the whole grid figure (float32 -> about 350 kB of base64)
SMALL_SIDE = 64  # cells per side of one heatmap when many share a figure
LARGE_SIDE = 128  # ... when at most four do
SHOW_VALUES_UP_TO = 12  # write the numbers into the cells when a matrix is at most this many cells wide and high

# What a heatmap's rows, columns and cells are, as the hover names them (translated where shown).
AXIS_NAMES = {"key": N_("key"), "query": N_("query"), "dim": N_("dim"), "token": N_("token")}
AXIS_FROM = {"key": N_("keys from"), "query": N_("queries from"), "dim": N_("dims from"), "token": N_("tokens from")}
VALUE_NAMES = {
    "weight": N_("weight"),
    "value": N_("value"),
    "score": N_("score"),
    "scaled score": N_("scaled score"),
    "masked score": N_("masked score"),
}
HOW = {"mean": N_("mean"), "max": N_("max")}


@dataclass
class Panel:
    """One heatmap of a figure: z is what the browser gets (pooled or not); x, y label its columns and rows."""

    title: str
    z: np.ndarray
    x: list
    y: list
    hover: str
    coloraxis: str = "coloraxis"
    show_values: bool = False
    csv_name: str = ""


@dataclass(frozen=True)
class Pooling:
    """How a matrix was brought to the browser: block rows x cols, by mean or max (1 x 1 = the values themselves)."""

    rows: int
    cols: int
    how: str

    @property
    def pooled(self) -> bool:
        return self.rows > 1 or self.cols > 1

    def describe(self) -> str:
        if not self.pooled:
            return _("every value")
        # TRANSLATORS: how is "mean" or "max": "the mean of 4×4 blocks" of the weights
        return _("{how} of {rows}×{cols} blocks", how=_(HOW[self.how]), rows=self.rows, cols=self.cols)


def axis_labels(n: int, step: int, tokens: list[str] | None) -> list:
    """Row/column labels: positions (block starts when pooled), with the token when there is text and no pooling."""
    if tokens is not None and step == 1:
        return [f"{i} {plotly_safe(tokens[i])}" for i in range(n)]
    return list(range(0, n, step))


def plotly_safe(token: str) -> str:
    """A token as a tick label: Plotly reads <...> and & as markup, and a space would be invisible."""
    return token.replace("&", "＆").replace("<", "‹").replace(">", "›").replace(" ", "␣")[:16]


def attention_panel(
    matrix: np.ndarray,
    *,
    title: str,
    pooling: Pooling,
    tokens: list[str] | None,
    value_name: str = "weight",
    coloraxis: str = "coloraxis",
    x_name: str = "key",
    y_name: str = "query",
    csv_name: str = "",
) -> Panel:
    z = pool_blocks(matrix, pooling.rows, pooling.cols, pooling.how)
    x = axis_labels(matrix.shape[1], pooling.cols, tokens if x_name in ("key", "query") else None)
    y = axis_labels(matrix.shape[0], pooling.rows, tokens if y_name in ("key", "query") else None)
    if pooling.pooled:
        block = _("{how} of a {rows}×{cols} block:", how=_(HOW[pooling.how]), rows=pooling.rows, cols=pooling.cols)
        hover = (
            f"{_(AXIS_FROM[y_name])} %{{y}}<br>{_(AXIS_FROM[x_name])} %{{x}}<br>{block} %{{z:.4g}}"
            f"<extra>{title}</extra>"
        )
    else:
        hover = (
            f"{_(AXIS_NAMES[y_name])} %{{y}}<br>{_(AXIS_NAMES[x_name])} %{{x}}<br>{_(VALUE_NAMES[value_name])} "
            f"%{{z:.4g}}<extra>{title}</extra>"
        )
    small = max(z.shape) <= SHOW_VALUES_UP_TO
    return Panel(title, z, x, y, hover, coloraxis, small, csv_name=csv_name or title)


def grid_pooling(length: int, n_panels: int, how: str) -> Pooling:
    side = SMALL_SIDE if n_panels > 4 else LARGE_SIDE
    side = min(side, math.isqrt(GRID_CELLS // max(n_panels, 1)))
    block = block_size(length, side)
    return Pooling(block, block, how)
