"""The overview page's side of the app: what pages/overview.py reads, from modules with one job each. It has no
parameters of its own (no link module): the shared settings are all it reads.

computed    the cached probe (explorer.probes.overview): one row per variant
text        the page's words: what each variant trades, its configuration's warnings, the FLOPs chart's caption
tables      the variants side by side
figures     the cache and the work per decoded token, a bar per variant
csv_export  the plotted numbers as CSV rows
"""

from .computed import variant_rows
from .csv_export import csv_rows
from .figures import cache_bar_figure, flops_bar_figure
from .tables import summary_table
from .text import TRADE_OFFS, config_warnings, flops_caption, listing

__all__ = [
    "TRADE_OFFS",
    "cache_bar_figure",
    "config_warnings",
    "csv_rows",
    "flops_bar_figure",
    "flops_caption",
    "listing",
    "summary_table",
    "variant_rows",
]
