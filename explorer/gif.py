"""Animated GIFs for slides, drawn with Pillow on the server: a projector's canvas, the colours, fonts that hold
Chinese, text sized to fit, and the encoding. The lesson's GIFs (explorer.lesson) and the mapping page's reads GIF
(explorer.mapping.reads) draw on it; it knows no page.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from functools import cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

SIZE = (1024, 768)  # a projector's screen, in pixels
INK, FADED, PAPER = "#22252b", "#6f7a85", "#ffffff"
# Fonts that hold Chinese too (Debian's fonts-noto-cjk, which `make browser` installs; packages.txt asks a hosted
# server for it), then a Latin one; Pillow's own font last.
FONT_FILES = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc",
    "/usr/share/fonts/truetype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
)


@cache
def font_file() -> str | None:
    for path in FONT_FILES:
        if Path(path).is_file():
            return path
    if shutil.which("fc-match"):
        found = subprocess.run(
            ["fc-match", "-f", "%{file}", "sans:lang=zh-cn"], capture_output=True, text=True, check=False
        ).stdout
        if found and Path(found).is_file():
            return found
    return None


@cache
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    path = font_file()
    return ImageFont.truetype(path, size) if path else ImageFont.load_default(size)


def gif_bytes(frames: list[Image.Image], duration_ms: int) -> bytes:
    out = io.BytesIO()
    first, *rest = [frame.convert("P", palette=Image.Palette.ADAPTIVE, colors=128) for frame in frames]
    first.save(out, format="GIF", save_all=True, append_images=rest, duration=duration_ms, loop=0, optimize=False)
    return out.getvalue()


def text(
    draw: ImageDraw.ImageDraw, xy: tuple[float, float], words: str, size: int, fill: str = INK, anchor: str = "la"
) -> None:
    draw.text(xy, words, font=font(size), fill=fill, anchor=anchor)


def fit(draw: ImageDraw.ImageDraw, words: str, size: int, width: int) -> int:
    """The largest font size up to `size` at which words fit `width` pixels."""
    while size > 10 and draw.textlength(words, font=font(size)) > width:
        size -= 1
    return size
