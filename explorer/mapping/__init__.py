"""The head -> KV mapping page's side of the app: what pages/mapping.py reads, from modules with one job each.

link      the page's parameters in the link
computed  the cached probes (explorer.probes.mapping) a rerun reads back
frames    which animation frame and which store, and their labels
geometry  where the figure's bars go: the KV row and the query row
hover     the figure's words: hover HTML, the cache's bytes, each frame's title
figures   the animated figure (one frame per step, MHA -> MLA): its traces and layout
tables    the page's tables and CSV rows
fused     one fused weight for q, k and v
"""

from .computed import NAIVE_FLOP_BUDGET, NARROW_WIDTH, frames_for, fused_result, mla_ways, probe_width, shape_rows
from .figures import EDGE_SLOTS, mapping_chart, mapping_figure
from .frames import MAX_DRAWN, bundles, frame_key, ranges_text, readers, store_label, variant_label
from .fused import fused_agreement, fused_chart, fused_shape_table
from .link import MAP_STORE, MAP_VARIANT
from .tables import formula_agrees, mla_cost_rows, separation, shape_table

__all__ = [
    "EDGE_SLOTS",
    "MAP_STORE",
    "MAP_VARIANT",
    "MAX_DRAWN",
    "NAIVE_FLOP_BUDGET",
    "NARROW_WIDTH",
    "bundles",
    "formula_agrees",
    "frame_key",
    "frames_for",
    "fused_agreement",
    "fused_chart",
    "fused_result",
    "fused_shape_table",
    "mapping_chart",
    "mapping_figure",
    "mla_cost_rows",
    "mla_ways",
    "probe_width",
    "ranges_text",
    "readers",
    "separation",
    "shape_rows",
    "shape_table",
    "store_label",
    "variant_label",
]
