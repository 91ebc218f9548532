"""Each section's panels from explorer.probes.masks results: a title in the page's language, the matrix, its key and
query labels, and whether it is a mask or weights (explorer.masks.figures draws them)."""

from __future__ import annotations

import numpy as np

from explorer.i18n import _, n_
from explorer.probes.masks import ChunkResult, CrossResult, PaddingResult


def padding_panels(result: PaddingResult, head: int, short_len: int) -> list[dict]:
    allowed = result.allowed[1].astype(np.float32)  # [L, S] of the short sequence
    positions = list(range(allowed.shape[1]))
    return [
        {
            "title": _("allowed (short sequence)"),
            "z": allowed,
            "x": positions,
            "y": positions,
            "kind": "mask",
        },
        {
            "title": _("head {head} weights (short sequence)", head=head),
            "z": result.short_weights[0],
            "x": positions,
            "y": positions,
            "kind": "weight",
        },
    ]


def chunk_mask_panels(result: ChunkResult, prefill: int) -> list[dict]:
    total = result.full_mask.shape[0]
    positions = list(range(total))
    return [
        {
            "title": _("full pass: {total} × {total}", total=total),
            "z": result.full_mask.astype(np.float32),
            "x": positions,
            "y": positions,
            "kind": "mask",
        },
        {
            "title": _(
                "chunk after {prefill} cached: {rows} × {total}", prefill=prefill, rows=total - prefill, total=total
            ),
            "z": result.chunk_mask.astype(np.float32),
            "x": positions,
            "y": positions[prefill:],
            "kind": "mask",
        },
    ]


def chunk_weight_panels(result: ChunkResult, head: int, prefill: int) -> list[dict]:
    total = result.full_mask.shape[0]
    positions = list(range(total))
    return [
        {
            "title": _("head {head}, full pass", head=head),
            "z": result.full_weights[0],
            "x": positions,
            "y": positions,
            "kind": "weight",
        },
        {
            "title": _("head {head}, chunk through the cache", head=head),
            "z": result.chunk_weights[0],
            "x": positions,
            "y": positions[prefill:],
            "kind": "weight",
        },
    ]


def cross_panels(result: CrossResult, head: int) -> list[dict]:
    weights = result.weights[0]  # [L, S]
    return [
        {
            "title": _(
                "head {head}: {queries} × {keys}",
                head=head,
                queries=n_("{n} query", "{n} queries", weights.shape[0]),
                keys=n_("{n} key", "{n} keys", weights.shape[1]),
            ),
            "z": weights,
            "x": list(range(weights.shape[1])),
            "y": list(range(weights.shape[0])),
            "kind": "weight",
        },
    ]
