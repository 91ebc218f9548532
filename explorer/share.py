"""What the share box shows besides the link: a QR code a projector can show and a phone can scan, and whether the
link points at the computer that opened it (useless to anyone else)."""

from __future__ import annotations

import base64
import io
import ipaddress
from functools import lru_cache
from urllib.parse import urlsplit

import segno

# segno draws QR codes in pure Python (no image library, no native code), with the standard's error correction and
# mask selection; a hand-written encoder would have to get all of that right.
QR_SCALE = 4  # pixels per module: a long link (QR version ~15, 77 modules) stays near 330 px, sharp on a projector


@lru_cache(maxsize=64)
def qr_png(link: str) -> bytes:
    """The link as a QR code, PNG. Error correction M (15 %): a code on a projector is read from far, not damaged;
    segno raises it for free when the link leaves room in the same version."""
    buffer = io.BytesIO()
    segno.make(link, error="m", micro=False).save(buffer, kind="png", scale=QR_SCALE, border=4)
    return buffer.getvalue()


def qr_data_uri(link: str) -> str | None:
    """The QR code as a data: URI for an <img>, or None for a link longer than any QR code holds (~2,300 bytes at
    this error correction)."""
    try:
        png = qr_png(link)
    except segno.DataOverflowError:
        return None
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def points_at_this_machine(link: str) -> bool:
    """True for a link whose host is localhost or a loopback address: only the computer that opened it can follow it."""
    host = urlsplit(link).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
