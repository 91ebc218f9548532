"""Heatmap panels: one matrix pooled to what the browser gets (its axis labels and hover text), a grid of them as one
figure on the shared subplot grid (explorer/grid.py) with its phone layout, and their numbers for the CSV download."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from explorer.charts import typed_array
from explorer.grid import (
    PHONE_COLUMNS,
    Slot,
    Subplot,
    arrange,
    even_columns,
    even_rows,
    grid_figure,
    narrow,
    place,
    rows_of,
    with_flat_colorbars,
)
from explorer.i18n import N_, _
from explorer.present import MIN_TEXT_PX, SLIDE_FONT_SCALE, projected_margins
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


@dataclass(frozen=True)
class PanelNumbers:
    """What a chart's CSV holds, kept as arrays: the CSV text is written only when someone downloads it."""

    names: tuple[str, ...]
    labels: tuple[list, ...]
    matrices: tuple[np.ndarray, ...]

    def csv_text(self) -> str:
        """One line per heatmap row, one column per heatmap column (every line has every column: panels differ in
        width). Values with 7 significant digits (float32's precision); masked cells are left empty."""
        width = max(z.shape[1] for z in self.matrices)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(("matrix", "row", *(f"c{j}" for j in range(width))))
        for name, labels, z in zip(self.names, self.labels, self.matrices, strict=True):
            padding = ("",) * (width - z.shape[1])
            for label, line in zip(labels, z.tolist(), strict=True):
                cells = [f"{v:.7g}" if v == v else "" for v in line]  # v != v: NaN, a masked cell
                writer.writerow((name, label, *cells, *padding))
        return out.getvalue()


def panel_csv(panels: list[Panel]) -> PanelNumbers:
    """The panels' numbers for the chart's CSV download."""
    return PanelNumbers(tuple(p.csv_name for p in panels), tuple(p.y for p in panels), tuple(p.z for p in panels))


# Spacing, as fractions of the figure (Plotly's paper coordinates) or in pixels.
COLUMN_GAP = 0.035  # between two panels of a row
ROW_GAP_SHARED = 0.16  # between rows, split among them (room for the titles and tick labels of the row below)...
ROW_GAP_EACH = 0.04  # ...plus this much each
ROW_GAP_MOST = 64  # px at most between rows: a row's panel titles and the tick labels of the row above
MARGINS = {"b": 45, "l": 60, "r": 20}  # px
TOP_MARGIN, TOP_MARGIN_TITLED = 60, 85  # px above the first row: its panel titles, and the figure's title if any
SLIDE_TOP_MARGIN = 45  # px above a slide's first row (its one-line panel titles)
SLIDE_ROW_GAP_SHARED = 40  # px between a slide's rows of panels that share their x axis: only titles sit there
SLIDE_ONE_LINE_COLUMNS = 4  # panels a slide's row titles on one line (~170 px each); more a row: on two lines
# A named row's least height over its name's font size: a 14 px name's box is 19 px tall, and Plotly draws the rows
# ~10% shorter than the margins leave (it widens them for the tick labels). On a 1024x680 slide two rows of heatmaps
# left ~12 px a token's row, and the names ran into each other (issue 47's walk); at 768 px step 1's 18.9 px touched.
NAME_BOX = 1.5
FRAME_HEIGHT = 70  # px a figure adds to its rows' heights (mostly margins)
TITLE_HEIGHT = 30  # px the figure's title adds
X_TITLE_ROOM = 20  # px more between rows whose panels each carry an x title
TICK_FONT = 9  # px
NARROW_X_TICKS = 3  # x tick labels at most under a narrow panel of a few positions
PANEL_TITLE_FONT, PANEL_TITLE_FONT_NARROW = 12, 10  # px; narrow: four panels a row or more (a phone's ~60 px each)
# A phone's layout (explorer.grid.narrow) has PHONE_COLUMNS panels a row and its colour bars laid flat below the
# panels. Four 64x64 maps a row left ~35 px each beside a colour bar that took a quarter of the width (issue #28
# item 10).
PHONE_ROW_HEIGHT = 190  # px a row of two panels of ~135 px, their titles and tick labels
PHONE_WIDE_ROW_HEIGHT = 180  # px a row of one panel the phone's width: a few tokens' rows, tall enough to read


class Slide(Enum):
    """Where a grid is drawn: off a slide, or on one (a lesson's step in presenter mode) in rows of up to
    SLIDE_ONE_LINE_COLUMNS wide panels (short rows: titles on one line, the slide's own top margin and row gaps) or of
    more, narrow panels (titles on two lines). A slide's token names stand at the ends of its x axes either way."""

    OFF = "off"
    WIDE = "wide"
    NARROW = "narrow"


def _slide_of(height: int | None, ncols: int) -> Slide:
    """How a grid of ncols panels a row is drawn: on a slide when it is given its height."""
    if height is None:
        return Slide.OFF
    return Slide.WIDE if ncols <= SLIDE_ONE_LINE_COLUMNS else Slide.NARROW


@dataclass(frozen=True)
class GridText:
    """What a grid's axes and figure are called, whether its panels share their x axis down each column, and where
    it is drawn (its phone layout keeps the slide's: it is the same chart on a narrow screen)."""

    title: str
    x_title: str
    y_title: str
    share_x: bool
    slide: Slide = Slide.OFF


def panels_figure(
    panels: list[Panel],
    ncols: int,
    *,
    coloraxes: dict[str, dict],
    row_height: int,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    layout_cols: list[list[int]] | None = None,
    share_x: bool = True,
    phone_columns: int = PHONE_COLUMNS,
    height: int | None = None,
) -> dict:
    """Heatmaps in a grid, as one figure dict with its axes laid out by hand (make_subplots is several times slower,
    and every rerun paid for it). layout_cols optionally gives, per row, the column slots used. height (a slide's:
    explorer.lesson draws it so in presenter mode) makes the rows share that height, their titles on one line up to
    SLIDE_ONE_LINE_COLUMNS a row.

    Row labels are drawn on the first panel of each row only, and with share_x column labels only on the lowest panel
    of each column, so long token labels never run into the neighbouring panel; the hover names every cell anyway.
    """
    text = GridText(title, x_title, y_title, share_x, _slide_of(height, ncols))
    if height is not None:
        nrows = rows_of(arrange(len(panels), ncols, layout_cols))
        row_height = (height - _height(nrows, 0, text)) // nrows
    fig = _grid(panels, ncols, row_height=row_height, text=text, layout_cols=layout_cols)
    for name, axis in coloraxes.items():
        fig["layout"][name] = axis
    if ncols > phone_columns:
        row_height = PHONE_ROW_HEIGHT if phone_columns > 1 else PHONE_WIDE_ROW_HEIGHT
        phone = _grid(panels, phone_columns, row_height=row_height, text=text, layout_cols=None)["layout"]
        fig["narrow"] = narrow(with_flat_colorbars(phone, coloraxes))
    return fig


def _grid(
    panels: list[Panel], ncols: int, *, row_height: int, text: GridText, layout_cols: list[list[int]] | None
) -> dict:
    """panels_figure's grid at ncols panels a row, without colour axes."""
    cells = arrange(len(panels), ncols, layout_cols)
    nrows = rows_of(cells)
    height = _height(nrows, row_height, text)
    top = _top_margin(text)
    slots = place(cells, even_columns(ncols, COLUMN_GAP), even_rows(nrows, _row_gap(text, height, nrows)))
    layout: dict = {"height": height, "margin": {"t": top, **MARGINS}}
    if text.title:
        layout["title"] = {"text": text.title, "font": {"size": 14}}
    subplots = [_heatmap(panel, slot, ncols, text) for panel, slot in zip(panels, slots, strict=True)]
    font = PANEL_TITLE_FONT if ncols <= 3 else PANEL_TITLE_FONT_NARROW
    return grid_figure(slots, subplots, layout=layout, title_font=font)


def _top_margin(text: GridText) -> int:
    """px above the first row: its panel titles, the figure's title if any; on a slide's wide rows, the toolbar's
    row and one line of panel titles."""
    if text.slide is Slide.WIDE:
        return SLIDE_TOP_MARGIN
    return TOP_MARGIN_TITLED if text.title else TOP_MARGIN


def _row_gap(text: GridText, height: int, nrows: int) -> float:
    """The gap between rows, a share of the figure (height px) between its margins: the next row's panel titles, and
    unless the panels share their x axis, the tick labels and x titles of the row above. Rows that each carry their
    own x titles need X_TITLE_ROOM more: a title under one row ran into the next row's panel titles at a projector's
    width. A gap in fractions of the figure grows with it: in a tall figure (a phone's column of panels) it is
    capped. A slide's short wide rows keep the capped gap (their labels are drawn larger: SLIDE_FONT_SCALE)."""
    own_title = 0 if text.share_x else X_TITLE_ROOM
    plot = height - _top_margin(text) - MARGINS["b"]
    if text.slide is Slide.WIDE:
        return (SLIDE_ROW_GAP_SHARED if text.share_x else ROW_GAP_MOST + own_title) / plot
    return min(ROW_GAP_SHARED / nrows + ROW_GAP_EACH + own_title / height, (ROW_GAP_MOST + own_title) / plot)


def slide_columns(n_panels: int, ncols: int, *, height: int, rows: list, share_x: bool) -> int:
    """Panels a row on a slide `height` px tall: ncols, or all of them in one row where rows of ncols would leave a
    panel's rows (labelled `rows`) shorter than a name's box at the slide's tick size, when each row is named. The
    rows of ncols are laid out as panels_figure lays them, and sized as explorer.present.for_projector draws them:
    fonts times SLIDE_FONT_SCALE, margins grown with them (explorer.present.projected_margins)."""
    nrows = math.ceil(n_panels / ncols)
    if nrows == 1 or not _every_name(rows):
        return ncols
    text = GridText("", "", "", share_x, _slide_of(height, ncols))
    margin = projected_margins({"t": _top_margin(text), "b": MARGINS["b"]}, SLIDE_FONT_SCALE)
    plot_px = height - margin["t"] - margin["b"]
    row_px = plot_px * (1 - _row_gap(text, height, nrows) * (nrows - 1)) / nrows
    name_px = max(TICK_FONT * SLIDE_FONT_SCALE, MIN_TEXT_PX) * NAME_BOX
    return ncols if row_px / len(rows) >= name_px else n_panels


def _height(nrows: int, row_height: int, text: GridText) -> int:
    """The figure's height in px: its rows, its frame, its title, and the room of rows' own x titles."""
    own_titles = 0 if text.share_x else X_TITLE_ROOM * (nrows - 1)
    return row_height * nrows + FRAME_HEIGHT + (TITLE_HEIGHT if text.title else 0) + own_titles


def _heatmap(panel: Panel, slot: Slot, ncols: int, text: GridText) -> Subplot:
    """One panel of the grid: its heatmap, its axes (labelled once a row and, shared, once a column), its title."""
    trace = {
        "type": "heatmap",
        "z": typed_array(panel.z),
        "x": panel.x,
        "y": panel.y,
        "coloraxis": panel.coloraxis,
        "hovertemplate": panel.hover,
        "hoverongaps": False,
    }
    if panel.show_values:
        # No font size: Plotly fits the numbers to the cells (12 px at most), so on a phone's narrow panels they
        # shrink instead of running into each other
        trace["texttemplate"] = "%{z:.2f}"
    x_axis, y_axis = _x_axis(slot, ncols, text), _y_axis(slot, text)
    named = text.slide is not Slide.OFF and _every_name(panel.x)
    x_axis |= _end_positions(panel.x) if named else _position_ticks(panel.x, every_few=ncols >= 3)
    y_axis |= _position_ticks(panel.y, every_few=False) or _every_name(panel.y)
    if text.slide is Slide.WIDE:
        title = panel.title.replace("<br>", " ")
    else:
        title = _two_lines(panel.title) if ncols >= 3 else panel.title
    return Subplot([trace], x_axis, y_axis, title)


def _x_axis(slot: Slot, ncols: int, text: GridText) -> dict:
    # Three or more panels a row leave ~30-60 px each on a phone: one x title and tick labels per column ran into
    # their neighbours, so with shared columns these are drawn once, under the first column (as row labels are drawn
    # once, on the first panel of a row); the hover names every cell.
    titled = ncols < 3 or not text.share_x or slot.col == 0
    return {
        "tickfont": {"size": TICK_FONT},
        "showticklabels": (slot.lowest_in_col or not text.share_x) and titled,
        "title": {"text": text.x_title if slot.lowest_in_col and titled else ""},
    }


def _y_axis(slot: Slot, text: GridText) -> dict:
    return {
        "autorange": "reversed",
        "tickfont": {"size": TICK_FONT},
        "showticklabels": slot.first_in_row,
        "title": {"text": text.y_title if slot.first_in_row else ""},
    }


def _position_ticks(labels: list, *, every_few: bool) -> dict:
    """A tick on every position of a short axis of positions (Plotly's own would put -0.4 … 0.4 around a single
    token); across narrow panels (three or more a row: ~30 px each on a phone) every few positions, or the labels
    run together. Nothing for token labels or long axes."""
    if not (0 < len(labels) <= SHOW_VALUES_UP_TO and isinstance(labels[0], int)):
        return {}
    every = math.ceil(len(labels) / NARROW_X_TICKS) if every_few else 1
    return {"dtick": (labels[1] - labels[0] if len(labels) > 1 else 1) * every}


def _end_positions(labels: list) -> dict:
    """A slide's x ticks of token names at the axis's two ends, by position ("0 cats" -> "0"): Plotly turned the
    names on their side under the lowest row, which took ~45 px from a 768-px slide's rows, and a row of eight panels
    (~60 px each) drew every other name; the first panel's rows name the tokens."""
    ends = [labels[0], labels[-1]]
    return {"tickmode": "array", "tickvals": ends, "ticktext": [str(end).split(" ", 1)[0] for end in ends]}


def _every_name(labels: list) -> dict:
    """A name on every row of a short axis of names (tokens, heads): Plotly's own ticks keep ~40 px a name and named
    every other token of a 1024x680 slide's panels (3 of 6) and 4 of a phone's 8 decode heads, where rows that hold a
    cell's number hold a 9-11 px name too."""
    return {"dtick": 1} if 0 < len(labels) <= SHOW_VALUES_UP_TO and isinstance(labels[0], str) else {}


def _two_lines(title: str) -> str:
    """A panel title on two lines: three or more panels a row leave ~150 px each on a projector's half width or a
    phone, and one-line titles ran into each other ("MHA · head 0MQA · head 0")."""
    if "<br>" in title or title.partition(" ")[2].isdigit():
        return title  # "head 3" / "头 3" is short, and a number alone on a line reads as nothing
    for separator in (" · ", " "):
        if separator in title:
            return title.replace(separator, "<br>", 1)
    return title
