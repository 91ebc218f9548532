"""The attention heatmaps page: its link parameters, cached probes, and figures built from
explorer.probes.heatmaps results (plain arrays in, Plotly figures and CSV rows out)."""

from __future__ import annotations

import csv
import io
import math
import unicodedata
from dataclasses import dataclass, field, replace

import numpy as np
import streamlit as st
from plotly.colors import sample_colorscale

from attn_core import VARIANTS, AttentionConfig
from attn_core.accounting import bytes_per_element
from explorer.probes.heatmaps import (
    COMPARE_WORK_BUDGET,
    MAX_TEXT_CHARS,
    MAX_TEXT_TOKENS,
    InputSpec,
    block_size,
    compare_from_mha,
    explore_variant,
    joint_kv_basis,
    pool_blocks,
    steps_of_head,
    token_window,
    tokenize,
)

from .charts import PLOTLY_TEMPLATE, typed_array
from .params import Choice, Flag
from .settings import D_MODEL_CHOICES, Settings
from .work import takes_turns

MAX_PANELS = 16  # heads drawn (and computed) at once in the grid; the page picker moves through the rest
GRID_CELLS = 2**16  # cells of the whole grid figure (float32 -> about 350 kB of base64)
SMALL_SIDE = 64  # cells per side of one heatmap when many share a figure
LARGE_SIDE = 128  # ... when at most four do
STEP_SIDE = 64  # cells per side of each step of "inside one head"
DECODE_CELLS = 2**14
SHOW_VALUES_UP_TO = 12  # write the numbers into the cells when a matrix is at most this many cells wide and high
DEFAULT_TEXT = "the cat sat on the mat and the dog sat on the log"
SCALES = ("0.5", "1", "2", "4")


@dataclass(frozen=True)
class Text:
    """Free text in the link: control characters dropped and the length capped, so any link value is usable."""

    name: str
    default: str
    max_chars: int

    def parse(self, text: str, options: tuple | None = None) -> tuple[str, str | None]:
        cleaned = clean_text(text, self.max_chars)
        if cleaned != text:
            return cleaned, (
                f"{self.name}: the text was cleaned (control characters removed, at most {self.max_chars} characters)."
            )
        return cleaned, None

    def to_text(self, value: str) -> str:
        return value


def clean_text(text: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """text without control or format characters (newlines become spaces), at most max_chars long."""
    text = text.replace("\n", " ").replace("\t", " ")
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("C"))[:max_chars]


VARIANT = Choice("hm_variant", VARIANTS, "gqa")
GROUP = Choice("hm_group", ("all",), "all")  # options at bind time: "all", 0 .. n_kv_heads - 1
FIRST_HEAD = Choice("hm_from", (0,), 0)  # first head of the page of heads drawn, when there are more than MAX_PANELS
HEAD = Choice("hm_head", (0,), 0)  # the head opened up in "inside one head" and compared across variants
INPUT = Choice("hm_input", ("random", "text"), "random")
TEXT = Text("hm_text", DEFAULT_TEXT, MAX_TEXT_CHARS)
TOKENS = Choice("hm_tokens", ("words", "chars"), "words")
SCALE = Choice("hm_scale", SCALES, "2")
CAUSAL = Flag("hm_causal", True)
ROPE = Flag("hm_rope", True)
POOL = Choice("hm_pool", ("mean", "max"), "mean")


# --- what is computed -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    spec: InputSpec  # the window actually computed
    wanted: int  # tokens asked for (sequence length, or the text's tokens)
    notes: tuple[str, ...] = ()


def make_input_spec(settings: Settings, *, kind: str, text: str, tokens: str, scale: str) -> Inputs:
    """The window of tokens the page computes, and sentences saying what was cut."""
    base = InputSpec(d_model=settings.d_model, seed=settings.seed, scale=float(scale))
    notes = []
    if kind == "text":
        words = tokenize(clean_text(text), tokens)
        if not words:
            notes.append("The text is empty: showing the example sentence until you type one.")
            words = tokenize(DEFAULT_TEXT, tokens)
        if len(words) > MAX_TEXT_TOKENS:
            notes.append(
                f"Text is limited to {MAX_TEXT_TOKENS} tokens: the first {MAX_TEXT_TOKENS} of {len(words)} are used."
            )
            words = words[:MAX_TEXT_TOKENS]
        spec = replace(base, tokens=tuple(words))
    else:
        spec = replace(base, n_tokens=settings.seq_len)
    wanted = spec.length
    # the heads one pass computes: a page of them (the same bound for every page and variant, so the window is too)
    window = token_window(min(settings.heads, MAX_PANELS), settings.d_model, settings.head_dim, wanted)
    return Inputs(spec.truncated(window), wanted, tuple(notes))


def layer_config(settings: Settings, variant: str, rope: bool) -> AttentionConfig:
    return replace(settings.config(variant), rope=rope)


@st.cache_data(max_entries=6, show_spinner=False)
@takes_turns
def variant_result(cfg: AttentionConfig, seed: int, spec: InputSpec, causal: bool, heads: range) -> dict:
    """The one pass sections 1, 3 and 4 draw from: a layer of the page's heads is built once per (settings, window,
    page), whatever is shown."""
    return explore_variant(cfg, seed, spec, causal=causal, heads=heads)


@st.cache_data(max_entries=4, show_spinner=False)
def kv_basis(d_model: int, heads: int, seed: int, _mha) -> np.ndarray:
    """MHA's key-value singular vectors for the MLA conversion. They depend on the MHA weights alone, so a change of
    window, KV groups or latent width reuses them; on a miss they come from the MHA layer the comparison has just
    built (_mha: not part of the cache key, which (d_model, heads, seed) determines)."""
    return joint_kv_basis(_mha).numpy()


@st.cache_data(max_entries=4, show_spinner=False)
@takes_turns
def comparison_result(
    configs: tuple[tuple[str, AttentionConfig], ...], seed: int, spec: InputSpec, causal: bool
) -> dict:
    first = configs[0][1]
    return compare_from_mha(
        dict(configs), seed, spec, causal=causal, basis_of=lambda mha: kv_basis(first.d_model, first.n_heads, seed, mha)
    )


def comparison_blocked(d_model: int, length: int) -> str | None:
    """Why section 2 is not computed at this width and window, and what to pick to see it; None when it is computed.

    The comparison builds one more layer (MHA), makes the variants from it and runs them all on the window: its work
    grows as tokens × d_model², and above COMPARE_WORK_BUDGET it alone would take more than a rerun may (at d_model
    8192 drawing MHA's weights takes 1-2 s here).
    """
    if length * d_model**2 <= COMPARE_WORK_BUDGET:
        return None
    widest = max((d for d in D_MODEL_CHOICES if length * d * d <= COMPARE_WORK_BUDGET), default=D_MODEL_CHOICES[0])
    longest = COMPARE_WORK_BUDGET // (d_model * d_model)
    advice = f"Pick d_model {widest:,} or less in the sidebar to see it on these {length:,} tokens"
    if longest >= 16:
        advice += f", or keep d_model {d_model:,} with a sequence of at most {longest:,} tokens"
    return (
        f"Not computed at d_model {d_model:,} on {length:,} tokens: the comparison builds one more layer (MHA, "
        f"{4 * d_model * d_model / 1e6:,.1f} million weights), makes the other variants from it and runs them all over "
        f"the window. That work grows as tokens × d_model²: here {length * d_model**2 / 1e6:,.0f} million, "
        f"{length * d_model**2 / COMPARE_WORK_BUDGET:.1f}× the {COMPARE_WORK_BUDGET / 1e6:,.0f} million this page "
        f"allows it so that a rerun stays interactive on this server. {advice}."
    )


# --- which heads are drawn ------------------------------------------------------------------------------------------
def head_pages(n_heads: int, group_size: int, group) -> list[range]:
    """The pages of at most MAX_PANELS heads the grid shows, of all heads or of one KV group. A page holds whole KV
    groups, or heads of one group when a group has more than MAX_PANELS: so each page is a layer of its own
    (AttentionConfig.head_subset), and only its heads are computed."""
    if group == "all":
        candidates = range(n_heads)
    else:
        candidates = range(group * group_size, (group + 1) * group_size)
    if group_size <= MAX_PANELS:
        runs, per_page = [candidates], MAX_PANELS // group_size * group_size
    else:
        runs = [range(start, start + group_size) for start in range(candidates.start, candidates.stop, group_size)]
        per_page = MAX_PANELS
    return [
        range(start, min(start + per_page, run.stop)) for run in runs for start in range(run.start, run.stop, per_page)
    ]


def heads_text(heads: range) -> str:
    return f"head {heads.start}" if len(heads) == 1 else f"heads {heads.start}–{heads.stop - 1}"


def grid_columns(n_shown: int, group_size: int) -> int:
    """Columns of the grid: one KV group per row when groups have 2..8 heads, so heads that share keys sit together."""
    if 2 <= group_size <= 8:
        return min(group_size, n_shown)
    if group_size > 8:
        return min(8, n_shown)
    return min(4, n_shown)


# --- figures --------------------------------------------------------------------------------------------------------
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
        return f"{self.how} of {self.rows}×{self.cols} blocks" if self.pooled else "every value"


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
        hover = (
            f"{y_name}s from %{{y}}<br>{x_name}s from %{{x}}<br>{pooling.how} of a {pooling.rows}×{pooling.cols} "
            f"block: %{{z:.4g}}<extra>{title}</extra>"
        )
    else:
        hover = f"{y_name} %{{y}}<br>{x_name} %{{x}}<br>{value_name} %{{z:.4g}}<extra>{title}</extra>"
    small = max(z.shape) <= SHOW_VALUES_UP_TO
    return Panel(title, z, x, y, hover, coloraxis, small, csv_name=csv_name or title)


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
) -> dict:
    """Heatmaps in a grid, as one figure dict with its axes laid out by hand (make_subplots is several times slower,
    and every rerun paid for it). layout_cols optionally gives, per row, the column slots used.

    Row labels are drawn on the first panel of each row only, and with share_x column labels only on the lowest panel
    of each column, so long token labels never run into the neighbouring panel; the hover names every cell anyway.
    """
    slots = layout_cols or [list(range(ncols))] * math.ceil(len(panels) / ncols)
    placed = []  # (row, column) of each panel
    for r, cols in enumerate(slots):
        placed.extend((r, c) for c in cols)
    placed = placed[: len(panels)]
    lowest = {c: max(r for r, cc in placed if cc == c) for _, c in placed}
    nrows = placed[-1][0] + 1 if placed else 1
    gap_x, gap_y = 0.035, 0.16 / nrows + 0.04
    layout: dict = {
        "annotations": [],
        "height": row_height * nrows + 70 + (30 if title else 0),
        "margin": {"t": 70 if title else 45, "b": 45, "l": 60, "r": 20},
    }
    if title:
        layout["title"] = {"text": title, "font": {"size": 14}}
    data = []
    for index, (panel, (r, c)) in enumerate(zip(panels, placed)):
        suffix = "" if index == 0 else str(index + 1)
        x0, x1 = c / ncols + gap_x / 2, (c + 1) / ncols - gap_x / 2
        y1 = 1 - r / nrows - (gap_y / 2 if r else 0)
        y0 = 1 - (r + 1) / nrows + (gap_y / 2 if r < nrows - 1 else 0)
        first_in_row = c == slots[r][0]
        bottom = r == lowest[c] or not share_x
        layout[f"xaxis{suffix}"] = {
            "domain": [x0, x1],
            "anchor": f"y{suffix}",
            "tickfont": {"size": 9},
            "showticklabels": bottom,
            "title": {"text": x_title if r == lowest[c] else ""},
        }
        layout[f"yaxis{suffix}"] = {
            "domain": [y0, y1],
            "anchor": f"x{suffix}",
            "autorange": "reversed",
            "tickfont": {"size": 9},
            "showticklabels": first_in_row,
            "title": {"text": y_title if first_in_row else ""},
        }
        for axis, labels in ((f"xaxis{suffix}", panel.x), (f"yaxis{suffix}", panel.y)):
            if 0 < len(labels) <= SHOW_VALUES_UP_TO and isinstance(labels[0], int):
                # a tick on every position: Plotly's own would put -0.4 … 0.4 around a single token
                layout[axis]["dtick"] = labels[1] - labels[0] if len(labels) > 1 else 1
        layout["annotations"].append(
            {
                "text": panel.title,
                "x": (x0 + x1) / 2,
                "y": y1,
                "xref": "paper",
                "yref": "paper",
                "showarrow": False,
                "yanchor": "bottom",
                "font": {"size": 12 if ncols <= 4 else 10},
            }
        )
        trace = {
            "type": "heatmap",
            "z": typed_array(panel.z),
            "x": panel.x,
            "y": panel.y,
            "coloraxis": panel.coloraxis,
            "hovertemplate": panel.hover,
            "xaxis": f"x{suffix}",
            "yaxis": f"y{suffix}",
            "hoverongaps": False,
        }
        if panel.show_values:
            trace["texttemplate"] = "%{z:.2f}"
            trace["textfont"] = {"size": 9}
        data.append(trace)
    for name, axis in coloraxes.items():
        layout[name] = axis
    layout["template"] = PLOTLY_TEMPLATE
    return {"data": data, "layout": layout}


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
        for name, labels, z in zip(self.names, self.labels, self.matrices):
            padding = ("",) * (width - z.shape[1])
            for label, line in zip(labels, z.tolist()):
                cells = [f"{v:.7g}" if v == v else "" for v in line]  # v != v: NaN, a masked cell
                writer.writerow((name, label, *cells, *padding))
        return out.getvalue()


def panel_csv(panels: list[Panel]) -> PanelNumbers:
    """The panels' numbers for the chart's CSV download."""
    return PanelNumbers(tuple(p.csv_name for p in panels), tuple(p.y for p in panels), tuple(p.z for p in panels))


def _square_root_blues() -> list[list]:
    """Blues laid out so colour grows with the square root of the value: weights of 0.01 are visible next to 1,
    while the colour bar still reads in plain weights."""
    steps = np.linspace(0.0, 1.0, 17)
    return [[float(s * s), color] for s, color in zip(steps, sample_colorscale("Blues", steps.tolist()))]


WEIGHT_COLORSCALE = _square_root_blues()


def weights_axis(vmax: float, title: str = "weight") -> dict:
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


def grid_pooling(length: int, n_panels: int, how: str) -> Pooling:
    side = SMALL_SIDE if n_panels > 4 else LARGE_SIDE
    side = min(side, math.isqrt(GRID_CELLS // max(n_panels, 1)))
    block = block_size(length, side)
    return Pooling(block, block, how)


def head_label(head: int, kv_head: int, variant: str, *, two_lines: bool = False) -> str:
    if variant in ("mha", "mla"):
        return f"head {head}"
    return f"head {head}<br>KV {kv_head}" if two_lines else f"head {head} · KV {kv_head}"


def grid_figure(result: dict, variant: str, group_size: int, *, pool: str, tokens: list[str] | None):
    """Every computed head's weights, one KV group per row where groups are 2..8 heads wide."""
    weights, heads = result["weights"], result["heads"]
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
        for i, (h, kv) in enumerate(zip(heads, result["kv_head"]))
    ]
    vmax = max(float(np.nanmax(p.z)) for p in panels)
    fig = panels_figure(
        panels,
        ncols,
        coloraxes={"coloraxis": weights_axis(vmax)},
        row_height=240 if ncols <= 4 else 170,
        x_title="key position" if not two_lines else "key",
        y_title="query position",
    )
    return fig, panel_csv(panels), pooling


def compare_figure(results: dict, head: int, *, pool: str, tokens: list[str] | None):
    """Head `head` of each variant made from the same MHA layer, side by side."""
    shown_variants = [v for v, r in results.items() if "weights" in r]
    length = results[shown_variants[0]]["weights"].shape[1]
    pooling = grid_pooling(length, 16, pool)  # the small side: four of these sit in one row
    panels = [
        attention_panel(results[v]["weights"][head], title=f"{v.upper()} · head {head}", pooling=pooling, tokens=tokens)
        for v in shown_variants
    ]
    vmax = max(float(np.nanmax(p.z)) for p in panels)
    fig = panels_figure(
        panels,
        len(panels),
        coloraxes={"coloraxis": weights_axis(vmax)},
        row_height=300,
        x_title="key position",
        y_title="query position",
    )
    return fig, panel_csv(panels), pooling


def steps_figure(steps: dict[str, np.ndarray], *, causal: bool, pool: str, tokens: list[str] | None, d_k: int):
    """Q, K, V, then Q·Kᵀ, ÷√d_k, masked, softmax and ×V as matrices, in the order the formula applies them."""
    length, keys = steps["scores"].shape
    square = Pooling(block_size(length, STEP_SIDE), block_size(keys, STEP_SIDE), pool)

    def tall(n_rows: int, n_cols: int) -> Pooling:
        return Pooling(block_size(n_rows, STEP_SIDE), block_size(n_cols, STEP_SIDE), pool)

    q, k, v = steps["q"], steps["k"], steps["v"]
    d_v = v.shape[1]
    shape = f"{length}×{keys}"
    masked_shown = np.where(np.isfinite(steps["masked"]), steps["masked"], np.nan)  # −∞ goes out as a gap
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
            steps["scores"],
            title="① Q·Kᵀ",
            pooling=square,
            tokens=tokens,
            value_name="score",
            coloraxis="coloraxis3",
            csv_name=f"1 scores Q.K^T [{shape}]",
        ),
        attention_panel(
            steps["scaled"],
            title=f"② ×1/√{d_k}",
            pooling=square,
            tokens=tokens,
            value_name="scaled score",
            coloraxis="coloraxis4",
            csv_name=f"2 scaled x{d_k**-0.5:.4g}",
        ),
        attention_panel(
            masked_shown,
            title="③ + mask" if causal else "③ no mask",
            pooling=square,
            tokens=tokens,
            value_name="masked score",
            coloraxis="coloraxis4",
            csv_name="3 masked (empty = -inf)",
        ),
        attention_panel(steps["weights"], title="④ softmax", pooling=square, tokens=tokens, csv_name="4 softmax"),
        attention_panel(
            steps["out"],
            title=f"⑤ ·V [{length}×{d_v}]",
            pooling=tall(*steps["out"].shape),
            tokens=tokens,
            value_name="value",
            coloraxis="coloraxis5",
            x_name="dim",
            csv_name="5 output",
        ),
    ]
    coloraxes = {
        "coloraxis": weights_axis(float(np.nanmax(panels[6].z)), "weight") | {"showscale": False},
        "coloraxis2": diverging_axis(np.concatenate([q.ravel(), k.ravel(), v.ravel()]), "q, k, v")
        | {"showscale": False},
        "coloraxis3": diverging_axis(steps["scores"], "score") | {"showscale": False},
        "coloraxis4": diverging_axis(steps["scaled"], "scaled score") | {"showscale": False},
        "coloraxis5": diverging_axis(steps["out"], "output") | {"showscale": False},
    }
    fig = panels_figure(
        panels,
        5,
        coloraxes=coloraxes,
        row_height=260,
        layout_cols=[[0, 1, 2], [0, 1, 2, 3, 4]],
        share_x=False,
    )
    return fig, panel_csv(panels), square


def decode_figure(result: dict, variant: str, *, pool: str, tokens: list[str] | None, highlight: int):
    """The decode step's weights: one row per head (grouped heads next to each other), one column per cached key."""
    row = result["decode"]["row"]  # [H, S], one row per computed head
    heads, keys = row.shape
    pooling = Pooling(1, block_size(keys, max(1, DECODE_CELLS // heads)), pool)
    z = pool_blocks(row, 1, pooling.cols, pool)
    x = axis_labels(keys, pooling.cols, tokens)
    y = [head_label(h, kv, variant) for h, kv in zip(result["heads"], result["kv_head"])]
    hover = (
        "%{y}<br>key %{x}<br>weight %{z:.4g}"
        if not pooling.pooled
        else f"%{{y}}<br>keys from %{{x}}<br>{pool} of {pooling.cols} keys: %{{z:.4g}}"
    ) + "<extra></extra>"
    panel = Panel("", z, x, y, hover, csv_name="decode step")
    fig = panels_figure(
        [panel],
        1,
        coloraxes={"coloraxis": weights_axis(float(np.nanmax(z)))},
        row_height=min(520, 40 + 18 * heads),
        x_title="cached key position (the last one is the token itself)",
    )
    # the head opened up in "inside one head", outlined (categories sit at 0, 1, ... on the y axis)
    at = result["heads"].index(highlight)
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


def upper_triangle(length: int) -> np.ndarray:
    """1 above the diagonal of a square [length, length] matrix (the keys a causal query may not see), else 0."""
    return np.triu(np.ones((length, length), dtype=np.float32), k=1)


def cache_table(cache_shapes: dict, cfg: AttentionConfig, dtype: str) -> list[dict]:
    """What the decode step read from the cache, from the shapes measured on the real cache after the step."""
    size = bytes_per_element(dtype)
    if cfg.n_kv_heads == 1:
        grouped_reader = "every query head: the one KV head"
    elif cfg.group_size == 1:
        grouped_reader = "query head h reads KV head h, its own"
    else:
        grouped_reader = f"query head h reads KV head ⌊h / {cfg.group_size}⌋"
    readers = {
        "k": grouped_reader,
        "v": grouped_reader,
        "c_kv": "every head, through its absorbed query (W_UK) and output (W_UV)",
        "k_rope": "every head: one rotary key shared by all",
    }
    rows = []
    for name, shape in cache_shapes.items():
        batch, heads, held, width = shape
        rows.append(
            {
                "Cache tensor": name,
                "Shape [batch, heads, tokens, width]": f"[{batch}, {heads}, {held}, {width}]",
                "Numbers per token": heads * width,
                f"Bytes read per step in {dtype}": f"{held * heads * width * size:,}",
                "Read by": readers.get(name, ""),
            }
        )
    return rows


def similarity_table(results: dict, head: int) -> list[dict]:
    """The comparison's numbers, one row per variant, as shown (every row has every column, as text)."""
    table = []
    for variant, r in results.items():
        if "skipped" in r:
            row = dict.fromkeys(_SIMILARITY_COLUMNS, "—")
            row.update({"Variant": variant.upper(), "Output distance from MHA": "not computed: " + r["skipped"]})
            table.append(row)
            continue
        values = [
            variant.upper(),
            str(r["group_size"]),
            f"{100 * r['output_distance']:.1f} %",
            f"{100 * r['overlap_with_mha'][head]:.1f} %",
            f"{100 * float(r['overlap_with_mha'].mean()):.1f} %",
            _percent(r["within_group_overlap"]),
            _percent(r["between_group_overlap"]),
        ]
        table.append(dict(zip(_SIMILARITY_COLUMNS, values)))
    return [{name.replace("Chosen head", f"Head {head}"): value for name, value in row.items()} for row in table]


_SIMILARITY_COLUMNS = (
    "Variant",
    "Heads per KV group",
    "Output distance from MHA",
    "Chosen head: map overlap with MHA's",
    "Mean map overlap with MHA's",
    "Overlap, heads of one group",
    "Overlap, heads of different groups",
)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


# --- cached views: what the page draws, keyed by small hashable values ----------------------------------------------
@dataclass
class Chart:
    """A figure ready to draw (its dict, arrays encoded), the numbers it plots, how it was pooled, and facts for its
    caption."""

    spec: dict
    csv: PanelNumbers
    pooling: Pooling
    facts: dict = field(default_factory=dict)


def _tokens(spec: InputSpec) -> list[str] | None:
    return spec.labels() if spec.tokens is not None else None


@st.cache_data(max_entries=16, show_spinner=False)
def heads_chart(cfg: AttentionConfig, seed: int, spec: InputSpec, causal: bool, heads: range, pool: str) -> Chart:
    result = variant_result(cfg, seed, spec, causal, heads)
    fig, rows, pooling = grid_figure(result, cfg.variant, cfg.group_size, pool=pool, tokens=_tokens(spec))
    weights = result["weights"]
    facts = {"row_sum_error": float(np.abs(weights.sum(-1) - 1).max())}
    if causal:
        facts["upper_max"] = float(np.abs(weights * upper_triangle(weights.shape[1])).max())
    return Chart(fig, rows, pooling, facts)


@st.cache_data(max_entries=16, show_spinner=False)
def compare_chart(
    configs: tuple[tuple[str, AttentionConfig], ...], seed: int, spec: InputSpec, causal: bool, head: int, pool: str
) -> tuple[Chart | None, list[dict]]:
    results = comparison_result(configs, seed, spec, causal)
    table = similarity_table(results, head)
    if not any("weights" in r for r in results.values()):
        return None, table
    fig, rows, pooling = compare_figure(results, head, pool=pool, tokens=_tokens(spec))
    return Chart(fig, rows, pooling), table


@st.cache_data(max_entries=16, show_spinner=False)
def steps_chart(
    cfg: AttentionConfig, seed: int, spec: InputSpec, causal: bool, heads: range, head: int, pool: str
) -> Chart:
    """Head `head` (one of the page's heads) step by step."""
    result = variant_result(cfg, seed, spec, causal, heads)
    steps = steps_of_head(result, head, causal)
    fig, rows, pooling = steps_figure(steps, causal=causal, pool=pool, tokens=_tokens(spec), d_k=steps["q"].shape[1])
    index = result["heads"].index(head)
    facts = {
        "kv_head": result["kv_head"][index],  # the KV head the layer gave this head to read
        "weights_error": float(np.abs(steps["weights"] - result["weights"][index]).max()),
        "output_rebuild_error": result["output_rebuild_error"],
        "output_scale": result["output_scale"],
    }
    return Chart(fig, rows, pooling, facts)


@st.cache_data(max_entries=16, show_spinner=False)
def decode_chart(
    cfg: AttentionConfig, seed: int, spec: InputSpec, causal: bool, heads: range, head: int, pool: str
) -> Chart:
    """The decode step's figure; its facts carry the cache shapes, so the cache table (which depends on the sidebar's
    dtype too) is made on the page without redrawing the figure."""
    result = variant_result(cfg, seed, spec, causal, heads)
    decode = result["decode"]
    fig, rows, pooling = decode_figure(result, cfg.variant, pool=pool, tokens=_tokens(spec), highlight=head)
    facts = {
        "decode_error": float(np.abs(decode["row"] - result["weights"][:, -1]).max()),
        "cached_before": decode["cached_before"],
        "cache_shapes": decode["cache_shapes"],
    }
    return Chart(fig, rows, pooling, facts)
