"""The second chapter's animation for slides: a sliding window's cache against full layers' as the context grows,
drawn with Pillow as explorer/lesson/slides.py draws the first chapter's, from the axes page's measured curves."""

from __future__ import annotations

from PIL import Image, ImageDraw

from explorer.axes.figures import token_label
from explorer.i18n import _, format_bytes
from explorer.probes.axes import ModelCurves

from .slides import FADED, INK, PAPER, SIZE, _fit, _text, gif_bytes

WINDOW_MS = 700  # per context length
KIND_COLORS = {"sliding": "#c4573a", "full": "#4a9a6b"}


def window_images(model: ModelCurves, window: int, longest: int) -> list[Image.Image]:
    """One image per grid length up to `longest`: the context as a strip with the window's last W tokens marked, and
    each kind of the model's layers as a bar as long as what it holds (one scale: the largest at `longest`)."""
    lengths = [t for t in model.tokens if t <= longest]
    kinds = {kind.kind: kind for kind in model.kinds}
    top = max(kind.held[model.at(longest)] for kind in model.kinds)
    left, right = 60, SIZE[0] - 60
    images = []
    for tokens in lengths:
        i = model.at(tokens)
        image = Image.new("RGB", SIZE, PAPER)
        draw = ImageDraw.Draw(image)
        title = _("{model} at {tokens} tokens", model=model.name, tokens=token_label(tokens))
        _text(draw, (40, 40), title, _fit(draw, title, 34, SIZE[0] - 80))
        # the context as a strip, as long as the tokens read so far against the longest; the window at its end
        strip = left + (right - left) * tokens / longest
        draw.rectangle([left, 150, strip, 190], fill="#d5dae5", outline=INK)
        start = max(left, strip - (right - left) * window / longest)
        draw.rectangle([start, 150, strip, 190], fill=KIND_COLORS["sliding"], outline=INK)
        note = _("the window: the last {window} tokens a sliding layer keeps", window=window)
        _text(draw, (left, 200), note, _fit(draw, note, 24, right - left), FADED)
        for row, name in enumerate(("sliding", "full")):
            kind = kinds[name]
            y = 300 + row * 190
            label = (
                _("{count} sliding-window layers: {bytes}", count=kind.count, bytes=format_bytes(kind.held[i]))
                if name == "sliding"
                else _("{count} full-attention layers: {bytes}", count=kind.count, bytes=format_bytes(kind.held[i]))
            )
            _text(draw, (left, y), label, _fit(draw, label, 30, right - left))
            length = max(3.0, (right - left) * kind.held[i] / top)
            draw.rectangle([left, y + 50, right, y + 120], outline="#d5dae5", width=1)
            draw.rectangle([left, y + 50, left + length, y + 120], fill=KIND_COLORS[name])
        scale = _("bars on one scale: bytes held, {dtype}, one sequence", dtype="bfloat16")
        _text(draw, (left, 700), scale, _fit(draw, scale, 22, right - left), FADED)
        images.append(image)
    return images


def window_gif(model: ModelCurves, window: int, longest: int) -> bytes:
    return gif_bytes(window_images(model, window, longest), WINDOW_MS)
