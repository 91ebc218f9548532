"""The axes page's side of the app: what pages/axes.py reads, from modules with one job each.

link      the page's parameters in the link: the length it reads at, held or read, a pasted config.json
computed  the cached probes (explorer.probes.axes): published models' curves, a pasted config's
text      the words: layer kinds' names, what is wrong with a pasted config, the captions the curves say
tables    every layer kind at the chosen length; the four axes' cuts as rows
figures   caches against context (log-log), and the four axes' cuts at one length

No csv_export: each figure function returns its own CSV rows.
"""

from explorer.probes.axes import MAX_CONFIG_CHARS, TOKEN_GRID, axis_cuts, crossings, plateaus

from .computed import cached_custom, cached_published
from .figures import axes_figure, context_figure
from .link import CONFIG, MEASURE, TOKENS
from .tables import cuts_table, formulas_markdown, kinds_columns, kinds_table
from .text import (
    SUCCESSORS,
    axis_leaders,
    crossing_sentence,
    extremes_sentence,
    kind_name,
    more_crossings,
    plateau_sentences,
    problem_source,
    problem_text,
    reading_sentence,
    sentences_of,
    successor_sentence,
)

__all__ = [
    "CONFIG",
    "MAX_CONFIG_CHARS",
    "MEASURE",
    "SUCCESSORS",
    "TOKENS",
    "TOKEN_GRID",
    "axes_figure",
    "axis_cuts",
    "axis_leaders",
    "cached_custom",
    "cached_published",
    "context_figure",
    "crossing_sentence",
    "crossings",
    "cuts_table",
    "extremes_sentence",
    "formulas_markdown",
    "kind_name",
    "kinds_columns",
    "kinds_table",
    "more_crossings",
    "plateau_sentences",
    "plateaus",
    "problem_source",
    "problem_text",
    "reading_sentence",
    "sentences_of",
    "successor_sentence",
]
