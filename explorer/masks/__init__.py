"""The attention masks page's side of the app: what pages/masks.py reads, from modules with one job each.

link      the page's parameters in the link
computed  the cached probe (explorer.probes.masks) and each section's cached figure and CSV rows
panels    each section's panels: matrices, labels and titles from the probe's results
figures   heatmaps side by side on the shared grid (explorer/grid.py)
tables    the padding mask as a table, the CSV rows, the check lines
"""

from .computed import masks_result, section_chart
from .figures import MASK_SCALE, heatmaps_figure, two_lines
from .link import CAUSAL, CHUNK, HEAD, LONG, MEMORY, PREFILL, QUERIES, SHORT, VARIANT
from .panels import chunk_mask_panels, chunk_weight_panels, cross_panels, padding_panels
from .tables import check_line, csv_rows, mask_table

__all__ = [
    "CAUSAL",
    "CHUNK",
    "HEAD",
    "LONG",
    "MASK_SCALE",
    "MEMORY",
    "PREFILL",
    "QUERIES",
    "SHORT",
    "VARIANT",
    "check_line",
    "chunk_mask_panels",
    "chunk_weight_panels",
    "cross_panels",
    "csv_rows",
    "heatmaps_figure",
    "mask_table",
    "masks_result",
    "padding_panels",
    "section_chart",
    "two_lines",
]
