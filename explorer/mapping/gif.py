"""The head -> KV morph as an animated GIF for slides (the lesson's download), drawn on the server without a browser
from the numbers this page's figure shows: which store each head was found reading (explorer.probes.mapping), the
bars' geometry, each step's title and cache text. One GIF frame per animation step.

Pillow draws it (it comes with Streamlit): Plotly's own image export (kaleido) drives a headless Chrome, which a
hosted server without a browser does not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from PIL import Image, ImageDraw

from explorer.charts import VARIANT_COLORS
from explorer.gif import FADED, INK, PAPER, SIZE, fit, font, gif_bytes, text
from explorer.i18n import _
from explorer.probes.mapping import MorphFrame, morph_configs
from explorer.settings import Settings

from .figures import EDGE_SLOTS, PALETTE, ROPE_COLOR
from .frames import query_label
from .geometry import KV_BOTTOM, KV_TOP, Q_BOTTOM, Q_TOP, QueryBar, StoreBar, query_bars, store_bars
from .hover import cache_text, frame_title

MORPH_MS = 1100  # per step, as the mapping page's ▶ Play


def plain_lines(html: str) -> list[str]:
    """A Plotly label's lines without its markup: <br> splits, <b>…</b> and <sup>…</sup> are dropped (c<sup>KV</sup>
    is drawn "cKV": the slide's font has no raised capitals)."""
    return [re.sub(r"<[^>]+>", "", line) for line in html.split("<br>")]


@dataclass(frozen=True)
class MorphCanvas:
    """Where the mapping figure's coordinates fall on a slide: x (MHA's cache per token spans 0..1) from x0 over span
    across left..right px, y from Q_TOP down to KV_BOTTOM across top..bottom px."""

    x0: float
    span: float
    left: int = 70
    right: int = SIZE[0] - 40
    top: int = 150
    bottom: int = 520

    def px(self, x: float) -> float:
        return self.left + (x - self.x0) / self.span * (self.right - self.left)

    def py(self, y: float) -> float:
        return self.top + (Q_TOP - y) / (Q_TOP - KV_BOTTOM) * (self.bottom - self.top)


def morph_images(frames: list[MorphFrame], settings: Settings) -> list[Image.Image]:
    """One image per animation step of the mapping page's figure: query heads on top, what is cached per token
    below (as wide as its share of MHA's cache, the dashed box), a line from each head to each store it reads."""
    cfgs = dict(morph_configs(settings.d_model, settings.heads, settings.latent, settings.rope_dim))
    geometry = []
    for frame in frames:
        stores = store_bars(frame, cfgs[frame.key], settings)
        geometry.append((frame, stores, query_bars(frame, stores, settings.heads, None)))
    # one scale for every step, fitting the widest row of stores, so the bars' widths compare across the animation
    widest = max(1.0, *(sum(s.width for s in stores) for _f, stores, _q in geometry))
    canvas = MorphCanvas(x0=0.5 - widest / 2 - 0.02, span=widest + 0.04)
    images = []
    for index, (frame, stores, bars) in enumerate(geometry):
        image = Image.new("RGB", SIZE, PAPER)
        draw = ImageDraw.Draw(image)
        cfg = cfgs[frame.key]
        _morph_heading(
            draw,
            " ".join(plain_lines(frame_title(frame, cfg, settings.heads))),
            _("Step {i} of {n}", i=index + 1, n=len(geometry)),
        )
        _mha_box(draw, canvas)
        is_mla = frame.variant == "mla"
        _morph_edges(draw, canvas, bars, stores, is_mla=is_mla)  # edges first, under the bars
        _morph_stores(draw, canvas, stores, is_mla=is_mla)
        _morph_queries(draw, canvas, bars, is_mla=is_mla)
        text(draw, (canvas.left - 10, canvas.py(1.0)), "Q", 26, FADED, "rm")
        text(draw, (canvas.left - 10, canvas.py(0.0)), "KV", 26, FADED, "rm")
        for line_no, line in enumerate(plain_lines("<br>".join(cache_text(frame, cfg, settings)))):
            text(draw, (SIZE[0] / 2, 560 + line_no * 44), line, fit(draw, line, 26, SIZE[0] - 80), INK, "ma")
        images.append(image)
    return images


def _morph_heading(draw: ImageDraw.ImageDraw, title: str, step: str) -> None:
    text(draw, (40, 40), title, fit(draw, title, 34, SIZE[0] - 80))
    text(draw, (40, 92), step, 24, FADED)


def _mha_box(draw: ImageDraw.ImageDraw, canvas: MorphCanvas) -> None:
    """MHA's cache per token as a dashed box: every step is measured against it."""
    px, py = canvas.px, canvas.py
    box = (px(0), py(KV_TOP + 0.03), px(1), py(KV_BOTTOM - 0.03))
    for x in range(int(box[0]), int(box[2]), 12):
        draw.line([(x, box[1]), (min(x + 6, box[2]), box[1])], fill=FADED, width=2)
        draw.line([(x, box[3]), (min(x + 6, box[2]), box[3])], fill=FADED, width=2)
    for y in range(int(box[1]), int(box[3]), 12):
        draw.line([(box[0], y), (box[0], min(y + 6, box[3]))], fill=FADED, width=2)
        draw.line([(box[2], y), (box[2], min(y + 6, box[3]))], fill=FADED, width=2)


def _store_color(store: StoreBar, slot: int, *, is_mla: bool) -> str:
    """A store's colour as the mapping page draws it: MLA's latent in MLA's colour and its rotary key in the rotary
    colour; a KV head in its palette slot."""
    if is_mla:
        return ROPE_COLOR if store.rotary else VARIANT_COLORS["mla"]
    return PALETTE[slot % EDGE_SLOTS]


def _morph_edges(
    draw: ImageDraw.ImageDraw, canvas: MorphCanvas, bars: list[QueryBar], stores: list[StoreBar], *, is_mla: bool
) -> None:
    """A line from each query bar to each store its heads read, in the store's colour."""
    for bar in bars:
        for s_index in bar.store_bars:
            store = stores[s_index]
            color = _store_color(store, s_index, is_mla=is_mla)
            draw.line(
                [(canvas.px(bar.x), canvas.py(Q_BOTTOM)), (canvas.px(store.x), canvas.py(KV_TOP))], fill=color, width=3
            )


def _morph_stores(draw: ImageDraw.ImageDraw, canvas: MorphCanvas, stores: list[StoreBar], *, is_mla: bool) -> None:
    """The KV row: each store as wide as its share of MHA's cache, named inside when the name fits (MLA's narrow
    rotary key: above it)."""
    for store in stores:
        a, b = canvas.px(store.x - store.width / 2), canvas.px(store.x + store.width / 2)
        fill = _store_color(store, store.index, is_mla=is_mla)
        draw.rectangle([a, canvas.py(KV_TOP), max(b, a + 2), canvas.py(KV_BOTTOM)], fill=fill, outline=INK)
        (name,) = plain_lines(store.short)
        size = fit(draw, name, 22, max(int(b - a) - 6, 1))
        if draw.textlength(name, font=font(size)) <= b - a - 4:
            text(draw, ((a + b) / 2, canvas.py(0)), name, size, PAPER, "mm")
        elif store.rotary:
            text(draw, ((a + b) / 2, canvas.py(KV_TOP) - 8), name, 20, INK, "md")


def _morph_queries(draw: ImageDraw.ImageDraw, canvas: MorphCanvas, bars: list[QueryBar], *, is_mla: bool) -> None:
    """The query row: each bar in the colour of the first store it reads, its heads named inside when they fit."""
    for bar in bars:
        color = VARIANT_COLORS["mla"] if is_mla else PALETTE[(bar.store_bars or [0])[0] % EDGE_SLOTS]
        a, b = canvas.px(bar.x - bar.width * 0.45), canvas.px(bar.x + bar.width * 0.45)
        draw.rectangle([a, canvas.py(Q_TOP), b, canvas.py(Q_BOTTOM)], fill=color, outline=INK)
        label = query_label(bar.start, bar.stop)
        if draw.textlength(label, font=font(18)) <= b - a - 4:
            text(draw, ((a + b) / 2, canvas.py(1.0)), label, 18, PAPER, "mm")


def morph_gif(frames: list[MorphFrame], settings: Settings) -> bytes:
    return gif_bytes(morph_images(frames, settings), MORPH_MS)
