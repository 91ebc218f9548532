"""The trade-off lab's side of the app: what pages/lab.py, the lesson and the table scripts read, from modules with one
job each. Its torch work is explorer.probes.lab (re-exported here, so `lab.window_nll_sums` reads as before); nothing
imported here needs streamlit, so benchmarks/lab_table.py and benchmarks/heal.py import the package without it.

link        the page's parameters in the link
computed    the heavy steps cached for the server (streamlit: the page imports it itself), and the live heal
stored      the stored tables as rows (LabRow, HealedRow) and the Pareto frontier
text        the page's words for the stored points: labels, short names, settings, what a reduction kept, findings
tables      the stored models (healed twins last) and what each reduction kept, as rows for st.dataframe
figures     perplexity against cache per token, and the live heal's loss
csv_export  the Pareto chart's numbers as CSV rows
"""

from explorer.probes.lab import (
    ANSWER_TOKENS,
    CALIBRATION_TOKENS,
    EVAL_TOKENS,
    LAB_POINTS,
    MLA_POINTS,
    ORIGINAL,
    POINTS_BY_KEY,
    REFERENCE_TEXT_SHA256,
    TOO_SHORT,
    USER_TEXT_MAX_TOKENS,
    WINDOW,
    Answer,
    LabPoint,
    answer,
    cache_bytes_per_token,
    convert_point,
    lab_calibration,
    perplexity_of,
    point_conversion,
    reference_text,
    shared_prefix,
    split_tokens,
    text_sha256,
    user_text_perplexity,
    window_nll_sums,
)

from .csv_export import healed_csv_rows, pareto_rows
from .figures import HEALED_VIEW_TOP, NAMES_FIT_PX, heal_loss_figure, healed_figure, label_positions, pareto_figure
from .link import ANSWER, CONTEXT, MEASURE, MODEL, PROMPT, TEXT
from .stored import (
    HEAL_TABLE_PATH,
    TABLE_PATH,
    HealedRow,
    LabRow,
    healed_as_rows,
    healed_rows,
    load_heal_table,
    load_table,
    pareto_frontier,
    settings_text,
    table_rows,
)
from .tables import kept_table, models_table
from .text import (
    KEPT_SHOWN,
    METHOD_SHOWN,
    POINT_NAMES,
    best_healed_finding,
    closest_healed,
    healed_findings,
    kept_shown,
    label_shown,
    papers_note,
    pareto_findings,
    point_name,
    settings_shown,
)

__all__ = [
    "ANSWER",
    "ANSWER_TOKENS",
    "CALIBRATION_TOKENS",
    "CONTEXT",
    "EVAL_TOKENS",
    "HEALED_VIEW_TOP",
    "HEAL_TABLE_PATH",
    "KEPT_SHOWN",
    "LAB_POINTS",
    "MEASURE",
    "METHOD_SHOWN",
    "MLA_POINTS",
    "MODEL",
    "NAMES_FIT_PX",
    "ORIGINAL",
    "POINTS_BY_KEY",
    "POINT_NAMES",
    "PROMPT",
    "REFERENCE_TEXT_SHA256",
    "TABLE_PATH",
    "TEXT",
    "TOO_SHORT",
    "USER_TEXT_MAX_TOKENS",
    "WINDOW",
    "Answer",
    "HealedRow",
    "LabPoint",
    "LabRow",
    "answer",
    "best_healed_finding",
    "cache_bytes_per_token",
    "closest_healed",
    "convert_point",
    "heal_loss_figure",
    "healed_as_rows",
    "healed_csv_rows",
    "healed_figure",
    "healed_findings",
    "healed_rows",
    "kept_shown",
    "kept_table",
    "lab_calibration",
    "label_positions",
    "label_shown",
    "load_heal_table",
    "load_table",
    "models_table",
    "papers_note",
    "pareto_figure",
    "pareto_findings",
    "pareto_frontier",
    "pareto_rows",
    "perplexity_of",
    "point_conversion",
    "point_name",
    "reference_text",
    "settings_shown",
    "settings_text",
    "shared_prefix",
    "split_tokens",
    "table_rows",
    "text_sha256",
    "user_text_perplexity",
    "window_nll_sums",
]
