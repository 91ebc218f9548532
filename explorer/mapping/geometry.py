"""Where the animated figure's bars go: the KV row (one bar per store or bundle of stores, as wide as its share of
MHA's cache per token) and the query row (one bar per head or bundle of heads), in x from 0 to 1."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attn_core import AttentionConfig
from explorer.probes.mapping import MorphFrame
from explorer.settings import Settings

from .frames import bundles, head_span, readers, store_symbol

# The two rows, in y-axis units: query heads on top, what is cached per token below; edges run between them.
Q_TOP, Q_BOTTOM, KV_TOP, KV_BOTTOM = 1.16, 0.84, 0.16, -0.16


@dataclass(frozen=True)
class StoreBar:
    """One bar of the KV row: a store (or a bundle of consecutive KV heads)."""

    label: str  # "KV head 3", "KV heads 0–3", "c<sup>KV</sup>", "k<sup>R</sup>"
    short: str  # drawn inside the bar: "kv3", "kv0–3", "c<sup>KV</sup>"
    members: list[int]  # the frame's stores it stands for (indices into frame.stores)
    x: float  # centre
    width: float  # its share of MHA's cache per token
    index: int  # position in the row
    rotary: bool = False  # MLA's shared rotary key: a sliver, named above it and drawn in the rotary colour


@dataclass(frozen=True)
class QueryBar:
    """One bar of the query row: query heads [start, stop), and the stores the probe found them reading."""

    start: int
    stop: int
    x: float  # centre
    width: float
    store_bars: list[int]  # the KV-row bars (StoreBar.index) its heads read
    stores: list[int]  # the stores (indices into frame.stores) its heads read
    lit: bool  # drawn at full opacity: no store highlighted, or one of its heads reads the highlighted one


def store_bars(frame: MorphFrame, cfg: AttentionConfig, settings: Settings) -> list[StoreBar]:
    """The KV row: one bar per store (or bundle of stores), each as wide as its share of MHA's cache per token."""
    mha_elements = 2 * settings.heads * settings.head_dim
    if frame.variant == "mla":
        widths = cfg.latent_widths
        sizes = {"c_kv": widths.kv_lora_rank, "k_rope": widths.qk_rope_head_dim}
        groups = [(store_symbol(n), store_symbol(n), [i], sizes[n]) for i, n in enumerate(frame.stores)]
    else:
        groups = [
            (
                head_span(a, b, "kv"),
                f"kv{a}" if b - a == 1 else f"kv{a}–{b - 1}",
                list(range(a, b)),
                (b - a) * 2 * cfg.head_dim,
            )
            for a, b in bundles(len(frame.stores))
        ]
    total = sum(elements for *_, elements in groups) / mha_elements
    left = 0.5 - total / 2
    geometry = []
    for index, (label, short, members, elements) in enumerate(groups):
        width = elements / mha_elements
        rotary = frame.stores[members[0]] == "k_rope"
        geometry.append(StoreBar(label, short, members, x=left + width / 2, width=width, index=index, rotary=rotary))
        left += width
    return geometry


def query_bars(frame: MorphFrame, stores: list[StoreBar], heads: int, highlight: str | None) -> list[QueryBar]:
    """The query row: one bar per head (or bundle of heads), with what the probe found its heads reading."""
    store_of = {member: s for s in stores for member in s.members}
    lit = set(readers(frame, highlight)) if highlight else None
    bars = []
    for start, stop in bundles(heads):
        read_stores = np.flatnonzero(frame.reads[:, start:stop].any(axis=1)).tolist()
        bars.append(
            QueryBar(
                start=start,
                stop=stop,
                x=(start + stop) / 2 / heads,
                width=(stop - start) / heads,
                store_bars=sorted({store_of[s].index for s in read_stores}),
                stores=read_stores,
                lit=lit is None or any(h in lit for h in range(start, stop)),
            )
        )
    return bars
