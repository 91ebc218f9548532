"""The second chapter's animations for slides, drawn with Pillow as the first chapter's are (explorer/mapping/gif.py,
explorer/kv_cache/gif.py): a sliding window's cache against full layers' as the context grows (the axes page's measured curves), and a
DeepSeek-V4 layer's compressed entries appearing as tokens arrive (the core's CompressedCache after each length)."""

from __future__ import annotations

from PIL import Image, ImageDraw

from attn_core import AttentionOptions
from attn_core.compressed import CompressedCache
from attn_core.options import held_tokens
from explorer.axes.figures import token_label
from explorer.gif import FADED, INK, PAPER, SIZE, fit, gif_bytes, text
from explorer.i18n import _, format_bytes
from explorer.probes.axes import ModelCurves

WINDOW_MS = 700  # per context length
COMPRESSED_MS = 250  # per length: a few tokens arrive between frames
KIND_COLORS = {"sliding": "#c4573a", "full": "#4a9a6b"}


def window_images(model: ModelCurves, window: int, longest: int) -> list[Image.Image]:
    """One image per grid length up to `longest`: the context as a strip with the W - 1 tokens a window layer keeps
    marked (attn_core's convention, HF's: the next query brings its own key), and
    each kind of the model's layers as a bar as long as what it holds (one scale: the largest at `longest`)."""
    lengths = [t for t in model.tokens if t <= longest]
    kinds = {kind.kind: kind for kind in model.kinds}
    top = max(kind.held[model.at(longest)] for kind in model.kinds)
    left, right = 60, SIZE[0] - 60
    kept = held_tokens(AttentionOptions(window=window), window)
    images = []
    for tokens in lengths:
        i = model.at(tokens)
        image = Image.new("RGB", SIZE, PAPER)
        draw = ImageDraw.Draw(image)
        title = _("{model} at {tokens} tokens", model=model.name, tokens=token_label(tokens))
        text(draw, (40, 40), title, fit(draw, title, 34, SIZE[0] - 80))
        # the context as a strip, as long as the tokens read so far against the longest; the window at its end
        strip = left + (right - left) * tokens / longest
        draw.rectangle([left, 150, strip, 190], fill="#d5dae5", outline=INK)
        start = max(left, strip - (right - left) * kept / longest)
        draw.rectangle([start, 150, strip, 190], fill=KIND_COLORS["sliding"], outline=INK)
        note = _("the window: the last {kept} tokens a sliding layer keeps (W = {window})", kept=kept, window=window)
        text(draw, (left, 200), note, fit(draw, note, 24, right - left), FADED)
        for row, name in enumerate(("sliding", "full")):
            kind = kinds[name]
            y = 300 + row * 190
            label = (
                _("{count} sliding-window layers: {bytes}", count=kind.count, bytes=format_bytes(kind.held[i]))
                if name == "sliding"
                else _("{count} full-attention layers: {bytes}", count=kind.count, bytes=format_bytes(kind.held[i]))
            )
            text(draw, (left, y), label, fit(draw, label, 30, right - left))
            length = max(3.0, (right - left) * kind.held[i] / top)
            draw.rectangle([left, y + 50, right, y + 120], outline="#d5dae5", width=1)
            draw.rectangle([left, y + 50, left + length, y + 120], fill=KIND_COLORS[name])
        scale = _("bars on one scale: bytes held, {dtype}, one sequence", dtype="bfloat16")
        text(draw, (left, 700), scale, fit(draw, scale, 22, right - left), FADED)
        images.append(image)
    return images


def window_gif(model: ModelCurves, window: int, longest: int) -> bytes:
    return gif_bytes(window_images(model, window, longest), WINDOW_MS)


# --- DeepSeek-V4's compressed entries ------------------------------------------------------------------------------
ENTRY_COLORS = {"window": "#c4573a", "entries": "#3b6ea8", "waiting": "#d9a441"}


def compressed_images(model: str, layer: int, caches: list[CompressedCache], rate: int) -> list[Image.Image]:
    """One image per cache (each the core's cache of one V4 layer after its seq_len tokens, lengths increasing): the
    tokens read so far as a row of cells on one scale (the last cache's length), and under them what the cache holds
    for them, read from its tensors' shapes: the window's keys, the compressed entries (one per `rate` tokens) and
    the tokens still waiting for theirs."""
    longest = caches[-1].seq_len
    left, right = 60, SIZE[0] - 60
    cell = (right - left) / longest
    images = []
    for cache in caches:
        shapes, tokens = cache.shapes(), cache.seq_len
        window, entries = shapes["window"][2], shapes["entries"][2]
        waiting = shapes["waiting_kv"][1]
        image = Image.new("RGB", SIZE, PAPER)
        draw = ImageDraw.Draw(image)
        title = _("{model}, layer {layer}, after {tokens} tokens", model=model, layer=layer, tokens=tokens)
        text(draw, (40, 40), title, fit(draw, title, 34, SIZE[0] - 80))
        draw.rectangle([left, 130, left + cell * tokens, 160], fill="#d5dae5", outline=INK)
        note = _("the tokens read so far")
        text(draw, (left, 168), note, fit(draw, note, 22, right - left), FADED)
        rows = (
            (
                "window",
                [(tokens - window, tokens)],
                _("window: the last {n} tokens' keys (= values), each kept whole", n=window),
            ),
            (
                "entries",
                [(e * rate, (e + 1) * rate) for e in range(entries)],
                _("{n} compressed entries: one for every {m} tokens", n=entries, m=rate),
            ),
            (
                "waiting",
                [(tokens - waiting, tokens)] if waiting else [],
                _("{n} tokens waiting for their entry (it is made at {m})", n=waiting, m=rate),
            ),
        )
        for row, (name, spans, label) in enumerate(rows):
            y = 240 + row * 140
            text(draw, (left, y), label, fit(draw, label, 28, right - left))
            for start, end in spans:
                # a gap between entries' blocks: each is one entry, not a stretch of tokens
                gap = 3 if name == "entries" and cell * rate > 8 else 0
                draw.rectangle([left + cell * start, y + 45, left + cell * end - gap, y + 95], fill=ENTRY_COLORS[name])
        held = _("held by this layer: {bytes}, {dtype}", bytes=format_bytes(cache.nbytes), dtype="bfloat16")
        text(draw, (left, 690), held, fit(draw, held, 26, right - left), FADED)
        images.append(image)
    return images


def compressed_gif(model: str, layer: int, caches: list[CompressedCache], rate: int) -> bytes:
    return gif_bytes(compressed_images(model, layer, caches, rate), COMPRESSED_MS)
