"""The KV cache growing token by token as an animated GIF for slides (the lesson's download), drawn on the server
without a browser from this page's decode traces (explorer.probes.kv_cache: the shapes and bytes measured at every
step). One GIF frame per decoded token.
"""

from __future__ import annotations

from PIL import Image, ImageDraw

from explorer.charts import shape_text
from explorer.gif import FADED, INK, PAPER, SIZE, fit, gif_bytes, text
from explorer.i18n import _, format_bytes
from explorer.probes.kv_cache import DecodeTrace

from .figures import color_of
from .text import cache_names, shown_name

CACHE_MS = 350  # per decoded token


def cache_images(traces: dict[str, DecodeTrace]) -> list[Image.Image]:
    """One image per decode step (0 = after the prefill): for each cache, its tensors as a block one column per token
    held and as tall as its numbers per token, with the shapes and bytes measured at that step."""
    names = list(traces)
    any_trace = traces[names[0]]
    steps = len(any_trace.nbytes)
    most_tokens = max(max(t.tokens_held) for t in traces.values())
    per_token = {name: t.nbytes[-1] / max(t.tokens_held[-1], 1) for name, t in traces.items()}
    tallest = max(per_token.values()) or 1.0
    left, right = 40, SIZE[0] - 40
    band = (SIZE[1] - 200) / len(names)
    images = []
    for step in range(steps):
        image = Image.new("RGB", SIZE, PAPER)
        draw = ImageDraw.Draw(image)
        title = _(
            "KV cache after step {step}: {tokens} tokens held (batch {batch}, {dtype})",
            step=step,
            tokens=any_trace.tokens_held[step],
            batch=any_trace.batch,
            dtype=any_trace.storage_dtype,
        )
        text(draw, (40, 40), title, fit(draw, title, 32, SIZE[0] - 80))
        note = _("prompt {prompt} tokens, then one token at a time", prompt=any_trace.prompt_len)
        text(draw, (40, 90), note, 22, FADED)
        for row, name in enumerate(names):
            trace = traces[name]
            y = 140 + row * band
            first, second = cache_names(trace)
            shapes = trace.shapes[step]
            label = _(
                "{name}: {first} {first_shape} · {second} {second_shape} = {bytes}",
                name=shown_name(name),
                first=first,
                first_shape=shape_text(shapes[first]),
                second=second,
                second_shape=shape_text(shapes[second]),
                bytes=format_bytes(trace.nbytes[step]),
            )
            text(draw, (left, y), label, fit(draw, label, 24, right - left))
            height = max(6.0, (band - 60) * per_token[name] / tallest)
            held = trace.tokens_held[step]
            column = (right - left) / most_tokens
            draw.rectangle([left, y + 40, right, y + 40 + height], outline="#d5dae5", width=1)
            if held:
                draw.rectangle([left, y + 40, left + held * column, y + 40 + height], fill=color_of(name))
                if column >= 4:
                    for t in range(1, held):
                        x = left + t * column
                        draw.line([(x, y + 40), (x, y + 40 + height)], fill=PAPER, width=1)
                if step:  # the token this step added
                    draw.rectangle(
                        [left + (held - 1) * column, y + 40, left + held * column, y + 40 + height],
                        outline=INK,
                        width=3,
                    )
        images.append(image)
    return images


def cache_gif(traces: dict[str, DecodeTrace]) -> bytes:
    return gif_bytes(cache_images(traces), CACHE_MS)
