"""The trade-off lab's probes and figures: the trained model converted to other attention variants, what each one's
cache costs and what it does to perplexity. Torch and plotly only (no streamlit): the page caches these, the table
script (benchmarks/lab_table.py) and the tests call them directly. Words shown on the page go through explorer.i18n
(labels and figures in the run's language; the stored table and the CSV keep English).

Texts: the evaluation text and the calibration text are two disjoint stretches of one text every Python carries,
pydoc_data.topics (the language reference behind help()), pinned by its hash since it changes between Python
versions: evaluation is its first EVAL_TOKENS tokens, calibration its last CALIBRATION_TOKENS.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import torch

from attn_core.pretrained import Calibration, Conversion, PretrainedLM, calibrate, convert_attention
from explorer.i18n import N_, _, percent
from explorer.params import Choice, Flag, Text

TABLE_PATH = Path(__file__).resolve().parents[1] / "assets" / "lab_table.json"
HEAL_TABLE_PATH = TABLE_PATH.with_name("heal_table.json")  # written by benchmarks/heal.py
# sha256 of reference_text() under CPython 3.11's pydoc_data (the text the stored table was measured on)
REFERENCE_TEXT_SHA256 = "71f2ff5d99bdc1f9c48c5c2353ad138201c5ca1c377e0226857ef8fa89b8bcee"
EVAL_TOKENS = 4096
CALIBRATION_TOKENS = 1024
WINDOW = 512  # tokens per evaluation window (non-overlapping; the first token of each is context only)
USER_TEXT_MAX_TOKENS = 256  # live perplexity on the user's own text is capped: a few seconds per model here
ANSWER_TOKENS = 24


def reference_text() -> str:
    """Every topic of pydoc_data.topics in sorted order, separated by blank lines."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name] for name in sorted(topics))


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_tokens(lm: PretrainedLM, text: str | None = None) -> tuple[list[int], list[int]]:
    """(evaluation ids, calibration ids): the text's first EVAL_TOKENS and last CALIBRATION_TOKENS tokens."""
    ids = lm.encode(reference_text() if text is None else text)
    if len(ids) < EVAL_TOKENS + CALIBRATION_TOKENS:
        raise ValueError(f"the reference text has {len(ids)} tokens; evaluation and calibration need more.")
    return ids[:EVAL_TOKENS], ids[-CALIBRATION_TOKENS:]


def lab_calibration(lm: PretrainedLM, calibration_ids: list[int]) -> Calibration:
    return calibrate(lm, lm.decode(calibration_ids), max_tokens=CALIBRATION_TOKENS, window=WINDOW)


@dataclass(frozen=True)
class LabPoint:
    """One model of the lab: the original, or a conversion with its options."""

    key: str
    label: str
    variant: str  # "original", or convert_attention's variant
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_calibration(self) -> bool:
        return self.variant == "mla" or self.options.get("method") == "pca"


ORIGINAL = LabPoint("original", N_("original GQA (3 KV heads)"), "original")
# MLA points: (d_c, d_h^R). At d_h^R 32 a full-rank latent is 3 x (32 + 64) = 288 wide, so (288, 32) is exact in its
# latent and loses only rotation (see attn_core.pretrained.convert); the others trade latent width for cache.
MLA_POINTS = ((288, 32), (256, 32), (192, 32), (128, 32), (96, 32))
LAB_POINTS: tuple[LabPoint, ...] = (
    ORIGINAL,
    LabPoint("mha", N_("MHA (KV heads repeated)"), "mha"),
    LabPoint("mqa-mean", N_("MQA, mean-pooled KV heads"), "gqa", {"n_kv_heads": 1, "method": "mean"}),
    LabPoint("mqa-pca", N_("MQA, fitted to activations"), "gqa", {"n_kv_heads": 1, "method": "pca"}),
    *(
        LabPoint(f"mla-{dc}-{dr}", f"MLA d_c {dc} + d_h^R {dr}", "mla", {"kv_lora_rank": dc, "qk_rope_head_dim": dr})
        for dc, dr in MLA_POINTS
    ),
)
POINTS_BY_KEY = {point.key: point for point in LAB_POINTS}


def point_conversion(lm: PretrainedLM, point: LabPoint, calibration: Calibration | None) -> Conversion | None:
    """The conversion of lm that point names, with what it kept (None for the original model)."""
    if point.variant == "original":
        return None
    options = dict(point.options)
    if point.needs_calibration:
        options["calibration"] = calibration
    return convert_attention(lm, point.variant, **options)


def convert_point(lm: PretrainedLM, point: LabPoint, calibration: Calibration | None) -> PretrainedLM:
    """The model that point names: lm itself, or its conversion."""
    conversion = point_conversion(lm, point, calibration)
    return lm if conversion is None else conversion.model


@torch.inference_mode()
def window_nll_sums(model: PretrainedLM, ids: list[int], window: int = WINDOW) -> list[tuple[float, int]]:
    """(sum of NLL in nats, tokens scored) per non-overlapping window: their totals give the perplexity, and any one
    window can be recomputed alone to check a stored figure."""
    sums = []
    for start in range(0, len(ids), window):
        chunk = ids[start : start + window]
        if len(chunk) >= 2:
            losses = model.token_nll(chunk, window)
            sums.append((float(losses.double().sum()), len(losses)))
    return sums


def perplexity_of(window_sums: list[tuple[float, int]]) -> float:
    return math.exp(sum(s for s, _n in window_sums) / sum(n for _s, n in window_sums))


def cache_bytes_per_token(model: PretrainedLM, dtype: torch.dtype | str = torch.float32) -> int:
    """The whole model's cache per token: per-layer bytes times layers."""
    return model.kv_cache_bytes_per_token(dtype) * model.config.n_layers


# --- the stored table -----------------------------------------------------------------------------------------------
def load_table(path: Path = TABLE_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class LabRow:
    """One model of the stored table: a conversion (or the original) and what it was measured to cost."""

    key: str
    label: str
    variant: str  # "original", "mha", "gqa" or "mla"
    options: dict[str, Any]  # convert_attention's options
    attention: dict[str, Any]  # the converted layers' AttentionConfig fields
    settings: str  # variant and options, as text
    cache_bytes_per_token: int  # whole model, float32: the model's own cache as it runs
    perplexity: float
    seconds: dict[str, float]  # "convert" and "evaluate"
    n_layers: int
    kept: dict[str, float]  # share of energy each approximation kept (empty when exact)


def table_rows(table: dict) -> list[LabRow]:
    """One row per model, cache bytes in float32 as the table stores them (the dtype the model runs and caches in:
    the same bytes the trained page measures)."""
    return [
        LabRow(
            key=row["key"],
            label=row["label"],
            variant=row["variant"],
            options=row.get("options") or {},
            attention=row["attention"],
            settings=settings_text(row["variant"], row.get("options") or {}),
            cache_bytes_per_token=row["cache_bytes_per_token"],
            perplexity=row["perplexity"],
            seconds=row["seconds"],
            n_layers=row["cache_bytes_per_token"] // row["cache_bytes_per_token_per_layer"],
            kept=row.get("kept") or {},
        )
        for row in table["rows"]
    ]


@dataclass(frozen=True)
class HealedRow:
    """A lab point after benchmarks/heal.py healed it: the same cache, a new perplexity, and what healing cost."""

    key: str
    cache_bytes_per_token: int
    perplexity_before: float
    perplexity: float
    gap_closed: float  # share of the log-perplexity gap to the original
    steps: int
    tokens: int  # tokens fed over all steps
    text_tokens: int  # distinct training tokens
    train_seconds: float


def load_heal_table(path: Path = HEAL_TABLE_PATH) -> dict | None:
    """The stored healing table, or None where it was never measured."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def healed_rows(table: dict | None) -> dict[str, HealedRow]:
    if not table:
        return {}
    return {
        row["key"]: HealedRow(
            key=row["key"],
            cache_bytes_per_token=row["cache_bytes_per_token"],
            perplexity_before=row["perplexity_before"],
            perplexity=row["perplexity_after"],
            gap_closed=row["gap_closed"],
            steps=row["recipe"]["steps_taken"],
            tokens=row["recipe"]["tokens_seen"],
            text_tokens=row["recipe"]["text_tokens"],
            train_seconds=row["seconds"]["train"],
        )
        for row in table["rows"]
    }


def settings_text(variant: str, options: dict[str, Any]) -> str:
    if not options:
        return variant
    return variant + " " + ", ".join(f"{name}={value}" for name, value in options.items())


# The page's words for what the table stores in English: option values and the names of what each reduction kept.
METHOD_SHOWN = {"mean": N_("method=mean"), "pca": N_("method=pca")}
KEPT_SHOWN = {
    "shared key": N_("shared key"),
    "shared value": N_("shared value"),
    "rotary key": N_("rotary key"),
    "latent": N_("latent"),
}


def label_shown(row: LabRow) -> str:
    """The row's label in this run's language (the table stores it in English)."""
    if row.variant == "mla":
        return _(
            "MLA, latent {d_c} + rotary key {d_r}",
            d_c=str(row.options["kv_lora_rank"]),
            d_r=str(row.options["qk_rope_head_dim"]),
        )
    point = POINTS_BY_KEY.get(row.key)
    return _(point.label) if point is not None else row.label


# Short names drawn beside the chart's points (a projector has no hover).
POINT_NAMES = {
    "original": N_("GQA (original)"),
    "mha": "MHA",
    "mqa-mean": N_("MQA mean-pooled"),
    "mqa-pca": N_("MQA fitted"),
}


def point_name(row: LabRow) -> str:
    if row.variant == "mla":
        return f"MLA {row.options['kv_lora_rank']}+{row.options['qk_rope_head_dim']}"
    return _(POINT_NAMES[row.key]) if row.key in POINT_NAMES else row.label


def settings_shown(row: LabRow) -> str:
    """settings_text in this run's language: option names are symbols, a method's name is a word."""
    if not row.options:
        return _("original") if row.variant == "original" else row.variant
    parts = [
        _(METHOD_SHOWN[value]) if name == "method" and value in METHOD_SHOWN else f"{name}={value}"
        for name, value in row.options.items()
    ]
    return row.variant + " " + ", ".join(parts)


def kept_shown(name: str) -> str:
    return _(KEPT_SHOWN[name]) if name in KEPT_SHOWN else name


def pareto_frontier(rows: list[LabRow]) -> list[LabRow]:
    """The rows for which no other row has a cache as small or smaller and a lower perplexity, by growing cache
    (of two rows with the same cache, only the lower perplexity is on it)."""
    frontier: list[LabRow] = []
    for row in sorted(rows, key=lambda r: (r.cache_bytes_per_token, r.perplexity)):
        if not frontier or row.perplexity < frontier[-1].perplexity:
            frontier.append(row)
    return frontier


def _legend_name(variant: str, group: list[LabRow]) -> str:
    """The variant's abbreviation; GQA with one KV head is MQA (the lab's "gqa" rows all have n_kv_heads=1)."""
    if variant == "gqa" and all(r.options.get("n_kv_heads") == 1 for r in group):
        return "MQA"
    return variant.upper()


def _add_healed(fig: go.Figure, rows: list[LabRow], healed: dict[str, HealedRow]) -> None:
    """Each healed point as a star, with an arrow from the conversion it was healed from (same cache, lower
    perplexity: straight down)."""
    twins = [(row, healed[row.key]) for row in rows if row.key in healed]
    if not twins:
        return
    fig.add_trace(
        go.Scatter(
            x=[twin.cache_bytes_per_token / 1024 for _row, twin in twins],
            y=[twin.perplexity for _row, twin in twins],
            mode="markers",
            marker={"symbol": "star", "size": 14, "color": "#2f8f5b", "line": {"width": 1, "color": "white"}},
            name=_("healed"),
            customdata=[
                [
                    _("{model}, healed", model=point_name(row)),
                    _("{share} of the gap closed.", share=percent(twin.gap_closed)),
                ]
                for row, twin in twins
            ],
            hovertemplate="%{customdata[0]}<br>%{y:,.2f}<br>%{customdata[1]}" + "<extra></extra>",
        )
    )
    for row, twin in twins:
        fig.add_annotation(
            x=twin.cache_bytes_per_token / 1024,
            y=math.log10(twin.perplexity),  # annotations on a log axis are placed by the log of the value
            ax=row.cache_bytes_per_token / 1024,
            ay=math.log10(row.perplexity),
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            showarrow=True,
            arrowhead=2,
            arrowsize=1.2,
            arrowwidth=1.5,
            arrowcolor="#2f8f5b",
            standoff=7,
            startstandoff=6,
            text="",
        )


NAMES_FIT_PX = (
    560  # narrower than this, the MLA points' names overlap (measured at 400 px): the legend and table name them
)


def label_positions(rows: list[LabRow]) -> dict[str, str]:
    """Where each point's name goes: MLA points, close together along the frontier, alternate above and below; the
    rest sit to the right (the rightmost to the left, inside the chart)."""
    positions = {}
    mla = sorted((r for r in rows if r.variant == "mla"), key=lambda r: r.cache_bytes_per_token)
    for index, row in enumerate(mla):
        positions[row.key] = "bottom center" if index % 2 else "top center"
    rightmost = max(rows, key=lambda r: r.cache_bytes_per_token).key
    for row in rows:
        positions.setdefault(row.key, "middle left" if row.key == rightmost else "middle right")
    return positions


def pareto_figure(
    rows: list[LabRow], *, context_length: int, chosen: str | None = None, healed: dict[str, HealedRow] | None = None
) -> dict:
    """Perplexity (log) against KV cache per token (KiB, whole model, float32), every point named beside it; the
    frontier as a line; hover adds the settings and the whole-model cache at context_length tokens."""
    frontier = pareto_frontier(rows)
    positions = label_positions(rows)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[r.cache_bytes_per_token / 1024 for r in frontier],
            y=[r.perplexity for r in frontier],
            mode="lines",
            line={"dash": "dot", "color": "#888"},
            name=_("Pareto frontier"),
            hoverinfo="skip",
        )
    )
    colors = {"original": "#4a9a6b", "mha": "#3b6ea8", "gqa": "#c4573a", "mla": "#8a5cb8"}
    for variant in ("original", "mha", "gqa", "mla"):
        group = [r for r in rows if r.variant == variant]
        if not group:
            continue
        fig.add_trace(
            go.Scatter(
                x=[r.cache_bytes_per_token / 1024 for r in group],
                y=[r.perplexity for r in group],
                mode="markers+text",
                text=[point_name(r) for r in group],
                textposition=[positions[r.key] for r in group],
                textfont={"color": colors[variant]},
                marker={
                    "size": [16 if r.key == chosen else 10 for r in group],
                    "color": colors[variant],
                    "line": {"width": [3 if r.key == chosen else 0 for r in group], "color": "black"},
                },
                customdata=[
                    [label_shown(r), settings_shown(r), r.cache_bytes_per_token * context_length / 2**20] for r in group
                ],
                hovertemplate=_(
                    "%{{customdata[0]}}<br>%{{customdata[1]}}<br>perplexity %{{y:,.2f}}<br>cache %{{x:.2f}} KiB per "
                    "token<br>%{{customdata[2]:,.1f}} MiB at {context} tokens",
                    context=context_length,
                )
                + "<extra></extra>",
                name=_("original") if variant == "original" else _legend_name(variant, group),
            )
        )
    _add_healed(fig, rows, healed or {})
    fig.update_layout(
        xaxis_title=_("KV cache per token, whole model (KiB, float32)"),
        xaxis_rangemode="tozero",
        yaxis_title=_("perplexity (log scale; lower is better)"),
        yaxis_type="log",
        yaxis_dtick=1,  # a label at each power of ten (10, 100, 1000): Plotly's own puts bare 2s and 5s between
        height=480,
        margin={"t": 30},
        legend={"orientation": "h", "y": -0.2},
    )
    return {**fig.to_dict(), "narrow": {"below": NAMES_FIT_PX, "unlabelled": True}}  # on a phone, points unnamed


def heal_loss_figure(step_losses: list[float], first_loss: float | None, seconds: float) -> go.Figure:
    """The live heal's loss, per step (log): how far the converted layers' outputs are from the original's."""
    steps = list(range(1, len(step_losses) + 1))
    fig = go.Figure(
        go.Scatter(
            x=steps,
            y=step_losses,
            mode="lines+markers",
            line={"color": "#8a5cb8"},
            marker={"size": 4},
            name=_("mean over layers"),
            hovertemplate=_("step %{{x}}: %{{y:.4f}}") + "<extra></extra>",
        )
    )
    if first_loss is not None:
        fig.add_hline(
            y=first_loss,
            line={"dash": "dot", "color": "#888"},
            annotation_text=_("before healing"),
            annotation_position="top right",
        )
    fig.update_layout(
        title=_("Healing: error of the converted layers, {seconds} s of training", seconds=f"{seconds:.0f}"),
        xaxis_title=_("training step (one window of {window} tokens)", window=WINDOW),
        yaxis_title=_("|out − original|² / |original|² (log)"),
        yaxis_type="log",
        height=360,
        showlegend=False,
    )
    return fig


# --- the same prompt, two models --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    tokens: list[str]
    text: str
    cache_bytes: int  # what the model's cache held after answering
    cache_tokens: int


def answer(model: PretrainedLM, prompt: str, max_new_tokens: int = ANSWER_TOKENS) -> Answer:
    """A greedy, cached answer to a chat prompt: the new tokens (as strings), the text, and the cache it left."""
    ids = model.chat_ids([{"role": "user", "content": prompt}])
    cache = model.new_cache()
    new_ids = model.generate(ids, max_new_tokens=max_new_tokens, cache=cache)
    return Answer(model.token_strings(new_ids), model.decode(new_ids, skip_special=True), cache.nbytes, cache.seq_len)


def shared_prefix(first: list[str], second: list[str]) -> int:
    """How many tokens two answers share before they first differ."""
    for index, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            return index
    return min(len(first), len(second))


TOO_SHORT = N_("Write at least two tokens (a few words) to measure a perplexity.")


def user_text_perplexity(model: PretrainedLM, text: str) -> tuple[float, int, bool]:
    """(perplexity, tokens scored, whether the text was cut to USER_TEXT_MAX_TOKENS)."""
    ids = model.encode(text)
    if len(ids) < 2:
        raise ValueError(TOO_SHORT)  # the page shows it through _()
    cut = len(ids) > USER_TEXT_MAX_TOKENS
    ids = ids[:USER_TEXT_MAX_TOKENS]
    losses = model.token_nll(ids, USER_TEXT_MAX_TOKENS)
    return math.exp(float(losses.double().mean())), len(losses), cut


# --- the page's own controls in the link (a shared link reopens the same view, answers included) ---------------------
CONTEXT = Choice("lab_context", (512, 1024, 2048, 4096, 8192), 8192)
MODEL = Choice("lab_model", tuple(point.key for point in LAB_POINTS if point.key != "original"), "mqa-mean")
PROMPT = Text("lab_prompt", "What is a Python list comprehension?", 300)
TEXT = Text(
    "lab_text",
    "The cache holds the keys and values of every token seen so far, so decoding never recomputes them.",
    4000,
)
ANSWER = Flag("lab_answer", False)
MEASURE = Flag("lab_measure", False)
