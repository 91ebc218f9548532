"""Which animation frame and which store: names, labels and bundles of heads, read from a frame."""

from __future__ import annotations

import itertools

from explorer.glossary import variant_name
from explorer.i18n import _
from explorer.probes.mapping import MorphFrame, ReadMapping
from explorer.settings import Settings

MAX_DRAWN = 32  # past this many heads (or KV heads) a row is drawn in labelled bundles of consecutive heads
# MLA's two stores as the course notes write them (LaTeX, as in explorer.glossary.SYMBOLS), so the chart and the
# slide's text name them alike; the probe and the link (map_store=c_kv) keep the code's names.
STORE_SYMBOLS = {"c_kv": r"c^{KV}", "k_rope": r"k^R"}
# A widget's plain text cannot raise letters: Unicode's modifier capitals stand in (Pillow draws "cKV": its CJK font
# has none of them).
_RAISED = str.maketrans("KVR", "ᴷⱽᴿ")


def variant_label(variant: str) -> str:
    """ "GQA · Grouped-query attention", in this run's language."""
    return f"{variant.upper()} · {variant_name(variant)}"


def frame_key(settings: Settings, variant: str) -> str:
    """The animation step that shows this variant at these settings (GQA with every or one group is MHA or MQA)."""
    if variant != "gqa":
        return variant
    if settings.groups == settings.heads:
        return "mha"
    if settings.groups == 1:
        return "mqa"
    return f"gqa:{settings.groups}"


def frame_label(frame: MorphFrame) -> str:
    if frame.variant == "gqa":
        return f"GQA {frame.n_kv_heads}"
    return frame.variant.upper()


def store_symbol(name: str, *, html: bool = True) -> str:
    """MLA's store "c_kv" as c<sup>KV</sup> (Plotly's text), or cᴷⱽ (html=False: a widget's or markdown's text)."""
    base, raised = STORE_SYMBOLS[name].replace("{", "").replace("}", "").split("^")
    return f"{base}<sup>{raised}</sup>" if html else base + raised.translate(_RAISED)


def store_label(name: str, *, html: bool = True) -> str:
    """A store's name in words: in the chart's HTML, or (html=False) in plain text for a widget or markdown."""
    if name == "none":
        return _("no store (show all)")
    if name == "c_kv":
        return _("{c_kv}: the latent", c_kv=store_symbol(name, html=html))
    if name == "k_rope":
        return _("{k_rope}: the shared rotary key", k_rope=store_symbol(name, html=html))
    return _("KV head {index}", index=name.removeprefix("kv"))


def readers(frame: MorphFrame | ReadMapping, store: str) -> list[int]:
    """Query heads whose output moved when this store was disturbed."""
    return [int(h) for h in frame.reads[frame.stores.index(store)].nonzero()[0]]


def ranges_text(indices: list[int]) -> str:
    """[0, 1, 2, 5] -> "0–2, 5"."""
    parts, start = [], None
    for i, value in enumerate(indices):
        if start is None:
            start = value
        if i + 1 == len(indices) or indices[i + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}–{value}")
            start = None
    return _(", ").join(parts)


def bundles(n: int, max_drawn: int = MAX_DRAWN) -> list[tuple[int, int]]:
    """Consecutive [start, stop) ranges covering n heads, at most max_drawn of them, of equal size where possible."""
    if n <= max_drawn:
        return [(i, i + 1) for i in range(n)]
    size = next(b for b in range(2, n + 1) if n % b == 0 and n // b <= max_drawn)
    if size > 2 * -(-n // max_drawn):  # no divisor near n / max_drawn: split as evenly as possible instead
        edges = [round(i * n / max_drawn) for i in range(max_drawn + 1)]
        return list(itertools.pairwise(edges))
    return [(i, i + size) for i in range(0, n, size)]


def query_label(start: int, stop: int) -> str:
    return f"h{start}" if stop - start == 1 else f"h{start}–{stop - 1}"


def head_span(start: int, stop: int, kind: str) -> str:
    """ "query head 3" / "query heads 0–3" (kind "query"), "KV head 1" / "KV heads 0–3" (kind "kv")."""
    if kind == "kv":
        if stop - start == 1:
            return _("KV head {index}", index=str(start))
        return _("KV heads {first}–{last}", first=str(start), last=str(stop - 1))
    if stop - start == 1:
        return _("query head {index}", index=str(start))
    return _("query heads {first}–{last}", first=str(start), last=str(stop - 1))
