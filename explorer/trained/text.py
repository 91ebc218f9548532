"""The trained model page's words: findings computed from what is shown, and the tokens as chips."""

from __future__ import annotations

import numpy as np

from explorer.i18n import _
from explorer.probes.trained import SINK_MAJORITY, TrainedAttention


def findings(result: TrainedAttention) -> list[str]:
    heads = result.first_token_share.size
    if len(result.ids) < 3:
        return [_("Give at least three tokens to measure where heads look.")]
    sinks = int((result.first_token_share > SINK_MAJORITY).sum())
    previous = int((result.previous_token_share > SINK_MAJORITY).sum())
    best = np.unravel_index(np.nanargmax(result.previous_token_share), result.previous_token_share.shape)
    lines = [
        _(
            "**{sinks} of {n} heads** put over half of their attention on the first token (the *attention sink*: "
            "a place to park attention when nothing else matters).",
            sinks=sinks,
            n=heads,
        ),
        _(
            "**{previous} of {n} heads** put over half on the token just before (previous-token heads); the "
            "strongest is layer {layer}, head {head} at {share}.",
            previous=previous,
            n=heads,
            layer=int(best[0]),
            head=int(best[1]),
            share=f"{result.previous_token_share[best]:.2f}",
        ),
    ]
    within, across = result.js_within_group, result.js_across_groups
    if within < across:
        sentence = _(
            "Heads that share a KV head attend more alike than heads that do not: mean Jensen-Shannon distance "
            "between their rows {within}, against {across} across KV heads (0 = identical, 1 = disjoint). They read "
            "the same keys, so they can differ only through their queries."
        )
    elif within > across:
        sentence = _(
            "Heads that share a KV head attend less alike than heads that do not: mean Jensen-Shannon distance "
            "between their rows {within}, against {across} across KV heads (0 = identical, 1 = disjoint). They read "
            "the same keys, so they can differ only through their queries."
        )
    else:
        sentence = _(
            "Heads that share a KV head attend as alike as heads that do not: mean Jensen-Shannon distance between "
            "their rows {within}, against {across} across KV heads (0 = identical, 1 = disjoint). They read the "
            "same keys, so they can differ only through their queries."
        )
    lines.append(sentence.format(within=f"{within:.3f}", across=f"{across:.3f}"))  # _() left the {slots} in
    return lines


def token_chips(labels: list[str], of: str = "text") -> str:
    """The tokens as HTML chips (escaped), one element per token; `of` names what was split (data-of="text",
    "prompt", ...), so that a page showing several splits tells them apart."""
    from html import escape

    chips = "".join(
        f'<span class="token-chip" style="display:inline-block;margin:2px;padding:1px 5px;border-radius:4px;'
        f'background:rgba(74,154,107,{0.12 + 0.1 * (i % 2)});font-family:monospace;font-size:0.85rem">'
        f"{escape(label)}</span>"
        for i, label in enumerate(labels)
    )
    return f'<div class="token-chips" data-of="{escape(of)}">{chips}</div>'
