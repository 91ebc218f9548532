"""The trained model page's side of the app: what pages/trained.py reads, from modules with one job each.

link        the page's parameters in the link, its default text and prompt (in the page's language) and its bounds
computed    the cached probes (explorer.probes.trained) a rerun reads back: attention on a text, a written answer
text        the page's words: findings computed from what is shown, the tokens as chips
figures     every layer's heads at a glance, one head, a KV group's heads, where heads look, the cache as it writes
csv_export  each chart's numbers as CSV
"""

from .computed import attention_on, token_labels, writing_of
from .csv_export import group_rows_csv, head_csv, overview_csv, shares_csv, writing_csv
from .figures import (
    LINEAR_BLUES,
    OVERVIEW_SIDE,
    SLANTED_TOKEN_LABELS,
    UPRIGHT_TOKEN_LABELS,
    cache_growth_figure,
    group_rows_figure,
    head_figure,
    overview_figure,
    shares_figure,
    token_ticks,
)
from .link import (
    DEFAULT_PROMPT,
    DEFAULT_PROMPTS,
    DEFAULT_TEXT,
    DEFAULT_TEXTS,
    HEAD,
    LAYER,
    MAX_NEW_TOKENS,
    MAX_TEXT_CHARS,
    MAX_TOKENS,
    PROMPT,
    PROMPT_CHARS,
    QUERY,
    STEP,
    TEXT,
    default_prompt,
    default_text,
    prompt_param,
    text_param,
)
from .text import findings, token_chips

__all__ = [
    "DEFAULT_PROMPT",
    "DEFAULT_PROMPTS",
    "DEFAULT_TEXT",
    "DEFAULT_TEXTS",
    "HEAD",
    "LAYER",
    "LINEAR_BLUES",
    "MAX_NEW_TOKENS",
    "MAX_TEXT_CHARS",
    "MAX_TOKENS",
    "OVERVIEW_SIDE",
    "PROMPT",
    "PROMPT_CHARS",
    "QUERY",
    "SLANTED_TOKEN_LABELS",
    "STEP",
    "TEXT",
    "UPRIGHT_TOKEN_LABELS",
    "attention_on",
    "cache_growth_figure",
    "default_prompt",
    "default_text",
    "findings",
    "group_rows_csv",
    "group_rows_figure",
    "head_csv",
    "head_figure",
    "overview_csv",
    "overview_figure",
    "prompt_param",
    "shares_csv",
    "shares_figure",
    "text_param",
    "token_chips",
    "token_labels",
    "token_ticks",
    "writing_csv",
    "writing_of",
]
