"""A design after MLA decoding token by token, the mapping page's animation along the token axis: the probe's cached
call (its kind's decode_reads, explorer/kinds/, on the design's real layer and cache), the animated figure (one frame per decoded
token, played with the head -> KV morph's ▶ Play and slider), its words, its CSV rows and its GIF (drawn with the
slides' Pillow helpers, explorer.gif)."""

from __future__ import annotations

import numpy as np
import streamlit as st
from PIL import Image, ImageDraw

from explorer.charts import typed_array
from explorer.gif import FADED, INK, PAPER, SIZE, fit, gif_bytes, text
from explorer.i18n import _, format_bytes, n_, sentences, speaking
from explorer.kinds.kind import ENTRY, STATE, DecodeReads, Design, Twin
from explorer.probes.heatmaps import InputSpec, make_inputs
from explorer.work import takes_turns

from .computed import probe_width
from .figures import play_buttons, step_slider
from .link import MAP_DESIGN

# The designs whose decoding the animation shows (a quantised cache reads every token, as a plain one does)
READ_DESIGNS = MAP_DESIGN.options
STEP_MS = 350  # per decoded token, as the lesson's cache animation
READ, HELD = 2.0, 1.0  # a cell's value: read by the step's token, or held by the cache and not read
READ_COLOUR, HELD_COLOUR, NEW_COLOUR = "#1f5fa8", "#c9d8ea", "#c4573a"
STRIP = (0.80, 0.90)  # the step's row (paper y), above the history of every step
HISTORY = (0.0, 0.68)
X_AXIS_PX = 80  # under the plot: the x axis's tick labels and title
SLIDER_PX = 85  # the slider: its current value, rail and steps' names
BUTTONS_PX = 40  # ▶ Play and ❚❚ Pause


def probe_design(design: Design, d_model: int) -> Design:
    """The design with its input narrowed as the morph's layers are past FULL_WIDTH_LIMIT (same heads and widths,
    the same cache entries; a wide layer takes seconds to build here)."""
    return design.narrowed(probe_width(d_model))


@st.cache_data(max_entries=16, show_spinner=False)  # the page shows a spinner in its language
@takes_turns
def decode_reads(design: Design, seed: int, steps: int, dtype: str, batch: int) -> DecodeReads:
    """`steps` tokens (seeded inputs) decoded one at a time through the design's layer, in float32; the bytes that
    `batch` such sequences' cache holds and reads in `dtype` (the sidebar's, as every page counts them)."""
    layer = design.build(seed)
    x = make_inputs(InputSpec(d_model=design.config.d_model, seed=seed, n_tokens=steps))
    return design.kind.decode_reads(design, layer, x, Twin(design, batch, dtype))


def column_labels(reads: DecodeReads) -> list[str]:
    """Each column's label: a token's position, an entry's ⟨first–last⟩ tokens, the linear state."""
    labels = []
    for column, (kind, (first, last)) in enumerate(zip(reads.kinds, reads.spans, strict=True)):
        if kind == STATE and reads.state_shape is not None:  # one matrix per head, named by its head and shape
            labels.append(f"h{column} {reads.state_shape[0]}×{reads.state_shape[1]}")
        elif kind == STATE:
            labels.append(_("state"))
        elif kind == ENTRY:
            labels.append(f"⟨{first}–{last}⟩")
        else:
            labels.append(str(first))
    return labels


def kind_runs(reads: DecodeReads) -> list[tuple[str, int, int]]:
    """Runs of columns of one kind: (kind, first column, last column)."""
    runs: list[tuple[str, int, int]] = []
    for column, kind in enumerate(reads.kinds):
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1], column)
        else:
            runs.append((kind, column, column))
    return runs


def kind_name(kind: str, count: int) -> str:
    if kind == STATE and count > 1:
        return n_("{n} head's state matrix", "{n} heads' state matrices", count)
    if kind == STATE:
        return _("the state")
    if kind == ENTRY:
        return n_("{n} compressed entry", "{n} compressed entries", count)
    return n_("{n} token", "{n} tokens", count)


def cells(reads: DecodeReads) -> np.ndarray:
    """[N, C]: READ, HELD, or NaN (not held: not yet there, or gone)."""
    return np.where(reads.read, READ, np.where(reads.held, HELD, np.nan)).astype(np.float32)


def frame_title(reads: DecodeReads, step: int) -> str:
    read, held = int(reads.read[step].sum()), int(reads.held[step].sum())
    if reads.state_shape is not None:
        return _(
            "Token {t} reads every head's {rows}×{columns} state; the cache holds {held}",
            t=step,
            rows=reads.state_shape[0],
            columns=reads.state_shape[1],
            held=format_bytes(reads.held_bytes[step]),
        )
    if reads.kinds == (STATE,):
        return _(
            "Token {t} reads the one state; the cache holds {held}",
            t=step,
            held=format_bytes(reads.held_bytes[step]),
        )
    if reads.source is not None:
        return _(
            "Token {t} reads {read} entries of layer {source}'s cache; this layer holds {bytes}",
            t=step,
            read=read,
            source=reads.source,
            bytes=format_bytes(reads.held_bytes[step]),
        )
    return _(
        "Token {t} reads {read}; the cache then holds {held} entries, {bytes}",
        t=step,
        read=read,
        held=held,
        bytes=format_bytes(reads.held_bytes[step]),
    )


def _hover(values: np.ndarray) -> list[list[str]]:
    names = {READ: _("read"), HELD: _("held, not read")}
    return [[names.get(float(v), _("not held")) for v in row] for row in values]


def reads_spec(reads: DecodeReads, active: int) -> dict:
    """The animated figure: the step's row of entries on top, every step's row below (the step outlined); ▶ Play
    runs through the steps in the browser."""
    z = cells(reads)
    labels = column_labels(reads)
    steps = reads.steps
    colour = [[0.0, HELD_COLOUR], [0.5, HELD_COLOUR], [0.5, READ_COLOUR], [1.0, READ_COLOUR]]
    common = {"type": "heatmap", "x": labels, "colorscale": colour, "zmin": HELD, "zmax": READ, "showscale": False}
    step_name = _("step")
    token_name = _("token")

    def strip(step: int) -> dict:
        row = z[step : step + 1]
        this_token = _("token {t}", t=step)
        return common | {
            "z": typed_array(row),
            "y": [step_name],
            "yaxis": "y2",
            "xgap": 1,
            "text": _hover(row),
            "hovertemplate": f"%{{x}}: %{{text}}<extra>{this_token}</extra>",
        }

    history = common | {
        "z": typed_array(z),
        "y": list(range(steps)),
        "text": _hover(z),
        "hovertemplate": f"{token_name} %{{y}} · %{{x}}: %{{text}}<extra></extra>",
        "xgap": 0 if reads.state_shape is None else 4,  # a state: one matrix per head, each column apart
    }

    def outline(step: int) -> list[dict]:
        line = {"type": "rect", "xref": "x domain", "x0": 0, "x1": 1, "line": {"color": NEW_COLOUR, "width": 2}}
        return [line | {"yref": "y", "y0": step - 0.5, "y1": step + 0.5}]

    def frame_layout(step: int) -> dict:
        return {"title": {"text": f"<b>{frame_title(reads, step)}</b>", "font": {"size": 14}}, "shapes": outline(step)}

    layout = frame_layout(active) | {
        "height": 400 + 50 + X_AXIS_PX + SLIDER_PX + BUTTONS_PX,  # a plot of 400 px
        "margin": {"t": 50, "b": X_AXIS_PX + SLIDER_PX + BUTTONS_PX, "l": 60, "r": 10},
        "xaxis": {"type": "category", "tickfont": {"size": 9}, "anchor": "y", "title": {"text": _("cache entry")}},
        "yaxis": {"domain": list(HISTORY), "autorange": "reversed", "title": {"text": _("decoded token")}},
        "yaxis2": {"domain": list(STRIP), "anchor": "x", "showticklabels": False, "fixedrange": True},
        "annotations": notes(reads),
        # In px below the plot: the x axis's title (a phone's turned tick labels push it down), the slider, then the
        # buttons on a row of their own (at paper -0.3 they lay over the slider's rail and its first steps' names)
        "updatemenus": [play_buttons(STEP_MS) | {"y": 0, "pad": {"t": X_AXIS_PX + SLIDER_PX, "r": 10}}],
        "sliders": [
            step_slider([(str(t), str(t)) for t in range(steps)], active, prefix=_("Token: "))
            | {"y": 0, "pad": {"t": X_AXIS_PX, "b": 0}}
        ],
    }
    return {
        "data": [strip(active), history],
        "layout": layout,
        "frames": [
            {"name": str(t), "data": [strip(t)], "traces": [0], "layout": frame_layout(t)} for t in range(steps)
        ],
    }


def notes(reads: DecodeReads) -> list[dict]:
    """The colours' key under the step's row; where the entries are another layer's, the mark naming it."""
    key = _("dark: read by the step's token<br>light: held, not read · blank: not held")  # two lines: a phone's width
    shown = [
        {"xref": "paper", "yref": "paper", "x": 0, "y": STRIP[0] - 0.02, "yanchor": "top", "showarrow": False}
        | {"xanchor": "left", "align": "left", "text": key, "font": {"size": 11, "color": FADED}}
    ]
    return shown if reads.source is None else [*shown, source_mark(reads.source)]


def source_mark(source: int) -> dict:
    """An arrow from the step's row up to a label naming the layer whose cache the entries are."""
    return {
        "xref": "paper",
        "yref": "paper",
        "x": 1,
        "y": STRIP[1] + 0.01,
        "xanchor": "right",
        "yanchor": "bottom",
        "ax": 0,
        "ay": -18,
        "showarrow": True,
        "arrowhead": 2,
        "arrowcolor": NEW_COLOUR,
        "text": _("→ layer {source}'s cache", source=source),
        "font": {"size": 12, "color": NEW_COLOUR},
    }


def reads_rows(reads: DecodeReads) -> list[dict]:
    """The CSV: one line per decoded token, what it read and what the cache held and read in bytes."""
    labels = column_labels(reads)
    return [
        {
            _("token"): step,
            _("read"): " ".join(label for label, on in zip(labels, reads.read[step], strict=True) if on),
            _("held"): " ".join(label for label, on in zip(labels, reads.held[step], strict=True) if on),
            _("bytes held"): reads.held_bytes[step],
            _("bytes read"): reads.read_bytes[step],
        }
        for step in range(reads.steps)
    ]


def _linear_said(reads: DecodeReads) -> str:
    last = reads.steps - 1
    return _(
        "One column, the state: read and rewritten whole at every step. The cache holds {first} after token 0 and "
        "{last} after token {t}: a fixed state, whatever the length.",
        first=format_bytes(reads.held_bytes[0]),
        last=format_bytes(reads.held_bytes[last]),
        t=last,
    )


def _dsa_said(reads: DecodeReads) -> str:
    return _(
        "Every token stays cached ({bytes} after {n} tokens), but once more than {k} are there each step reads "
        "only {k}, chosen by the indexer: the dark cells jump from row to row.",
        bytes=format_bytes(reads.held_bytes[-1]),
        n=reads.steps,
        k=int(reads.read.sum(axis=1).max()),
    )


def _compressed_said(reads: DecodeReads) -> str:
    entries = reads.kinds.count(ENTRY)
    rate = reads.spans[-1][1] - reads.spans[-1][0] + 1 if entries else 0
    return _(
        "The band is the window, sliding as a sliding layer's does; on the right, a compressed entry appears "
        "every {m} tokens and stays, read by every later token: {entries} after {n} tokens. The cache holds {bytes} "
        "then.",
        m=rate,
        entries=entries,
        n=reads.steps,
        bytes=format_bytes(reads.held_bytes[-1]),
    )


def _sliding_said(reads: DecodeReads) -> str:
    last = reads.steps - 1
    held = reads.held.sum(axis=1)
    read = reads.read.sum(axis=1)
    flat = int(np.argmax(held == held[last]))
    run = reads.read[last, last::-1]  # from the last token back: its window is the first run of reads
    window = int(run.argmin()) if not run.all() else run.size
    kept = int(read[last]) - window
    if kept:
        reading = _(
            "Each token reads at most {most} entries: its window of {window}, and the {kept} kept first tokens on "
            "the left, which stay while the window slides.",
            most=int(read.max()),
            window=window,
            kept=kept,
        )
    else:
        reading = _("Each token reads at most {most} entries: its window, sliding right.", most=int(read.max()))
    return sentences(
        reading,
        _(
            "From token {t} on the cache holds {held} entries, {bytes}, however long the text grows.",
            t=flat,
            held=int(held[last]),
            bytes=format_bytes(reads.held_bytes[last]),
        ),
        _window_less_one(reads, kept),
    )


def _window_less_one(reads: DecodeReads, kept: int) -> str:
    """Why a slid window holds W − 1 entries and a step reads W (the overview's table says it in bytes): the step's
    own token is computed by that step, not held by the cache before it. Empty while the window has not slid."""
    last = reads.steps - 1
    held, read = int(reads.held[last].sum()), int(reads.read[last].sum())
    if last < 1 or held != int(reads.held[last - 1].sum()) or read != held + 1:
        return ""
    shown = dict(
        latest=held - kept,
        kept=kept,
        read=read,
        bytes=format_bytes(reads.read_bytes[last]),
    )
    if kept:
        return _(
            "That is the {kept} kept first tokens and the last W − 1 = {latest}; each step reads {read} ({bytes}): "
            "those and its own token's key and value, which the step computes itself (no cache held them before it).",
            **shown,
        )
    return _(
        "That is the last W − 1 = {latest} tokens; each step reads {read} ({bytes}): those and its own token's key "
        "and value, which the step computes itself (no cache held them before it).",
        **shown,
    )


def _states_said(reads: DecodeReads) -> str:
    last = reads.steps - 1
    rows, columns = reads.state_shape or (0, 0)
    return _(
        "One column per head: its state, a {rows}×{columns} matrix, read and rewritten whole at every step. The "
        "cache holds {first} after token 0 and {last} after token {t}: {heads} fixed matrices (and, for Mamba-2, the "
        "convolution's last inputs), whatever the length.",
        rows=rows,
        columns=columns,
        heads=len(reads.kinds),
        first=format_bytes(reads.held_bytes[0]),
        last=format_bytes(reads.held_bytes[last]),
        t=last,
    )


def _chunked_said(reads: DecodeReads) -> str:
    held = reads.held.sum(axis=1)
    starts = [int(t) for t in np.flatnonzero(held == 1)]  # the steps that began a chunk: the cache dropped the last
    chunk = int(held.max())
    return _(
        "The cache holds the latest token's chunk only: it grows to {c} entries ({bytes}), then a new chunk begins "
        "and it drops back to 1 — at tokens {starts} here. Each token reads what is held, so a step's read rises "
        "and falls like a saw.",
        c=chunk,
        bytes=format_bytes(max(reads.held_bytes)),
        starts=", ".join(str(t) for t in starts),
    )


def _shared_topk_said(reads: DecodeReads) -> str:
    source = reads.source_read if reads.source_read is not None else np.zeros_like(reads.read)
    same = int((reads.read == source).all(axis=1).sum())
    return _(
        "This layer has no indexer: each step reads the {k} tokens the full DSA layer before it picked. Here the "
        "dark cells are that layer's picks at {same} of {n} steps. Every token stays cached ({bytes} after {n} "
        "tokens): its latent alone, with no indexer key.",
        k=int(reads.read.sum(axis=1).max()),
        same=same,
        n=reads.steps,
        bytes=format_bytes(reads.held_bytes[-1]),
    )


def _shared_said(reads: DecodeReads) -> str:
    last = reads.steps - 1
    return _(
        "This layer computes no keys or values: each token reads layer {source}'s cache, every token so far "
        "({bytes} at token {t}), and this layer holds {held}.",
        source=reads.source,
        bytes=format_bytes(reads.read_bytes[last]),
        t=last,
        held=format_bytes(reads.held_bytes[last]),
    )


# What the animation shows of each kind that decodes (explorer/kinds/: Kind.decodes), by its link value
SAID = {"sliding": _sliding_said, "dsa": _dsa_said, "compressed": _compressed_said, "linear": _linear_said}
SAID |= {"shared_topk": _shared_topk_said, "mamba2": _states_said, "lightning": _states_said}
SAID |= {"chunked": _chunked_said, "shared": _shared_said}


def reads_caption(reads: DecodeReads, design: str) -> str:
    """What the animation shows, with the numbers of these decoding steps."""
    measured = _(
        "Measured: {n} tokens decoded one at a time through the layer's own cache, each step's reads taken from its "
        "weights.",
        n=reads.steps,
    )
    if STATE in reads.kinds:
        measured = _(
            "Measured: {n} tokens decoded one at a time through the layer's own cache, each step's reads and bytes "
            "taken from the cache.",
            n=reads.steps,
        )
    dtype = _(
        "Bytes of a {dtype} cache of batch {batch}, the sidebar's settings, as every page counts them.",
        dtype=reads.dtype,
        batch=reads.batch,
    )
    return sentences(measured, SAID[design](reads), dtype)


@st.cache_data(max_entries=16, show_spinner=False)
def reads_chart(
    design: Design, seed: int, steps: int, active: int, dtype: str, batch: int, lang: str
) -> tuple[dict, list[dict]]:
    with speaking(lang):
        reads = decode_reads(design, seed, steps, dtype, batch)
        return reads_spec(reads, active), reads_rows(reads)


# --- the GIF ----------------------------------------------------------------------------------------------------------
GIF_LEFT, GIF_RIGHT, GIF_STRIP_TOP, GIF_HISTORY_TOP, GIF_BOTTOM = 60, SIZE[0] - 30, 150, 250, SIZE[1] - 40


def reads_images(reads: DecodeReads) -> list[Image.Image]:
    """One 1024x768 image per decoded token: the title, the step's row of entries, every step's row so far."""
    z = cells(reads)
    steps, columns = z.shape
    cell_w = (GIF_RIGHT - GIF_LEFT) / columns
    cell_h = (GIF_BOTTOM - GIF_HISTORY_TOP) / steps
    fill = {READ: READ_COLOUR, HELD: HELD_COLOUR}
    history = Image.new("RGB", SIZE, PAPER)  # every step's row so far, drawn once each
    history_draw = ImageDraw.Draw(history)
    for kind, first, last in kind_runs(reads):  # what the columns are, under them
        middle = GIF_LEFT + (first + last + 1) / 2 * cell_w
        text(history_draw, (middle, GIF_BOTTOM + 8), kind_name(kind, last - first + 1), 18, FADED, "ma")
    images = []
    for step in range(steps):
        y0 = GIF_HISTORY_TOP + step * cell_h
        for column in range(columns):
            x0, x1 = GIF_LEFT + column * cell_w, GIF_LEFT + (column + 1) * cell_w - 1
            value = float(z[step, column])
            if value in fill:
                history_draw.rectangle([x0, y0, x1, y0 + max(cell_h - 1, 1)], fill=fill[value])
        image = history.copy()
        draw = ImageDraw.Draw(image)
        title = frame_title(reads, step)
        text(draw, (40, 40), title, fit(draw, title, 30, SIZE[0] - 80))
        text(draw, (40, 90), _("Step {i} of {n}", i=step + 1, n=steps), 22, FADED)
        for column in range(columns):
            value = float(z[step, column])
            if value in fill:
                x0, x1 = GIF_LEFT + column * cell_w, GIF_LEFT + (column + 1) * cell_w - 1
                draw.rectangle([x0, GIF_STRIP_TOP, x1, GIF_STRIP_TOP + 60], fill=fill[value])
        draw.rectangle([GIF_LEFT - 2, y0 - 1, GIF_RIGHT + 2, y0 + cell_h], outline=NEW_COLOUR, width=2)
        text(draw, (GIF_LEFT, GIF_STRIP_TOP + 66), _("dark: read · light: held, not read"), 18, INK)
        images.append(image)
    return images


@st.cache_data(max_entries=8, show_spinner=False)
def reads_gif(design: Design, seed: int, steps: int, dtype: str, batch: int, lang: str) -> bytes:
    """The animation as a GIF with its words in `lang` (made when the download is clicked)."""
    with speaking(lang):
        return gif_bytes(reads_images(decode_reads(design, seed, steps, dtype, batch)), STEP_MS)
