"""The attention heatmaps page's side of the app: what pages/heatmaps.py reads, from modules with one job each.

link        the page's parameters in the link
computed    the cached passes (explorer.probes.heatmaps) a rerun reads back
heads       which heads the grid draws, page by page
panels      one heatmap: pooled matrix, labels, hover
layout      heatmap panels as one figure on the shared grid (explorer/grid.py), and its phone layout
figures     the page's figures; csv_export their numbers; tables its tables
views       cached figures with the facts their captions state
"""

from explorer.probes.heatmaps import MAX_TEXT_CHARS, MAX_TEXT_TOKENS

from .computed import comparison_blocked, layer_config, make_input_spec
from .heads import MAX_PANELS, head_pages, heads_text
from .link import (
    CAUSAL,
    DEFAULT_TEXT,
    FIRST_HEAD,
    GROUP,
    HEAD,
    INPUT,
    POOL,
    ROPE,
    SCALE,
    SCALES,
    TEXT,
    TOKENS,
    VARIANT,
)
from .tables import cache_table
from .views import compare_chart, decode_chart, heads_chart, steps_chart

__all__ = [
    "CAUSAL",
    "DEFAULT_TEXT",
    "FIRST_HEAD",
    "GROUP",
    "HEAD",
    "INPUT",
    "MAX_PANELS",
    "MAX_TEXT_CHARS",
    "MAX_TEXT_TOKENS",
    "POOL",
    "ROPE",
    "SCALE",
    "SCALES",
    "TEXT",
    "TOKENS",
    "VARIANT",
    "cache_table",
    "compare_chart",
    "comparison_blocked",
    "decode_chart",
    "head_pages",
    "heads_chart",
    "heads_text",
    "layer_config",
    "make_input_spec",
    "steps_chart",
]
