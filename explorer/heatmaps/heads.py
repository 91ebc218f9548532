"""Which heads the grid draws: pages of at most MAX_PANELS heads, whole KV groups where they fit."""

from __future__ import annotations

from typing import Literal

from explorer.i18n import _

MAX_PANELS = 16  # heads drawn (and computed) at once in the grid; the page picker moves through the rest


def head_pages(n_heads: int, group_size: int, group: int | Literal["all"]) -> list[range]:
    """The pages of at most MAX_PANELS heads the grid shows, of all heads or of one KV group. A page holds whole KV
    groups, or heads of one group when a group has more than MAX_PANELS: so each page is a layer of its own
    (AttentionConfig.head_subset), and only its heads are computed."""
    candidates = range(n_heads) if group == "all" else range(group * group_size, (group + 1) * group_size)
    if group_size <= MAX_PANELS:
        runs, per_page = [candidates], MAX_PANELS // group_size * group_size
    else:
        runs = [range(start, start + group_size) for start in range(candidates.start, candidates.stop, group_size)]
        per_page = MAX_PANELS
    return [
        range(start, min(start + per_page, run.stop)) for run in runs for start in range(run.start, run.stop, per_page)
    ]


def heads_text(heads: range) -> str:
    if len(heads) == 1:
        return _("head {head}", head=heads.start)
    return _("heads {first}–{last}", first=heads.start, last=heads.stop - 1)


def grid_columns(n_shown: int, group_size: int) -> int:
    """Columns of the grid: one KV group per row when groups have 2..8 heads, so heads that share keys sit together."""
    if 2 <= group_size <= 8:
        return min(group_size, n_shown)
    if group_size > 8:
        return min(8, n_shown)
    return min(4, n_shown)
