"""The masks page's sections (padding, causal prefill, chunked prefill, cross-attention), from the probe
(explorer.probes.masks), cached once per layer, head and lengths, to each section's panels (a title in the page's
language, the matrix, its labels, mask or weights), its figure on the shared grid (explorer/grid.py), its CSV rows,
and the tables and check lines beside it."""

from __future__ import annotations

import numpy as np
import streamlit as st

from attn_core import AttentionConfig
from explorer.charts import typed_array
from explorer.grid import Subplot, arrange, columns_by_width, even_rows, grid_figure, place
from explorer.i18n import _, n_, speaking
from explorer.probes import FLOAT32_TOLERANCE
from explorer.probes.masks import ChunkResult, CrossResult, MaskLengths, PaddingResult, explore_masks
from explorer.work import cached_probe


def csv_rows(panels: list[dict]) -> list[dict]:
    """Every cell of every panel: panel, query position, key position, value (column names are the CSV's
    identifiers, the same in both languages; the panel's title is in the page's)."""
    rows = []
    for panel in panels:
        z = np.asarray(panel["z"])
        for i, y in enumerate(panel["y"]):
            for j, x in enumerate(panel["x"]):
                rows.append({"panel": panel["title"], "query": y, "key": x, "value": float(z[i, j])})
    return rows


def mask_table(key_padding_mask: np.ndarray) -> dict[str, list[str]]:
    """key_padding_mask [2, S] as columns for st.dataframe: which keys are real and which padding as ranges first (the
    point, seen without scrolling on a phone, where a dozen key columns do not fit), then key by key, ✓ real, · pad."""

    def span(positions: np.ndarray) -> str:
        if not len(positions):
            return "—"
        first, last = int(positions[0]), int(positions[-1])
        return str(first) if first == last else f"{first}…{last}"

    table = {
        _("sequence"): [_("long"), _("short")],
        _("real keys"): [span(np.flatnonzero(row)) for row in key_padding_mask],
        _("padded keys"): [span(np.flatnonzero(~row)) for row in key_padding_mask],
    }
    for j in range(key_padding_mask.shape[1]):
        table[str(j)] = ["✓" if flag else "·" for flag in key_padding_mask[:, j]]
    return table


def check_line(name: str, value: float, tolerance: float = FLOAT32_TOLERANCE) -> str:
    """One line of a check: ✓ or ✗, what was compared, the largest difference and the tolerance."""
    return _(
        "{mark} {name}: max |difference| = {value} (tolerance {tolerance}, float32)",
        mark="✓" if value <= tolerance else "✗",
        name=name,
        value=f"{value:.2e}",
        tolerance=f"{tolerance:.0e}",
    )


MASK_SCALE = [[0.0, "#d9d9d9"], [1.0, "#2c7fb8"]]  # grey = blocked, blue = may attend

# Spacing of a figure's panels (paper coordinates) and its margins (px)
PANEL_GAP = 0.12  # room for the next panel's tick labels: at 0.08 they ran into the panel before on a phone
MARGIN = {"t": 90, "b": 40, "l": 60, "r": 20}  # the top: room for two-line panel titles under the toolbar
PANEL_TITLE_FONT = 14  # px


def heatmaps_figure(panels: list[dict], *, height: int = 360) -> dict:
    """Heatmaps side by side, each as wide as its key count. Each panel: title (in the page's language), z [rows,
    cols], x (key) and y (query) labels, kind "mask" or "weight". Laid out on the shared grid (explorer/grid.py) as a
    figure dict, shown as it is by explorer.charts.show_chart: make_subplots is much slower
    (benchmarks/MEASUREMENTS.md), and a head change redraws three of them."""
    columns = columns_by_width([max(len(p["x"]), 1) for p in panels], PANEL_GAP)
    slots = place(arrange(len(panels), len(panels)), columns, even_rows(1, 0.0))
    layout = {
        "height": height,
        "margin": dict(MARGIN),
        "coloraxis": {"colorscale": "Viridis", "cmin": 0, "colorbar": {"title": {"text": _("weight")}, "len": 0.9}},
    }
    subplots = [_mask_subplot(panel, first=index == 0) for index, panel in enumerate(panels)]
    return grid_figure(slots, subplots, layout=layout, title_font=PANEL_TITLE_FONT)


def _mask_subplot(panel: dict, *, first: bool) -> Subplot:
    """One panel: its heatmap on category axes (positions as labels), titled on two lines (side by side on a phone, a
    panel is ~150 px wide and one-line titles ran together)."""
    axis = {"type": "category", "tickfont": {"size": 9}}
    return Subplot(
        [_mask_trace(panel)],
        x_axis={**axis, "title": {"text": _("key position")}},
        # Only the first panel names its rows: on a phone a second title ran into the first panel.
        y_axis={**axis, "autorange": "reversed", "title": {"text": _("query position") if first else ""}},
        title=two_lines(panel["title"]),
    )


def _mask_trace(panel: dict) -> dict:
    """A panel's heatmap: masks in fixed grey (0, blocked) and blue (1, may attend) without a colour bar; weights on
    the figure's one colour axis, shared by its weight panels."""
    is_mask = panel["kind"] == "mask"
    hover = (
        _("query %{y}<br>key %{x}<br>%{z:.0f} (1 = may attend)")
        if is_mask
        else _("query %{y}<br>key %{x}<br>weight %{z:.4g}")
    )
    colours = (
        {"zmin": 0, "zmax": 1, "colorscale": MASK_SCALE, "showscale": False} if is_mask else {"coloraxis": "coloraxis"}
    )
    return {
        "type": "heatmap",
        "z": typed_array(panel["z"]),
        "x": [str(v) for v in panel["x"]],
        "y": [str(v) for v in panel["y"]],
        "xgap": 1,
        "ygap": 1,
        "hovertemplate": hover + f"<extra>{panel['title']}</extra>",
        **colours,
    }


def two_lines(title: str) -> str:
    """A panel title on up to two lines, broken before its parenthesis, else after its first comma, else after its
    colon (English or Chinese punctuation): side by side on a phone, a panel is ~150 px wide and one-line titles ran together."""
    for before, after in (
        (" (", "<br>("),
        ("（", "<br>（"),
        (", ", ",<br>"),
        ("，", "，<br>"),
        (": ", ":<br>"),
        ("：", "：<br>"),
    ):
        if before in title:
            return title.replace(before, after, 1)
    return title


def padding_panels(result: PaddingResult, head: int, short_len: int) -> list[dict]:
    allowed = result.allowed[1].astype(np.float32)  # [L, S] of the short sequence
    positions = list(range(allowed.shape[1]))
    return [
        {
            "title": _("allowed (short sequence)"),
            "z": allowed,
            "x": positions,
            "y": positions,
            "kind": "mask",
        },
        {
            "title": _("head {head} weights (short sequence)", head=head),
            "z": result.short_weights[0],
            "x": positions,
            "y": positions,
            "kind": "weight",
        },
    ]


def chunk_mask_panels(result: ChunkResult, prefill: int) -> list[dict]:
    total = result.full_mask.shape[0]
    positions = list(range(total))
    return [
        {
            "title": _("full pass: {total} × {total}", total=total),
            "z": result.full_mask.astype(np.float32),
            "x": positions,
            "y": positions,
            "kind": "mask",
        },
        {
            "title": _(
                "chunk after {prefill} cached: {rows} × {total}", prefill=prefill, rows=total - prefill, total=total
            ),
            "z": result.chunk_mask.astype(np.float32),
            "x": positions,
            "y": positions[prefill:],
            "kind": "mask",
        },
    ]


def chunk_weight_panels(result: ChunkResult, head: int, prefill: int) -> list[dict]:
    total = result.full_mask.shape[0]
    positions = list(range(total))
    return [
        {
            "title": _("head {head}, full pass", head=head),
            "z": result.full_weights[0],
            "x": positions,
            "y": positions,
            "kind": "weight",
        },
        {
            "title": _("head {head}, chunk through the cache", head=head),
            "z": result.chunk_weights[0],
            "x": positions,
            "y": positions[prefill:],
            "kind": "weight",
        },
    ]


def cross_panels(result: CrossResult, head: int) -> list[dict]:
    weights = result.weights[0]  # [L, S]
    return [
        {
            "title": _(
                "head {head}: {queries} × {keys}",
                head=head,
                queries=n_("{n} query", "{n} queries", weights.shape[0]),
                keys=n_("{n} key", "{n} keys", weights.shape[1]),
            ),
            "z": weights,
            "x": list(range(weights.shape[1])),
            "y": list(range(weights.shape[0])),
            "kind": "weight",
        },
    ]


# One layer of the shown head built per distinct (layer, seed, head, lengths): a sidebar change this page does not use
# (sequence length, batch, dtype) recomputes nothing. Lengths by keyword (explore_masks's names).
masks_result = cached_probe(explore_masks, max_entries=8)


@st.cache_data(max_entries=64, show_spinner=False)
def section_chart(
    section: str, cfg: AttentionConfig, seed: int, lengths: MaskLengths, head: int, lang: str
) -> tuple[dict, list[dict]]:
    """The figure and CSV rows of one section, kept ready, so a rerun that changes nothing here rebuilds nothing.
    lengths: explore_masks's length arguments, by name. lang: the language the figure's words are made in (the page
    passes the run's language(), so each language has its own cached figure)."""
    with speaking(lang):
        result = masks_result(cfg, seed, head=head, **lengths)
        short_len, prefill = lengths["short_len"], lengths["prefill"]
        if section == "padding":
            panels, height = padding_panels(result.padding, head, short_len), 360
        elif section == "causal":
            panels, height = chunk_mask_panels(result.chunk, prefill), 340
        elif section == "chunk":
            panels, height = chunk_weight_panels(result.chunk, head, prefill), 340
        elif section == "cross":
            if result.cross is None:
                raise ValueError(
                    "section='cross': MLA has self-attention only, so there is no cross-attention to draw."
                )
            panels, height = cross_panels(result.cross, head), 340
        else:
            raise ValueError(f"section={section!r}: one of padding, causal, chunk, cross.")
        return heatmaps_figure(panels, height=height), csv_rows(panels)
