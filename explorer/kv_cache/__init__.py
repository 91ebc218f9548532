"""The KV cache page's side of the app: what pages/kv_cache.py reads, from modules with one job each.

link        the page's parameters in the link (and the what-if's group counts for a model)
computed    the cached probes (explorer.probes.kv_cache) a rerun reads back: decode traces, whole-model rows
text        the page's words: a cache's shown name, its tensors' names, numbers as said, the presets' notes
tables      each cache at one step, the whole model's ways of caching, what fits in a budget
figures     bytes held step by step, the difference from a full recompute, whole models against a budget
csv_export  the step charts' numbers as CSV rows

The probes' bounds and memory_budget (explorer.probes.kv_cache) are re-exported for the page.
"""

from explorer.probes.kv_cache import (
    MAX_PROMPT_LEN,
    MAX_STEPS,
    MAX_TRACE_BATCH,
    MAX_TRACE_PARAMETERS,
    MAX_TRACE_WORK,
    memory_budget,
)

from .computed import cached_model_rows, cached_trace, trace_batch, trace_plan, traces_for
from .csv_export import cache_size_rows
from .figures import (
    DIFF_FLOOR,
    PITFALL_COLOR,
    cache_size_figure,
    color_of,
    diff_figure,
    log_bytes_axis,
    row_line,
    scale_figure,
    users_figure,
)
from .link import (
    GPU_GIB,
    GPUS,
    GROUPS,
    LATENT,
    MODEL,
    PROMPT,
    REPEAT,
    ROPE,
    STEP,
    STEPS,
    group_options,
    preferred_groups,
)
from .tables import fit_columns, fit_table, model_columns, model_table, step_log, step_table
from .text import PRESET_NOTES, cache_names, parameter_text, shown_name

__all__ = [
    "DIFF_FLOOR",
    "GPUS",
    "GPU_GIB",
    "GROUPS",
    "LATENT",
    "MAX_PROMPT_LEN",
    "MAX_STEPS",
    "MAX_TRACE_BATCH",
    "MAX_TRACE_PARAMETERS",
    "MAX_TRACE_WORK",
    "MODEL",
    "PITFALL_COLOR",
    "PRESET_NOTES",
    "PROMPT",
    "REPEAT",
    "ROPE",
    "STEP",
    "STEPS",
    "cache_names",
    "cache_size_figure",
    "cache_size_rows",
    "cached_model_rows",
    "cached_trace",
    "color_of",
    "diff_figure",
    "fit_columns",
    "fit_table",
    "group_options",
    "log_bytes_axis",
    "memory_budget",
    "model_columns",
    "model_table",
    "parameter_text",
    "preferred_groups",
    "row_line",
    "scale_figure",
    "shown_name",
    "step_log",
    "step_table",
    "trace_batch",
    "trace_plan",
    "traces_for",
    "users_figure",
]
