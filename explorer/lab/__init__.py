"""The trade-off lab's side of the app; pages/lab.py and the lesson import the modules they read. Its torch work is
explorer.probes.lab. benchmarks/lab_table.py and benchmarks/heal.py read the names below from the package (nothing
imported here needs streamlit).

link        the page's parameters in the link
computed    the heavy steps cached for the server (streamlit: the page imports it itself), and the live heal (one at a
            time, its owner's to stop, stopped when its session ends)
first_view  a new visit's first run stops after the first chart; a timer reruns the page whole (streamlit)
stored      the stored tables as rows (LabRow, HealedRow) and the Pareto frontier
text        the page's words for the stored points: labels, short names, settings, what a reduction kept, findings
tables      the stored models (healed twins last) and what each reduction kept, as rows for st.dataframe
figures     perplexity against cache per token, and the live heal's loss
csv_export  the Pareto chart's numbers as CSV rows
"""

from explorer.probes.lab import (
    CALIBRATION_TOKENS,
    EVAL_TOKENS,
    LAB_POINTS,
    POINTS_BY_KEY,
    REFERENCE_TEXT_SHA256,
    WINDOW,
    LabPoint,
    cache_bytes_per_token,
    convert_point,
    lab_calibration,
    perplexity_of,
    point_conversion,
    reference_text,
    split_tokens,
    text_sha256,
    window_nll_sums,
)

from .stored import TABLE_PATH, load_table

__all__ = [
    "CALIBRATION_TOKENS",
    "EVAL_TOKENS",
    "LAB_POINTS",
    "POINTS_BY_KEY",
    "REFERENCE_TEXT_SHA256",
    "TABLE_PATH",
    "WINDOW",
    "LabPoint",
    "cache_bytes_per_token",
    "convert_point",
    "lab_calibration",
    "load_table",
    "perplexity_of",
    "point_conversion",
    "reference_text",
    "split_tokens",
    "text_sha256",
    "window_nll_sums",
]

# The modules another page (the lesson) may import: this page's public face; the others are its own helpers.
PUBLIC = (
    "link",
    "computed",
    "stored",
    "text",
    "tables",
    "figures",
    "csv_export",
    "window_table",
    "axes_points",
    "axes_text",
)
